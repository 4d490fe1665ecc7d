"""The fuzz harnesses in the normal suite (fuzz/README.md).

* Every committed input that ever found a bug (``fuzz/crashes/TARGET/``) and every seed
  (``fuzz/seeds/TARGET/``) goes through its harness: only errors of
  :mod:`mariabinlog.errors` may come out, and no input under 1 MiB may make the harness
  allocate 64 MiB or more (tracemalloc's peak).
* A short campaign: each target runs a few seconds under atheris (libFuzzer) from its seeds,
  two at a time, and must end without a finding.  The long campaign is ``scripts/fuzz.sh``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fuzz import targets  # noqa: E402

FUZZ = REPO / "fuzz"
NAMES = sorted(targets.TARGETS)
LIMIT = 64 << 20
SHORT_SECONDS = 3


def _inputs(kind: str, name: str) -> list[Path]:
    folder = FUZZ / kind / name
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_every_target_has_seeds() -> None:
    for name in NAMES:
        assert _inputs("seeds", name), f"no seeds for {name}: run python -m fuzz.seeds"


@pytest.mark.parametrize("name", NAMES)
def test_committed_inputs_raise_only_typed_errors(name: str) -> None:
    inputs = _inputs("crashes", name) + _inputs("seeds", name)
    targets.check(name, b"")  # lazy imports (pandas for the Spark views) are not an input's
    tracemalloc.start()
    try:
        for path in inputs:
            data = path.read_bytes()
            tracemalloc.reset_peak()
            targets.check(name, data)  # anything but a MariabinlogError fails the test
            peak = tracemalloc.get_traced_memory()[1]
            if len(data) < 1 << 20:
                assert peak < LIMIT, f"{path.relative_to(REPO)}: {peak} bytes allocated at the peak"
    finally:
        tracemalloc.stop()


def test_crash_inputs_are_filed_under_known_targets() -> None:
    folder = FUZZ / "crashes"
    for child in folder.iterdir() if folder.is_dir() else ():
        if child.is_dir():
            assert child.name in targets.TARGETS, f"fuzz/crashes/{child.name}: no such target"


def _short(name: str, work: Path) -> tuple[int, str]:
    corpus = work / name
    corpus.mkdir()
    command = [
        sys.executable, "-m", "fuzz.run", name, f"-max_total_time={SHORT_SECONDS}", "-timeout=10",
        "-rss_limit_mb=2048", "-print_final_stats=1", f"-artifact_prefix={work}/{name}-",
        str(corpus), str(FUZZ / "seeds" / name),
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def short_campaign(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    work = tmp_path_factory.mktemp("fuzz")
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(NAMES, pool.map(lambda n: _short(n, work), NAMES)))


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", NAMES)
def test_short_campaign_finds_nothing(name: str, short_campaign: dict[str, tuple[int, str]]) -> None:
    status, output = short_campaign[name]
    assert status == 0 and "stat::number_of_executed_units" in output, output[-4000:]


def test_the_ledger_counts_runs_on_the_code_fuzzed_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fuzz import ledger

    monkeypatch.setattr(ledger, "KEPT", tmp_path / "kept.tsv")
    log = tmp_path / "gtid.log"
    log.write_text("#1000\tpulse\nstat::number_of_executed_units: 250000\n")
    code = ledger.code_id("gtid")
    ledger.record(tmp_path, "gtid", code, log, "0")
    log.write_text("#4096\tpulse\n#8192\tpulse\n")  # cut short: the last status line counts
    ledger.record(tmp_path, "gtid", code, log, "1")
    with (tmp_path / ledger.LEDGER).open("a") as fh:  # a run on other code does not count
        fh.write("2026-01-01T00:00:00\tgtid\t000000000000\t999999\t0\n")
    assert ledger.totals(tmp_path, ["gtid", "ddl"]) == {"gtid": (2, 258192, 1), "ddl": (0, 0, 0)}
    assert ledger.code_id("gtid") != ledger.code_id("ddl")  # each target hashes its own packages
    # Kept in the committed record, each run counts once, whether or not OUT still has it.
    assert ledger.keep(tmp_path) == 3 and ledger.keep(tmp_path) == 0
    assert ledger.totals(tmp_path, ["gtid"]) == {"gtid": (2, 258192, 1)}
    assert ledger.totals(tmp_path / "lost", ["gtid"]) == {"gtid": (2, 258192, 1)}
    with ledger.KEPT.open("a") as fh:
        fh.write("# a comment line\n")
    assert ledger.totals(tmp_path / "lost", ["gtid"]) == {"gtid": (2, 258192, 1)}
