"""Shrink a finding before committing it: ``python -m fuzz.minimize TARGET INPUT OUTPUT``.

Delta debugging over the bytes (remove chunks, halving their size, then lower bytes): a
candidate is kept while the target still fails the same way, i.e. raises an exception of the
same class from the same innermost function (not a MariabinlogError).  Candidates pass
through the target's checksum repair first, so cutting an event keeps the rest valid.
The finding must still reproduce, so minimise before fixing.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def signature(name: str, data: bytes) -> tuple[str, str] | None:
    """(exception class, innermost function) of the failure ``data`` causes, None if none."""
    from fuzz import targets

    try:
        targets.check(name, data)
    except Exception as err:  # noqa: BLE001 - any escape is the finding
        frame = traceback.extract_tb(err.__traceback__)[-1]
        return type(err).__name__, f"{Path(frame.filename).name}:{frame.name}"
    return None


def minimize(name: str, data: bytes) -> bytes:
    from fuzz import targets

    fix = targets.TARGETS[name].fix or (lambda d: d)
    wanted = signature(name, data)
    if wanted is None:
        raise SystemExit("the input does not fail: nothing to minimise")

    def fails(candidate: bytes) -> bool:
        return signature(name, fix(candidate)) == wanted

    chunk = max(1, len(data) // 2)
    while chunk >= 1:
        pos = 0
        while pos < len(data):
            candidate = data[:pos] + data[pos + chunk :]
            if candidate and fails(candidate):
                data = candidate
            else:
                pos += chunk
        chunk //= 2
    for pos in range(len(data)):  # simpler bytes: zero what does not matter
        if data[pos]:
            candidate = data[:pos] + b"\0" + data[pos + 1 :]
            if fails(candidate):
                data = candidate
    return fix(data)


def main(argv: list[str]) -> None:
    if len(argv) != 4:
        raise SystemExit(__doc__)
    sys.path.insert(0, str(REPO))
    name, source, target = argv[1:]
    data = minimize(name, Path(source).read_bytes())
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    Path(target).write_bytes(data)
    print(f"{len(data)} bytes -> {target}: {signature(name, data)}")


if __name__ == "__main__":
    main(sys.argv)
