#!/usr/bin/env bash
# The main job on sample data: set up (idempotent), then run mariabinlog over a real
# binlog from the shared corpus that sits beside the repository.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh

sample="../shared/corpus/binlogs/w01_basic_row/mysql-bin.000001"
if [ ! -f "$sample" ]; then
  echo "run-sample: $sample not found (the shared corpus belongs beside the repository)" >&2
  exit 1
fi

if .venv/bin/mariabinlog dump --help >/dev/null 2>&1; then
  exec .venv/bin/mariabinlog dump "$sample"
fi
echo "run-sample: this build has no 'dump' command yet, so only the version is shown" >&2
exec .venv/bin/mariabinlog --version
