"""What :class:`mariabinlog.tools.dump.dumper.Dumper` feeds its events to.

The dumper reads files (legacy and `.ibb`), applies mariadb-binlog's
filters (positions, datetimes, GTID windows, domain and server ids) and
hands every event it accepts to a sink as an
:class:`~mariabinlog.tools.printer.printer.EventView`.  The text printer
(:class:`~mariabinlog.tools.printer.printer.Printer`) is one sink; the JSON writer,
the ``SHOW BINLOG EVENTS`` listing and the two converters are others, so
they all read and filter exactly as the dump does.

A sink appends output pieces to :attr:`out`; the dumper calls :meth:`drain`
now and then to write them.  The reader keeps :attr:`ctx`,
:attr:`checksum_alg`, :attr:`options_written` and :attr:`fallback_fd` up to
date as Format_description events go by.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...codec.events import CHECKSUM_OFF, DEFAULT_CONTEXT, DecodeContext


class EventSink:
    """Base of the non-text sinks: output buffering and the reader-maintained state."""

    #: True only for the text printer: mariadb-binlog's prologue, ``DELIMITER``
    #: lines and epilogue frame the output.
    text_frame = False
    #: For `.ibb` input: give events the (start, end) byte offsets of their record
    #: instead of mariadb-binlog's constant ``# at 4`` / ``end_log_pos 0``.
    record_positions = False

    def __init__(self, write: Callable[[bytes], Any]) -> None:
        self._write = write
        self.out: list[bytes] = []
        self.ctx: DecodeContext = DEFAULT_CONTEXT
        self.checksum_alg = CHECKSUM_OFF
        self.options_written = 0
        self.fallback_fd: bytes | None = None
        self.file_name = ""

    def drain(self) -> None:
        """Write what is pending."""
        if self.out:
            self._write(b"".join(self.out))
            self.out.clear()

    def begin_file(self, name: str = "") -> None:
        """A new input file starts (``name`` as given on the command line)."""
        self.file_name = name

    def end_file(self) -> None:
        """The current input file was read to its end."""

    def print_event(self, ev: Any) -> None:
        """Take one accepted event."""
        raise NotImplementedError

    def print_groups(
        self,
        data: Any,
        pos: int,
        limit: int,
        soft: int,
        verify: bool,
        accept: Callable[[int, int, int], bool],
        at: int = -1,
    ) -> tuple[int, bool]:
        """Whole groups at once (the text printer's compiled path); the others take events one
        by one: nothing done here."""
        return pos, False

    def drop_event(self, position: int) -> None:
        """Forget what was written of the event at ``position``, which failed to decode: a sink
        takes whole events only, so nothing of it is pending."""

    def finish(self, complete: bool) -> None:
        """The run is over (``complete``: no error stopped it)."""
