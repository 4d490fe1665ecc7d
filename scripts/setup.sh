#!/usr/bin/env bash
# Idempotent set-up of everything the project needs, on Debian 12 (or a close relative):
#   * system packages: MariaDB server and client (the tests start private servers from
#     /usr/sbin/mariadbd; the Debian service itself is never needed), mariadb-backup (the backups
#     that `mariabinlog restore` starts from, made and restored by its tests), mariadb-test-data (MariaDB's
#     own test binlogs, read by version tests), faketime/libfaketime (scripts/make-corpus.sh runs
#     the recording server under a fixed clock) and a JDK for Spark;
#   * .venv in the repository, with the project installed editable from the lock file.
# Fast when all is there: apt runs only when a program is missing, pip only when
# pyproject.toml or requirements/test.txt changed since the last install.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

log() { printf 'setup: %s\n' "$*" >&2; }

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }

java_ok() {
  # Spark 4 needs Java 17 or newer.
  command -v java >/dev/null 2>&1 &&
    java -version 2>&1 | head -n 1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])'
}

#: Debian packages without a program of their own to look for: checked with dpkg.
DATA_PACKAGES=(libfaketime mariadb-test-data)

packages_present() {
  local package
  for package in "${DATA_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || return 1
  done
}

system_ready() {
  have mariadbd && have mariadb-install-db && have mariadb && have mariadb-binlog && have mariadb-backup &&
    have faketime &&
    java_ok && packages_present
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_system_packages() {
  log "installing mariadb-server, mariadb-client, mariadb-backup, mariadb-test-data, faketime, libfaketime, default-jdk-headless with apt-get"
  # Keep the Debian mariadb service from starting during the install: the tests run
  # private servers, and a container has no init system to start it anyway.
  local policy=/usr/sbin/policy-rc.d added_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
    as_root chmod 755 "$policy"
    added_policy=1
  fi
  local status=0
  {
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 update &&
      as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=300 \
        install --no-install-recommends mariadb-server mariadb-client mariadb-backup mariadb-test-data \
        faketime libfaketime default-jdk-headless
  } </dev/null || status=$?
  if [ -n "$added_policy" ]; then as_root rm -f "$policy"; fi
  return "$status"
}

find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.11 python3 python; do
    [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

if system_ready; then
  log "system packages present"
else
  install_system_packages
  system_ready || { log "MariaDB programs (mariadb-backup too), faketime, mariadb-test-data or Java 17+ still missing after apt-get"; exit 1; }
fi

python="$(find_python)" || { log "Python 3.11 or newer not found (set PYTHON=/path/to/python3)"; exit 1; }
venv="$repo/.venv"
stamp="$venv/.setup-stamp"
# setup.py and the C sources and headers too: the editable install compiles the C fast paths in place.
wanted="$(cat pyproject.toml requirements/test.txt setup.py $(find src -name "*.c" -o -name "*.h" | sort) | sha256sum | cut -d' ' -f1)"

# The package's bytecode compiled ahead, as pip does when it installs a wheel: every command then
# starts without compiling ~100 modules (0.3-0.4 s a process), also where PYTHONDONTWRITEBYTECODE
# keeps Python from writing it. Cheap when nothing changed (compileall only looks at mtimes).
compile_bytecode() { "$venv/bin/python" -m compileall -q -j 0 src >/dev/null; }

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] && "$venv/bin/python" -c '' 2>/dev/null; then
  compile_bytecode
  log ".venv up to date"
  exit 0
fi

if ! "$venv/bin/python" -c '' 2>/dev/null; then
  log "creating .venv with $python"
  if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
    # Debian's own python3 keeps venv's pip bootstrap in a separate package.
    log "installing python3-venv for $python"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=300 \
      install --no-install-recommends python3-venv </dev/null
  fi
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi
log "installing the project and its test, spark and fuzz extras into .venv (pinned by requirements/test.txt)"
# A compiled module left from an earlier build would hide a build that now fails (the
# extensions are optional for users without a compiler): start from none.
find src -name "*.so" -delete
"$venv/bin/python" -m pip install --disable-pip-version-check -q --use-pep517 \
  -c requirements/test.txt -e '.[test,spark,fuzz]' </dev/null
if command -v cc >/dev/null 2>&1 &&
  ! "$venv/bin/python" -c 'import mariabinlog.codec.rows._rowsfast, mariabinlog.spark._arrowfast, mariabinlog.codec._framefast, mariabinlog.tools.printer._dumpfast' 2>/dev/null; then
  # With a compiler at hand the C fast paths must build: the tests compare them with the pure ones.
  log "the C extensions did not compile; see: $venv/bin/pip install -v -e . (needs the Python headers)"
  exit 1
fi
compile_bytecode
printf '%s\n' "$wanted" >"$stamp"
log "done"
