#!/usr/bin/env bash
# One device session: install the carried wheels, build the kernels, run the GPU tests, benchmark.
# Usage (through the device tool, carry [".whl", ".cache/cuda"]):
#   bash cuzk/bench/device_run.sh MODES [extra args for cuzk.bench.gpu_kernels or cuzk.bench.gpu_prove]
# MODES: a comma-separated list of tests, vectors, bench, prove, curves, curves_short, synth, porep, batch, tune, mulchain,
#   or "all" (= tests,bench)
#   porep: a PoRep partition from its vanilla proof, in process, GPU key in memory (issue 18's device row:
#   8 MiB sector, POREP_CHALLENGES challenges, default 68 = ~130M constraints; needs an H200's memory)
#   synth: the synthesis benchmarks of Python circuits on the host's cores (BENCHMARKS 6; no GPU)
#   curves_short: the curves rows cut to fit ~4 minutes (G1 2^20..2^24, G2 2^20..2^22, NTT 2^20..2^24,
#   a 2^22 dense proof per curve)
#   curves: the kernel rows of both curves side by side (G1 2^20..2^26, G2 2^20..2^24, NTT 2^20..2^26,
#   --plain) and a 2^22 dense proof on each curve plus BLS12-381 porep 2^26 (issue 16's device rows)
# Kernels come from the carried cache (scripts/precompile_kernels.py builds it without a GPU); a missing
# build (e.g. one a CUZK_* switch in the environment asks for) is compiled here, at the cost of device time.
# Run from the repository root.
set -uo pipefail
MODE=${1:-all}; shift || true
[ "$MODE" = all ] && MODE=tests,bench
has() { [[ ",$MODE," == *",$1,"* ]]; }
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:/tmp/site || exit 1
export CUZK_CACHE_DIR=$PWD/.cache
mkdir -p "$CUZK_CACHE_DIR/cuda"
{
  nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv
  python3 -c "import sys, numpy, numba, cupy; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__, 'cupy', cupy.__version__)"
  python3 -c "from cuzk.backends.gpu import build; import json; print(json.dumps(build.info(), indent=1))"
} 2>&1 | tee "$OUT/env.txt"
t0=$(date +%s)
ls "$CUZK_CACHE_DIR"/cuda > /tmp/cubins_before
python3 - <<'PY' 2>&1 | tee "$OUT/build.txt"
import time
import cuzk.bench.kernels
from cuzk.backends.gpu import build, config
from cuzk.curves import names
for curve in names():
    for m in build.MODULES + cuzk.bench.kernels.MODULES:
        t = time.time(); build.load_module(m, config.current().defines(m), curve); print(f"module {m} {curve}: {time.time() - t:.1f} s")
# the BN254 CPU library's numba kernels compile here on first use (the reference side of the GPU tests)
t = time.time()
from cuzk.curves import get
import numpy as np
C = get("bn254"); lib = C.lib
g = lib.G1Point()
raw = lib.to_lem(1, [g * lib.Scalar(3), g])
s = np.array([[5, 0, 0, 0], [7, 0, 0, 0]], dtype=np.uint64)
assert lib.msm(1, lib.load_bases(1, raw, 2, "smoke"), s) == g * lib.Scalar(22)
assert lib.GT.pairing_check([g, -g], [lib.G2Point(), lib.G2Point()])
print(f"BN254 CPU library ready: {time.time() - t:.1f} s")
PY
# bring back only cubins compiled here (the carried ones are already at home)
mkdir -p "$OUT/cubins"
for f in $(ls "$CUZK_CACHE_DIR"/cuda | grep -vxF -f /tmp/cubins_before); do cp "$CUZK_CACHE_DIR/cuda/$f" "$OUT/cubins/"; done
echo "build: $(( $(date +%s) - t0 )) s"
if has tests; then
  timeout 900 python3 -m pytest -q -m gpu tests/test_gpu.py -k "${TESTS_K:-}" -p no:cacheprovider --timeout=400 2>&1 | tee "$OUT/tests.txt" | tail -40
fi
if has bench; then
  python3 -m cuzk.bench.gpu_kernels --json "$OUT/gpu_kernels.json" "$@" 2>&1 | tee "$OUT/bench.txt"
fi
if has vectors; then
  python3 -m cuzk.bench.make_gpu_vectors /tmp/vectors 2>&1 | tee "$OUT/vectors.txt" && tar -C /tmp -czf "$OUT/vectors.tgz" vectors
fi
if has curves; then
  for c in bls12_381 bn254; do
    timeout 240 python3 -m cuzk.bench.gpu_kernels --curve $c --plain --g1 20 26 --g1-bits 26 26 --g2 20 24 --ntt 20 26 \
      --cpu --upload --reps 5 --json "$OUT/kernels_$c.json" 2>&1 | tee "$OUT/kernels_$c.txt" | tail -5
  done
  timeout 150 python3 -m cuzk.bench.gpu_prove --curve bn254 --cases dense:22 --cpu-cases --b-g2 gpu --reps 3 \
    --json "$OUT/prove_bn254.json" 2>&1 | tee "$OUT/prove_bn254.txt" | tail -4
  timeout 240 python3 -m cuzk.bench.gpu_prove --curve bls12_381 --cases dense:22 porep:26 --cpu-cases --b-g2 gpu --reps 3 \
    --json "$OUT/prove_bls.json" 2>&1 | tee "$OUT/prove_bls.txt" | tail -6
fi
if has curves_short; then
  for c in bls12_381 bn254; do
    timeout 75 python3 -m cuzk.bench.gpu_kernels --curve $c --plain --g1 20 24 --g1-bits 24 24 --g2 20 22 --ntt 20 24 \
      --cpu --upload --reps 5 --json "$OUT/kernels_$c.json" 2>&1 | tee "$OUT/kernels_$c.txt" | tail -5
  done
  for c in bn254 bls12_381; do
    timeout 55 python3 -m cuzk.bench.gpu_prove --curve $c --cases dense:22 --cpu-cases --b-g2 gpu --reps 3 \
      --json "$OUT/prove_$c.json" 2>&1 | tee "$OUT/prove_$c.txt" | tail -4
  done
fi
if has synth; then
  # the timed witness of each case in 16 parts by 16 worker processes (cuzk-bench synth --processes; first pool
  # witness timed apart, checked bit-identical to the single-process one); per core = constraints / (witness +
  # mat-vec) / max(processes, threads). Estimated on this host: 2^20 pair ~85 s (SHA-256 ~50, Poseidon ~35:
  # recording, numba compilation, 16 workers spawned, each tracing the circuit's allocations once), SHA-256 2^24
  # ~170 s (recording ~90 s, the workers' allocation trace ~45 s). No traced run (peak Python MiB reads 0).
  timeout 120 python3 -m cuzk.bench.synth_suite --sizes 20 --processes 16 --repeat 2 --no-trace --out "$OUT/synth" 2>&1 | tee "$OUT/synth.txt" | tail -2
  timeout 210 python3 -m cuzk.bench.synth_suite --sizes 24 --kinds sha256 --processes 16 --repeat 1 --no-trace --out "$OUT/synth" 2>&1 | tee "$OUT/synth24.txt" | tail -1
fi
if has prove; then
  python3 -m cuzk.bench.gpu_prove --json "$OUT/gpu_prove.json" "$@" 2>&1 | tee "$OUT/prove.txt"
fi
if has porep; then
  timeout "${POREP_TIMEOUT:-560}" python3 -m cuzk.bench.porep_e2e --in-process --backend gpu --sector-size 8MiB \
    --challenges "${POREP_CHALLENGES:-68}" --reps "${POREP_REPS:-2}" --witness-processes "${POREP_WP:-0}" --json "$OUT/porep_e2e.json" 2>&1 | tee "$OUT/porep_e2e.txt" | tail -12
fi
if has batch; then
  # issue 20 item 4: several proofs of one circuit in one GPU pass, throughput per batch size (in process)
  timeout "${BATCH_TIMEOUT:-300}" python3 -m cuzk.bench.main batch --dev "${BATCH_DEV:-porep:24}" --sizes ${BATCH_SIZES:-1 2 3} \
    --reps "${BATCH_REPS:-4}" --json "$OUT/batch.json" 2>&1 | tee "$OUT/batch.txt" | tail -12
fi
if has mulchain; then
  # issue 20: the carry-chain multiply forms side by side (NOTES.md, 2026-12-06 fourth session: form 2, ptxas
  # -O1, the square as the multiply), each checked against the CPU first; the NTT rows carry gpu.ntt_fused's
  # row; then the GPU tests with the fullest candidate in every module that does field arithmetic (TESTS_K).
  # Precompile first: scripts/precompile_kernels.py --curve bls12_381 bn254 --modules msm probe ntt fr_ops
  #   --variant CUZK_MUL_CHAIN=2 --variant CUZK_MUL_CHAIN=2,CUZK_PTXAS_O=1 --variant CUZK_MUL_CHAIN=2,CUZK_PTXAS_O=1,CUZK_SQR_MUL=1
  timeout "${MULCHAIN_TIMEOUT:-240}" python3 -m cuzk.bench.gpu_kernels --variants "base:" "c2:CUZK_MUL_CHAIN=2" \
    "c2o1:CUZK_MUL_CHAIN=2,CUZK_PTXAS_O=1" "c2o1s:CUZK_MUL_CHAIN=2,CUZK_PTXAS_O=1,CUZK_SQR_MUL=1" --variant-log 24 \
    --g1 1 0 --g1-bits 1 0 --g2 1 0 --ntt 20 26 --ntt-variant CUZK_MUL_CHAIN=2,CUZK_PTXAS_O=1 --cpu --upload --reps 5 \
    --json "$OUT/mulchain.json" 2>&1 | tee "$OUT/mulchain.txt" | grep -E "^variant|^using|NTT|iNTT|same"
  D=CUZK_MUL_CHAIN=2,CUZK_PTXAS_O=1,CUZK_SQR_MUL=1
  CUZK_KERNEL_DEFINES_NTT=$D CUZK_KERNEL_DEFINES_FR_OPS=$D CUZK_KERNEL_DEFINES_MSM=$D timeout 400 python3 -m pytest -q -m gpu \
    tests/test_gpu.py -k "${TESTS_K:-ntt or msm or prover}" -p no:cacheprovider --timeout=300 2>&1 | tee "$OUT/tests_mulchain.txt" | tail -8
fi
if has tune; then
  # issue 22's device tune: "$@" are `cuzk tune` arguments (e.g. --dev porep:24 --runs 5 --switch ...); dev keys
  # are made on the GPU; register caps other than the carried cubins' compile here (device time)
  timeout "${TUNE_TIMEOUT:-540}" python3 -m cuzk tune --backend gpu --json "$OUT/tune.json" \
    --markdown "$OUT/tune.md" --toml "$OUT/tune.toml" "$@" 2>&1 | tee "$OUT/tune.txt" | grep -v '^|' | tail -30
  cat "$OUT/tune.md" | grep -v 'prover\.' | tail -60
fi
