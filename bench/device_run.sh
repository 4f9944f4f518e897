#!/usr/bin/env bash
# One device session: install the carried wheels, build the kernels, run the GPU tests, benchmark.
# Usage (through the device tool, carry [".whl", ".cache/cuda"]):
#   bash bench/device_run.sh [tests|bench|all] [extra args for bench/gpu_kernels.py]
set -uo pipefail
MODE=${1:-all}; shift || true
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:/tmp/site || exit 1
export CUZK_CACHE_DIR=$PWD/.cache
mkdir -p "$CUZK_CACHE_DIR/cuda"
{
  nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv
  python3 -c "import sys, numpy, numba, cupy; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__, 'cupy', cupy.__version__)"
  python3 -c "from cuzk.gpu import build; import json; print(json.dumps(build.info(), indent=1))"
} 2>&1 | tee "$OUT/env.txt"
t0=$(date +%s)
python3 - <<'PY' 2>&1 | tee "$OUT/build.txt"
import time
from cuzk.gpu import build
for m in build.MODULES:
    t = time.time(); build.load_module(m); print(f"module {m}: {time.time() - t:.1f} s")
PY
mkdir -p "$OUT/cubins"; cp "$CUZK_CACHE_DIR"/cuda/*.cubin "$OUT/cubins/" 2>/dev/null
echo "build: $(( $(date +%s) - t0 )) s"
if [ "$MODE" = tests ] || [ "$MODE" = all ]; then
  timeout 900 python3 -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider --timeout=400 2>&1 | tee "$OUT/tests.txt" | tail -40
fi
if [ "$MODE" = bench ] || [ "$MODE" = all ]; then
  python3 bench/gpu_kernels.py --json "$OUT/gpu_kernels.json" "$@" 2>&1 | tee "$OUT/bench.txt"
fi
