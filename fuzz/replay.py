"""Replay inputs through a target with the memory bound watched: ``python -m fuzz.replay TARGET DIR...``.

Every file goes through :func:`fuzz.targets.check` under tracemalloc; an input under 1 MiB
whose peak reaches 64 MiB, or an error that is not a MariabinlogError, is reported and makes
the exit status 1.  ``scripts/fuzz.sh`` replays each campaign's corpus (the inputs that found
new coverage) this way, which bounds the targets that run without the sanitizer runtime (and
so without ``-malloc_limit_mb``); the test suite does the same for ``fuzz/crashes`` and
``fuzz/seeds``.
"""

from __future__ import annotations

import sys
import traceback
import tracemalloc
from pathlib import Path

LIMIT = 64 << 20


def replay(name: str, paths: list[Path]) -> tuple[int, int, list[str]]:
    """(inputs, largest peak in bytes, problems) of replaying ``paths`` through ``name``."""
    from fuzz import targets

    problems: list[str] = []
    largest = count = 0
    # Imports the first input triggers (pandas for the Spark views) are not the input's.
    for warm in [b""] + [p.read_bytes() for p in paths[:1]]:
        try:
            targets.check(name, warm)
        except Exception:  # noqa: BLE001 - reported below, when it is replayed
            pass
    tracemalloc.start()
    try:
        for path in paths:
            data = path.read_bytes()
            tracemalloc.reset_peak()
            try:
                targets.check(name, data)
            except Exception as err:  # noqa: BLE001 - any escape is a finding
                frame = traceback.extract_tb(err.__traceback__)[-1]
                problems.append(f"{path}: {type(err).__name__} at {Path(frame.filename).name}:{frame.lineno}: {err}")
            peak = tracemalloc.get_traced_memory()[1]
            count += 1
            largest = max(largest, peak)
            if len(data) < 1 << 20 and peak >= LIMIT:
                problems.append(f"{path}: {peak} bytes allocated at the peak for a {len(data)}-byte input")
    finally:
        tracemalloc.stop()
    return count, largest, problems


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        raise SystemExit(__doc__)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    paths = sorted(p for folder in argv[2:] for p in Path(folder).iterdir() if p.is_file())
    count, largest, problems = replay(argv[1], paths)
    for problem in problems:
        print(problem)
    print(f"replayed {count} inputs, peak {largest / (1 << 20):.1f} MiB, {len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main(sys.argv)
