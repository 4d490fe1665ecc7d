"""The campaign ledger: executions per target summed over runs on the same code.

A million executions of the slow targets (tens of exec/s under the sanitizers) take more
than one sitting on two cores; libFuzzer resumes from the corpus a run leaves, so a campaign
may be several runs.  The ledger counts a run toward a target's total only while the code
it fuzzes is unchanged: its *code id* hashes the sources of the packages the target
instruments (``Target.packages``), ``mariabinlog/errors.py`` and the harness files
(``fuzz/targets.py``, ``run.py``, ``checksums.py``), taken when the run starts.  Any edit
there starts the count again.

    python -m fuzz.ledger id TARGET                          # scripts/fuzz.sh, before a run
    python -m fuzz.ledger record OUT TARGET ID LOG STATUS    # scripts/fuzz.sh, after it
    python -m fuzz.ledger totals OUT [TARGET...]         # per target: runs, executions, findings
    python -m fuzz.ledger keep OUT                       # copy OUT's runs into fuzz/ledger.tsv

Entries are lines of ``OUT/ledger.tsv``: time, target, code id, executions, exit status.
A campaign outlives the machine it ran on only through the committed record,
``fuzz/ledger.tsv`` (``keep`` appends the runs it lacks); ``totals`` counts the lines of
both once each.  Lines starting with ``#`` are comments.
"""

from __future__ import annotations

import hashlib
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEDGER = "ledger.tsv"
#: The committed campaign record.
KEPT = ROOT / "fuzz" / LEDGER
#: The files of the harness itself (the rest of ``fuzz/`` does not change what a run finds).
HARNESS = ("targets.py", "run.py", "checksums.py")


def code_id(target: str) -> str:
    """A short hash of every source file whose change could change what ``target`` finds."""
    from fuzz.run import _packages_of

    src = ROOT / "src"
    files = {src / "mariabinlog" / "errors.py", *(ROOT / "fuzz" / name for name in HARNESS)}
    for package in _packages_of(str(ROOT / "fuzz" / "targets.py"), target):
        path = src.joinpath(*package.split("."))
        if path.is_dir():
            files.update(p for p in path.rglob("*") if p.suffix in (".py", ".c", ".h"))
        else:
            files.add(path.with_suffix(".py"))
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def executions(log: Path) -> int:
    """Executions a libFuzzer log reports (its final stats, else its last status line)."""
    text = log.read_text(errors="replace")
    final = re.findall(r"stat::number_of_executed_units:\s+(\d+)", text)
    if final:
        return int(final[-1])
    lines = re.findall(r"^#(\d+)\s", text, re.MULTILINE)
    return int(lines[-1]) if lines else 0


def record(out: Path, target: str, code: str, log: Path, status: str) -> None:
    """Append one run of ``target`` on the code ``code`` (its id when the run began)."""
    with (out / LEDGER).open("a", encoding="utf-8") as fh:
        fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\t{target}\t{code}\t{executions(log)}\t{status}\n")


def _runs(path: Path) -> list[str]:
    """The run lines of one ledger file (none if it does not exist)."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [line for line in lines if line and not line.startswith("#")]


def keep(out: Path) -> int:
    """Append to the committed record the runs of ``out``'s ledger it lacks; how many."""
    kept = set(_runs(KEPT))
    new = [line for line in _runs(out / LEDGER) if line not in kept]
    with KEPT.open("a", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in new)
    return len(new)


def totals(out: Path, targets: list[str]) -> dict[str, tuple[int, int, int]]:
    """Per target, over the runs on its current code in ``out``'s ledger and the committed
    record (each line once): (runs, executions, runs that did not exit 0)."""
    ids = {t: code_id(t) for t in targets}
    result = {t: (0, 0, 0) for t in targets}
    for line in dict.fromkeys(_runs(KEPT) + _runs(out / LEDGER)):
        _, target, code, count, status = line.split("\t")
        if ids.get(target) == code:
            runs, done, bad = result[target]
            result[target] = (runs + 1, done + int(count), bad + (status != "0"))
    return result


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "id":
        print(code_id(argv[2]))
        return 0
    if len(argv) == 7 and argv[1] == "record":
        record(Path(argv[2]), argv[3], argv[4], Path(argv[5]), argv[6])
        return 0
    if len(argv) == 3 and argv[1] == "keep":
        print(f"{keep(Path(argv[2]))} run(s) added to {KEPT.relative_to(ROOT)}")
        return 0
    if len(argv) >= 3 and argv[1] == "totals":
        from fuzz.targets import TARGETS

        names = argv[3:] or list(TARGETS)
        print("| target | runs on this code | executions on this code | runs with findings |")
        print("| --- | ---: | ---: | ---: |")
        for name, (runs, done, bad) in totals(Path(argv[2]), names).items():
            print(f"| {name} | {runs} | {done:,} | {bad} |")
        return 0
    print(__doc__.split("\n\n")[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
