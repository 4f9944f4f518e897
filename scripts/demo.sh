#!/usr/bin/env bash
# Install cuzk and run the main job: a demo proof (CPU backend when there is no GPU).
set -euo pipefail
CUZK_EXTRAS=test source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
exec .venv/bin/cuzk demo "$@"
