#!/usr/bin/env bash
# Remake the test corpus (tests/corpus) from a real MariaDB server and the real mariadb-binlog.
# Needs mariadb-server, mariadb-client and faketime/libfaketime (scripts/setup.sh installs them).
# Arguments go to scripts/make_corpus.py: bash scripts/make-corpus.sh --only w09_xa
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
exec "$python" scripts/make_corpus.py "$@"
