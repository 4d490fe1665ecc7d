"""Lag and progress reporting for long-running replication jobs (seed 003 part 3's "event recorder").

:class:`JobProgress` is a thread-safe set of counters that readers and appliers update;
:class:`Reporter` prints a line to stderr every ``interval`` seconds and, when asked,
writes the same figures as one JSON object per line (to a file, or ``-`` for stderr):

    {"time": 1700000000.1, "job": "replicate", "state": "running", "events": 1200,
     "groups": 300, "events_per_s": 4000.0, "groups_per_s": 1000.0, "bytes": 123456,
     "position": "0-1-300,1-1-20", "seconds_behind": 0.4, "queued": 12}

``seconds_behind`` is ``now - timestamp`` of the last group applied (corrected by the
primary's clock skew) while groups are waiting, and 0 once the source is idle and
nothing is queued (MariaDB's ``Seconds_Behind_Master`` idea).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import IO, Any

from ..codec.gtid import ConnectState


class JobProgress:
    """Counters of one job; every method is thread-safe."""

    def __init__(self, job: str, position: ConnectState | None = None) -> None:
        self.job = job
        self._lock = threading.Lock()
        self.events = 0
        self.groups = 0
        self.bytes = 0
        self.position = position.copy() if position is not None else ConnectState()
        #: Where a restart would resume (an archive's durable GTID state; None where the job
        #: does not report it).
        self.durable: ConnectState | None = None
        self.last_timestamp: float | None = None
        #: Seconds the local clock is ahead of the source's (a primary's clock, measured at connect).
        self.clock_skew: Callable[[], float] = lambda: 0.0
        self.state = "starting"
        self.queued: Callable[[], int] = lambda: 0
        self.source_idle: Callable[[], bool] = lambda: False

    def done_many(self, groups: Iterable[Any]) -> None:
        """Several groups were stored (:class:`~mariabinlog.codec.groups.EventGroup` objects)."""
        with self._lock:
            position = self.position
            count = events = size = 0
            timestamp = 0
            for group in groups:
                count += 1
                events += len(group)
                size += group.size
                gtid = group.gtid
                seen = position.get(gtid[0])
                if seen is None or gtid[2] >= seen[2]:
                    position.update(gtid)
                timestamp = group.timestamp or timestamp
            self.groups += count
            self.events += events
            self.bytes += size
            if timestamp:
                self.last_timestamp = float(timestamp)

    def mark_durable(self, position: ConnectState) -> None:
        """Everything up to ``position`` is durable (an archive's batch was fsynced)."""
        with self._lock:
            self.durable = position

    def seconds_behind(self) -> float | None:
        """Lag of the applied data behind the source (None before the first group)."""
        queued = self.queued()
        if queued == 0 and self.source_idle():
            return 0.0
        with self._lock:
            if self.last_timestamp is None:
                return None
            return max(0.0, time.time() - self.clock_skew() - self.last_timestamp)

    def snapshot(self) -> dict[str, Any]:
        """The current figures (totals; rates are computed by the reporter)."""
        with self._lock:
            figures = {
                "job": self.job,
                "state": self.state,
                "events": self.events,
                "groups": self.groups,
                "bytes": self.bytes,
                "position": str(self.position),
            }
            if self.durable is not None:
                figures["durable_position"] = str(self.durable)
        behind = self.seconds_behind()
        figures["seconds_behind"] = None if behind is None else round(behind, 3)
        figures["queued"] = self.queued()
        return figures


class Reporter:
    """Prints :class:`JobProgress` every ``interval`` s (human line on stderr, JSON lines if asked).

    ``quiet``: no periodic human lines, only the final one (JSON lines are written anyway)."""

    def __init__(
        self,
        progress: JobProgress,
        *,
        interval: float = 5.0,
        json_out: IO[str] | None = None,
        human: IO[str] | None = None,
        quiet: bool = False,
    ) -> None:
        self.progress = progress
        self.interval = interval
        self.json_out = json_out
        self.human = human if human is not None else sys.stderr
        self.quiet = quiet
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{progress.job}-progress", daemon=True)
        self._last = (time.monotonic(), 0, 0)

    def start(self) -> Reporter:
        """Begin reporting."""
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.report(human=not self.quiet)

    def report(self, *, human: bool = True) -> dict[str, Any]:
        """Print one report now (``human``: the stderr line too) and return its figures."""
        figures = self.progress.snapshot()
        now = time.monotonic()
        then, events, groups = self._last
        elapsed = max(now - then, 1e-9)
        figures["events_per_s"] = round((figures["events"] - events) / elapsed, 1)
        figures["groups_per_s"] = round((figures["groups"] - groups) / elapsed, 1)
        self._last = (now, figures["events"], figures["groups"])
        figures["time"] = round(time.time(), 3)
        if human:
            behind = figures["seconds_behind"]
            print(
                f"{figures['job']}: {figures['state']}, {figures['events_per_s']:.0f} events/s,"
                f" {figures['groups_per_s']:.0f} groups/s, {figures['groups']} groups,"
                f" position {figures['position'] or '(none)'},"
                f" {'?' if behind is None else f'{behind:.1f}'} s behind, {figures['queued']} queued",
                file=self.human,
                flush=True,
            )
        if self.json_out is not None:
            self.json_out.write(json.dumps(figures, sort_keys=True) + "\n")
            self.json_out.flush()
        return figures

    def stop(self) -> None:
        """Stop the thread and print a final report."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.report()
