"""A progress bar on stderr for long runs, only when stderr is a terminal.

Never in pipes or files: :func:`progress_for` returns None unless stderr is a
TTY, and the bar is shown only once a run has lasted :data:`DELAY` seconds
(short runs print nothing at all).  When stdout is that same terminal the
dump text would tear the bar apart, so then there is no bar either.  The bar
is one line redrawn with ``\\r`` at most :data:`RATE` times a second and
erased at the end, so it leaves nothing behind in the terminal's scrollback.
``MARIABINLOG_PROGRESS_DELAY`` overrides :data:`DELAY` (seconds).
"""

from __future__ import annotations

import os
import time
from typing import Any, TextIO

#: Seconds before the bar first appears.
DELAY = 1.0
#: Most redraws per second.
RATE = 10
_WIDTH = 30


class ProgressBar:
    """Bytes read out of the total size of the input files, per file and overall."""

    def __init__(self, stream: TextIO, *, delay: float = DELAY, clock: Any = time.monotonic) -> None:
        self.stream = stream
        self.delay = delay
        self.clock = clock
        self.sizes: list[int] = []
        self.names: list[str] = []
        self.total = 0
        self.done_before = 0
        self.index = 0
        self.started = 0.0
        self.next_draw = 0.0
        self.shown = False

    def start(self, files: list[str]) -> None:
        """Size up the inputs (missing ones count as empty)."""
        self.names = files
        self.sizes = []
        for name in files:
            try:
                self.sizes.append(os.path.getsize(name) if name != "-" else 0)
            except OSError:
                self.sizes.append(0)
        self.total = sum(self.sizes) or 1
        self.started = self.clock()
        self.next_draw = self.started + self.delay

    def next_file(self, index: int) -> None:
        """Reading moves on to input file ``index``."""
        self.done_before = sum(self.sizes[:index])
        self.index = index

    def update(self, offset: int) -> None:
        """Reading reached byte ``offset`` of the current file; redraw if it is time."""
        now = self.clock()
        if now < self.next_draw:
            return
        self.next_draw = now + 1.0 / RATE
        size = self.sizes[self.index] if self.index < len(self.sizes) else 0
        done = self.done_before + min(offset, size)
        self._draw(done, now)

    def _draw(self, done: int, now: float) -> None:
        fraction = min(1.0, done / self.total)
        filled = int(fraction * _WIDTH)
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - done) / rate if rate > 0 else 0.0
        name = os.path.basename(self.names[self.index]) if self.names else ""
        line = (
            f"\r[{'#' * filled}{'.' * (_WIDTH - filled)}] {fraction * 100:5.1f}% "
            f"{_mib(done)}/{_mib(self.total)} MiB {_mib(rate)} MiB/s ETA {eta:4.0f}s "
            f"{name} ({self.index + 1}/{len(self.names)})"
        )
        self.stream.write(line + "\x1b[K")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """Erase the bar (if it was ever drawn)."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


def _mib(n: float) -> str:
    return f"{n / 1048576:.1f}"


def progress_for(stderr: Any, stdout: Any) -> ProgressBar | None:
    """A ProgressBar on ``stderr`` when it is a terminal (and stdout is not that terminal), else None."""
    try:
        if not stderr.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    try:
        if stdout is not None and stdout.isatty():
            return None
    except (AttributeError, ValueError):
        pass
    delay = os.environ.get("MARIABINLOG_PROGRESS_DELAY")
    return ProgressBar(stderr, delay=float(delay) if delay else DELAY)
