#!/usr/bin/env bash
# The whole test suite: set up (idempotent), then pytest over tests/.
# Extra arguments go to pytest: bash scripts/test.sh tests/codec -k varint
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -q -ra -p no:cacheprovider --durations=15 "$@"
