#!/usr/bin/env bash
# The main job on bundled sample data: set up (idempotent), then run the Spark pipeline on a
# sample binlog that the project generates with its own engine (no SOURCE given). It writes
# CDC tables, latest-state tables and a report (PNG chart + summary) under out/sample/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec .venv/bin/mariabinlog pipeline --out out/sample
