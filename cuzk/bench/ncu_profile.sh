#!/usr/bin/env bash
# Nsight Compute on the hot kernels (run on the device after cuzk/bench/device_run.sh has installed the carried
# wheels into /tmp/site): the NTT passes of the prover's batched iNTT + coset NTT, and the G1/G2 bucket
# accumulation. Full reports go to $OUT/ncu_*.txt; a few headline metrics are printed.
# Usage (from the repository root): [NCU_STALLS_ONLY=1] bash cuzk/bench/ncu_profile.sh [ntt-log-n] [g1-log-n] [g2-log-n]
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site CUZK_CACHE_DIR=$PWD/.cache
NCU=${NCU:-/usr/local/cuda/bin/ncu}
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section InstructionStats --section LaunchStats"
METRICS="--metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active"
if [ "${NCU_STALLS_ONLY:-0}" != 1 ]; then
  timeout 240 $NCU --kernel-name regex:"ntt_pass_r4" --launch-count 8 $SECTIONS $METRICS \
    python3 -m cuzk.bench.ntt_kernel_profile --log-n "${1:-24}" --batch 3 > "$OUT/ncu_ntt.txt" 2>&1
  timeout 200 $NCU --kernel-name regex:"g1_accumulate_even" --launch-count 1 $SECTIONS $METRICS \
    python3 -m cuzk.bench.msm_kernel_profile --log-n "${2:-22}" --modes even > "$OUT/ncu_g1.txt" 2>&1
  timeout 200 $NCU --kernel-name regex:"g2_accumulate_even" --launch-count 1 $SECTIONS $METRICS \
    python3 -m cuzk.bench.msm_kernel_profile --group 2 --log-n "${3:-20}" --modes even > "$OUT/ncu_g2.txt" 2>&1
fi
# where the warps wait, per issued instruction (a separate run: a metric name this ncu lacks fails only it)
STALLS=$(for r in barrier long_scoreboard short_scoreboard wait math_pipe_throttle no_instruction mio_throttle not_selected dispatch_stall lg_throttle selected; do printf "smsp__average_warps_issue_stalled_%s_per_issue_active.ratio," $r; done)
for k in "ntt_pass_r4:ntt_kernel_profile --log-n ${1:-24} --batch 3" "g1_accumulate_even:msm_kernel_profile --log-n ${2:-22} --modes even" "g2_accumulate_even:msm_kernel_profile --group 2 --log-n ${3:-20} --modes even"; do
  timeout 120 $NCU --kernel-name "${k%%:*}" --launch-count 1 --metrics "${STALLS%,}" python3 -m cuzk.bench.${k#*:} 2>&1 | grep -E "^  [a-z0-9_]+ \(|stalled" >> "$OUT/ncu_stalls.txt"
done
for f in "$OUT"/ncu_*.txt; do
  echo "== $f"
  grep -E "^  [a-z0-9_]+ \(|Duration|Compute \(SM\) Throughput|Memory Throughput  |Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Issue Slots Busy|bank_conflicts|wavefronts_mem_shared|pipe_fma|pipe_alu|fmaheavy|Executed Ipc A" "$f" | head -80
done
