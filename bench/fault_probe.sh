#!/usr/bin/env bash
# Device run for the out-of-line-multiply fault in combine_pieces (NOTES: "CUZK_FQ_CALL=1 ... faults").
# 1. the index-checking combine kernel (a trap = wrong indices; an illegal address = inside the addition)
# 2. compute-sanitizer memcheck on the failing MSM (the faulting access: address, thread, space, PC)
# 3. optional: bench/gpu_kernels.py variants given as arguments (after the probe, in a fresh process)
# Usage (carry [".whl", ".cache/cuda"]): bash bench/fault_probe.sh [variant args for gpu_kernels.py]
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site CUZK_CACHE_DIR=$PWD/.cache
noise='driver.pyx\|CUDADriverError\|Exception ignored\|excepthook\|Original exception\|^ *$'
K=${PROBE_K:-accumulation_modes and 70001-21}
echo "== 1. index-checking combine (FQ_CALL=1)"
CUZK_KERNEL_DEFINES_MSM=CUZK_FQ_CALL=1,CUZK_MSM_CHECK_INDEX=1 CUZK_SYNC_LAUNCH=1 timeout 150 \
  python3 -m pytest -q -x -m gpu tests/test_gpu.py -k "$K" -p no:cacheprovider 2>&1 | grep -v "$noise" > "$OUT/check.txt"
grep -E "passed|failed|Error|error:|trap|illegal" "$OUT/check.txt" | tail -8
echo "== 2. memcheck (FQ_CALL=1)"
SAN=$(ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
echo "sanitizer: ${SAN:-none}"
if [ -n "$SAN" ]; then
  CUZK_KERNEL_DEFINES_MSM=CUZK_FQ_CALL=1 CUZK_SYNC_LAUNCH=1 timeout 300 "$SAN" --tool memcheck --print-limit 12 \
    python3 -m pytest -q -x -m gpu tests/test_gpu.py -k "$K" -p no:cacheprovider > "$OUT/memcheck.txt" 2>&1
  grep -E "Invalid|Address|at 0x|by thread|is out of bounds|nearest|passed|failed|ERROR SUMMARY" "$OUT/memcheck.txt" | head -30
fi
if [ $# -gt 0 ]; then
  echo "== 3. kernel variants"
  timeout 400 python3 bench/gpu_kernels.py --json "$OUT/gpu_kernels.json" "$@" 2>&1 | grep -v "$noise" > "$OUT/bench.txt"
  grep -E "^variant|kernels \(ms" "$OUT/bench.txt" | tail -12
fi
