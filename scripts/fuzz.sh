#!/usr/bin/env bash
# A fuzzing campaign over the decoders (fuzz/README.md): each target runs under atheris
# (libFuzzer) for --minutes N (or --runs N executions), one after the other or --jobs J at a
# time, and a table of executions, exec/s, coverage and findings is printed at the end.
#
#   bash scripts/fuzz.sh --minutes 5                 # every target, 5 minutes each
#   bash scripts/fuzz.sh --runs 1000000 legacy ibb   # two targets, a million executions each
#   bash scripts/fuzz.sh --list
#
# With --sanitize (the default where clang is installed or installable) the C fast paths
# (codec/rows/_rowsfast.c, spark/_arrowfast.c, tools/printer/_dumpfast.c) are built with ASan + UBSan and libFuzzer's coverage
# into build/fuzz-native, and every target runs with atheris' ASan runtime preloaded, which
# also lets -malloc_limit_mb=64 catch any single allocation over 64 MiB.  --no-sanitize runs
# the package's own build (then -rss_limit_mb is the memory bound).
#
# The last column sums the executions of every run on the code the target fuzzes now
# (fuzz/ledger.py; python -m fuzz.ledger totals OUT): a million executions of a slow target
# may take several runs, each resuming from the corpus the last one grew.  The totals also
# count the committed record, fuzz/ledger.tsv (python -m fuzz.ledger keep OUT adds a campaign's runs).
#
# Working corpora, logs and findings go to --out (default /tmp/mariabinlog-fuzz); a finding
# (crash-*, timeout-*, oom-*) is an input to minimise and commit under fuzz/crashes/TARGET/
# with its fix.  Campaigns share the machine: they run under nice -n 19.  Exit status 1 when
# a target found something.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

minutes=""
runs=""
jobs=1
out=/tmp/mariabinlog-fuzz
sanitize=auto
targets=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --sanitize) sanitize=yes; shift ;;
    --no-sanitize) sanitize=no; shift ;;
    --list) list=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

bash scripts/setup.sh
py="$repo/.venv/bin/python"
all_targets() { "$py" -c 'import sys; sys.path.insert(0, "."); from fuzz.targets import TARGETS; print(" ".join(TARGETS))'; }
if [ -n "${list:-}" ]; then
  "$py" -c 'import sys; sys.path.insert(0, "."); from fuzz.targets import TARGETS
for t in TARGETS.values(): print(f"{t.name:12} {t.doc}")'
  exit 0
fi
[ ${#targets[@]} -gt 0 ] || read -r -a targets <<<"$(all_targets)"
if [ -z "$minutes" ] && [ -z "$runs" ]; then minutes=1; fi

native="$repo/build/fuzz-native"
build_native() {
  # Each C extension of the package with ASan, UBSan (every finding fatal) and libFuzzer's edge
  # coverage, as <dotted module name><suffix> (fuzz/run.py loads them from there); linked
  # without the runtime, which the preloaded atheris library provides.
  local inc ext flags source module
  inc="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  ext="$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
  flags=(-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1 -fPIC)
  rm -rf "$native"
  mkdir -p "$native"
  while IFS= read -r source; do
    module="${source#src/}"
    module="${module%.c}"
    module="${module//\//.}"
    clang "${flags[@]}" -I"$inc" -c "$source" -o "$native/$module.o"
    clang -shared "$native/$module.o" -o "$native/$module$ext"
  done < <(find src/mariabinlog -name '_*.c' | sort)
}

env_run=()
if [ "$sanitize" != no ]; then
  if ! command -v clang >/dev/null 2>&1 && [ "$sanitize" = yes ]; then
    echo "fuzz.sh: installing clang with apt-get" >&2
    if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=300 \
      install --no-install-recommends clang </dev/null >/dev/null
  fi
  if command -v clang >/dev/null 2>&1; then
    build_native
    runtime="$("$py" -c 'import atheris; print(atheris.path())')/asan_with_fuzzer.so"
    # Python itself leaks by design at exit; allocator mismatches are Python's, not ours.
    # No allocation stacks (malloc_context_size=0) and a small quarantine: unwinding the
    # interpreter's stack at every malloc made targets 20 times slower.  A finding's report
    # still shows where the bad access happened; rerun it with malloc_context_size=30 for more.
    env_run=(env "LD_PRELOAD=$runtime" "MARIABINLOG_FUZZ_NATIVE=$native"
      "ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:alloc_dealloc_mismatch=0:malloc_context_size=0:quarantine_size_mb=16"
      "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
    sanitize=yes
  else
    echo "fuzz.sh: no clang: the C fast paths run without sanitizers (install clang for them)" >&2
    sanitize=no
  fi
fi

mkdir -p "$out/findings" "$out/logs"
started="$(date +%s)"  # the table lists the findings of this run, not those left from earlier ones
limit=()
if [ -n "$runs" ]; then limit+=("-runs=$runs"); fi
if [ -n "$minutes" ]; then limit+=("-max_total_time=$((minutes * 60))"); fi

native_targets=" $("$py" -c 'import sys; sys.path.insert(0, "."); from fuzz.targets import TARGETS
print(" ".join(t.name for t in TARGETS.values() if t.native))') "

run_target() {
  # Targets that reach the C fast paths run under the sanitizers (and -malloc_limit_mb); the
  # others without (2-3 times faster), their memory bound checked by replaying the corpus
  # they grew under tracemalloc afterwards (fuzz/replay.py), as the suite does for seeds.
  local t="$1" runner=()
  case "$native_targets" in *" $t "*) runner=("${env_run[@]}") ;; esac
  mkdir -p "$out/corpus/$t"
  local status=0 code
  code="$("$py" -m fuzz.ledger id "$t")"  # the code as the run finds it, for the ledger
  nice -n 19 "${runner[@]}" "$py" -m fuzz.run "$t" "${limit[@]}" -print_final_stats=1 -timeout=30 \
    -rss_limit_mb=2048 -malloc_limit_mb=64 -artifact_prefix="$out/findings/$t-" \
    "${extra[@]}" "$out/corpus/$t" "fuzz/seeds/$t" >"$out/$t.log" 2>&1 || status=$?
  nice -n 19 "$py" -m fuzz.replay "$t" "$out/corpus/$t" >"$out/$t.replay" 2>&1 || status=${status/#0/1}
  echo "$status" >"$out/$t.status"
  "$py" -m fuzz.ledger record "$out" "$t" "$code" "$out/$t.log" "$status"
  local stamp
  stamp="$(date +%Y%m%d-%H%M%S)"
  cp "$out/$t.log" "$out/logs/$t.$stamp.log"
  cp "$out/$t.replay" "$out/logs/$t.$stamp.replay"
}

echo "fuzz.sh: ${#targets[@]} target(s), ${minutes:+$minutes min}${runs:+ $runs runs} each, sanitizers: $sanitize, logs in $out" >&2
running=0
for t in "${targets[@]}"; do
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait || true

"$py" - "$out" "$started" "${targets[@]}" <<'EOF'
import glob, os, re, sys
from pathlib import Path
out, started, targets = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows, failed = [], False
sys.path.insert(0, ".")
from fuzz.ledger import totals
ledger = totals(Path(out), targets)
print(f"| target | executions | exec/s | coverage (edges) | features | corpus | corpus peak | findings | executions on this code, all runs |")
print(f"| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
for t in targets:
    log = open(os.path.join(out, f"{t}.log"), errors="replace").read()
    stat = dict(re.findall(r"stat::(\w+):\s+(\d+)", log))
    cov = re.findall(r"cov: (\d+) ft: (\d+) corp: (\d+)", log)
    cov_edges, features, corpus = cov[-1] if cov else ("?", "?", "?")
    findings = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out, "findings", f"{t}-*"))
                      if os.path.getmtime(p) >= started)
    status = open(os.path.join(out, f"{t}.status")).read().strip()
    if status != "0" or findings:
        failed = True
    replay = open(os.path.join(out, f"{t}.replay"), errors="replace").read()
    peak = re.findall(r"peak ([0-9.]+) MiB, (\d+) problem", replay)
    peak_text = f"{peak[-1][0]} MiB" if peak else "?"
    if peak and peak[-1][1] != "0":
        findings.append(f"{peak[-1][1]} in {t}.replay")
    note = ", ".join(findings) or ("none" if status == "0" else f"exit {status}, see {t}.log")
    runs, done, bad = ledger[t]
    print(f"| {t} | {int(stat.get('number_of_executed_units', 0)):,} | {stat.get('average_exec_per_sec', '?')} | {cov_edges} | {features} | {corpus} | {peak_text} | {note} | {done:,} ({runs} run{'s' if runs != 1 else ''}{f', {bad} with findings' if bad else ''}) |")
sys.exit(1 if failed else 0)
EOF
