"""Helpers for the engine tests: small-file settings, event builders, independent read-back."""

from __future__ import annotations

import struct
from pathlib import Path

from mariabinlog.codec.events import QueryEvent, decode_event
from mariabinlog.codec.ibb.reader import RecordReader
from mariabinlog.engine.files import IbbDirectory
from mariabinlog.codec.ibb.state import commit_gtid

SMALL = {
    "max_binlog_size": 64 * 1024,
    "state_interval": 32768,
    "redo_capacity": 1 << 20,
    "flush_interval": 0.05,
}


def query(text: bytes, size: int = 0) -> bytes:
    """A Query event (no checksum, log_pos 0) whose query is ``text`` padded to ``size`` bytes."""
    body = text + b"." * max(0, size - len(text))
    return QueryEvent(query=body, database=b"test", server_id=1, timestamp=1).encode()


def fake_event(size: int, fill: int) -> bytes:
    """An event of exactly ``size`` bytes (type 0xff body is raw filler) for large groups."""
    return struct.pack("<IBIIIH", 1, 0xFF, 1, size, 0, 0) + bytes([fill]) * (size - 19)


def read_groups(directory: str | Path) -> list[tuple[object, list[bytes]]]:
    """(gtid or None, events after the GTID) for every COMMIT, read with the mmapped
    ``engine.files.IbbDirectory`` and the codec's reader, independently of the engine."""
    with IbbDirectory(str(directory)) as source:
        numbers = sorted(
            int(p.name[7:-4]) for p in Path(directory).glob("binlog-*.ibb") if p.stat().st_size
        )
        out = []
        if not numbers:
            return out
        reader = RecordReader(source, numbers[0], skip_partial=True)
        for group in reader.event_groups():
            events = list(group.raw_events())
            out.append((commit_gtid(group.record.payload), events[1:] if commit_gtid(group.record.payload) else events))
        return out


def gtid_groups(directory: str | Path) -> list[tuple[object, list[bytes]]]:
    """Like :func:`read_groups` without restart markers."""
    return [g for g in read_groups(directory) if g[0] is not None]


def query_texts(events: list[bytes]) -> list[bytes]:
    """The query texts of Query events."""
    out = []
    for raw in events:
        event = decode_event(raw)
        assert isinstance(event, QueryEvent)
        out.append(event.query)
    return out


SRC = Path(__file__).resolve().parents[2] / "src"


def run_child(directory: Path, code: str, timeout: float = 60) -> str:
    """Run ``code`` in a fresh Python process (``engine_dir`` and ``SMALL`` predefined, the
    helpers imported); it ends with ``os._exit`` to leave the directory as a crash would.
    Returns its stdout."""
    import subprocess
    import sys
    import textwrap

    prelude = (
        "import os, sys, time\n"
        f"sys.path.insert(0, {str(SRC)!r})\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
        "from engine_helpers import SMALL, query, fake_event\n"
        "from mariabinlog.engine import Engine\n"
        f"engine_dir = {str(directory)!r}\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(f"child failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result.stdout
