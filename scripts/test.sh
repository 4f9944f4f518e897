#!/usr/bin/env bash
# Install cuzk with its test tools (pytest, hypothesis, py_ecc; snarkjs and circom2 from npm) and run
# the whole test suite. GPU tests run where CuPy sees a GPU and are skipped elsewhere.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
if [ ! -x node_modules/.bin/snarkjs ] || [ ! -x node_modules/.bin/circom2 ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
exec .venv/bin/python -m pytest -q "$@"
