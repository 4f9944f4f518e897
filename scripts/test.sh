#!/usr/bin/env bash
# Install cuzk with its test tools (pytest, hypothesis, py_ecc; snarkjs and circom2 from npm) and run
# the test suite. GPU tests run where CuPy sees a GPU and are skipped elsewhere. Tests marked slow (a
# PoRep proof through the daemon with its minutes-long CPU setup, the NVRTC kernel build, whole-partition
# PoRep circuit checks and the larger of several same-kind constraint counts) are left out; run them with
# `bash scripts/test.sh -m slow` (or `-m ""` for everything).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
if [ ! -x node_modules/.bin/snarkjs ] || [ ! -x node_modules/.bin/circom2 ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
exec .venv/bin/python -m pytest -q -m "not slow" "$@"
