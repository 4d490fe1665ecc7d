"""Engine settings: the server variables of ibb-format.md §1/§8, validated once.

Why a separate module: recovery, backup, the CLI and the engine itself all
need the same derived values (pages per file, state interval in pages,
spill size) and the same validation messages.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from ..codec.ibb.page import CHUNK_HEADER_SIZE, PAGE_DATA_END, PAGE_SIZE, PAGE_SIZE_SHIFT
from ..errors import OptionError
from ..codec.ibb.state import read_header
from .files import list_binlogs
from .storage import BinlogFiles, pages_for_size

MIN_STATE_INTERVAL = 32768
MAX_SPILL = 512 * 1024
#: Most bytes one (domain, server, seq_no) triple of a GTID state record takes (compr 5 + 5 + 9),
#: and the record's two leading fields (count, XA reference).
STATE_PAIR_BYTES = 19
STATE_HEAD_BYTES = 18


@dataclass(frozen=True)
class EngineConfig:
    """Settings of one engine instance (names follow the MariaDB variables).

    * ``max_binlog_size``: bytes per file (pre-allocated), clamped to 4..2**32-1 pages.
    * ``state_interval``: ``innodb_binlog_state_interval`` in bytes (power-of-two multiple
      of the page size, >= 32768); stored in file headers in pages.
    * ``durability``: ``innodb_flush_log_at_trx_commit``: 1 = redo fsynced at commit,
      2 = written at commit and fsynced every ``flush_interval`` s, 0 = written and
      fsynced every ``flush_interval`` s.
    * ``spill_size``: event groups growing past this are written out-of-band while they
      run (default ``min(max_binlog_size/2, 512 KiB)``); ``oob_piece_size`` bytes per OOB
      record (MariaDB writes one per ``binlog_cache_size``, 32 KiB; larger pieces let whole pages
      bypass the redo log, see ``forced_page_threshold``; default 256 KiB).
    * ``redo_capacity``: bytes of the circular redo log; a checkpoint starts when
      ``checkpoint_fill`` of it is in use, and every ``checkpoint_interval`` s while the
      binlog grows (0: only when the log fills).  A checkpoint writes the partial last page,
      so a reader of the files (``dump`` or a Spark stream over the directory) sees every
      group within about that time, not only once its page is full.
    * ``fifo_pages``: completed pages kept in memory before the writer waits for the
      flush thread (bounds memory for huge transactions).
    * ``expire_seconds``, ``max_total_size``, ``slave_connections_needed_for_purge``:
      automatic purge (``binlog_expire_logs_seconds``, ``max_binlog_total_size``).
    * ``forced_page_threshold``: an append that fills at least this many whole pages
      writes those pages to the binlog file and fsyncs them before its redo record
      instead of copying them into the redo log (large transactions are written once).
    """

    max_binlog_size: int = 1 << 30
    state_interval: int = 2 << 20
    durability: int = 1
    spill_size: int | None = None
    oob_piece_size: int = 256 * 1024
    redo_capacity: int = 64 << 20
    checkpoint_fill: float = 0.5
    checkpoint_interval: float = 1.0
    fifo_pages: int = 512
    flush_interval: float = 1.0
    expire_seconds: float = 0.0
    max_total_size: int = 0
    slave_connections_needed_for_purge: int = 0
    forced_page_threshold: int = 4

    def __post_init__(self) -> None:
        if self.durability not in (0, 1, 2):
            raise OptionError(f"durability must be 0, 1 or 2, not {self.durability}")
        interval = self.state_interval
        if interval < MIN_STATE_INTERVAL or interval % PAGE_SIZE or (interval >> PAGE_SIZE_SHIFT) & (
            (interval >> PAGE_SIZE_SHIFT) - 1
        ):
            raise OptionError(
                f"state_interval must be a power-of-two multiple of {PAGE_SIZE} bytes, at least"
                f" {MIN_STATE_INTERVAL}, not {interval}"
            )
        if (self.oob_piece_size < 1 or self.fifo_pages < 8 or not 0 < self.checkpoint_fill < 1
                or self.checkpoint_interval < 0):
            raise OptionError("oob_piece_size, fifo_pages, checkpoint_fill and checkpoint_interval are out of range")

    @property
    def pages_per_file(self) -> int:
        """Pages of a newly created file."""
        return pages_for_size(self.max_binlog_size)

    @property
    def interval_pages(self) -> int:
        """State interval in pages, as stored in file headers."""
        return self.state_interval >> PAGE_SIZE_SHIFT

    @property
    def spill(self) -> int:
        """Size from which an event group goes out-of-band."""
        if self.spill_size is not None:
            return self.spill_size
        return min((self.pages_per_file << PAGE_SIZE_SHIFT) // 2, MAX_SPILL)

    def record_room(self, state_pairs: int) -> int:
        """Bytes of records one append may lay out and still begin at most one new file.

        MariaDB keeps every mini-transaction smaller than one binlog file, so a redo record
        never begins two files: each file's start LSN (the LSN of the record that writes its
        header) is then after the previous file's, which recovery relies on to tell which
        file a record belongs to.  A run of records no longer than the data a new file holds
        after its header and its GTID state records (``state_pairs`` pairs), wherever it
        starts, ends in the next file at the latest.
        """
        state = STATE_HEAD_BYTES + STATE_PAIR_BYTES * state_pairs
        return _file_room(self.pages_per_file, self.interval_pages, state)

    def with_options(self, **changes: object) -> EngineConfig:
        """A copy with some settings changed."""
        return replace(self, **changes)  # type: ignore[arg-type]


def recorded_settings(directory: str) -> dict[str, int]:
    """``max_binlog_size`` and ``state_interval`` as the newest valid header in ``directory``
    records them (empty when there is none): an engine reopened without explicit settings
    goes on with the files it has instead of the defaults (1 GiB files beside 256 KiB ones)."""
    try:
        numbers = list_binlogs(directory)
    except OSError:
        return {}
    files = BinlogFiles(directory, readonly=True)
    try:
        for file_no in reversed(numbers):
            header = read_header(files, file_no)
            if header is None:
                continue
            settings = {"max_binlog_size": header.page_count << PAGE_SIZE_SHIFT}
            pages = header.gtid_state_interval
            if pages and (pages & (pages - 1)) == 0 and pages * PAGE_SIZE >= MIN_STATE_INTERVAL:
                settings["state_interval"] = pages * PAGE_SIZE
            return settings
        return {}
    finally:
        files.close()


@lru_cache(maxsize=256)
def _file_room(pages: int, interval: int, state: int) -> int:
    """Record bytes a new file of ``pages`` pages holds when every GTID state record it gets (at
    page 1 and every ``interval`` pages) takes ``state`` bytes, laid out as ``PageWriter`` does:
    a state record is written only if a page is left after it, and each page may lose a chunk
    header and three filler bytes."""
    room = (pages - 1) * (PAGE_DATA_END - 2 * CHUNK_HEADER_SIZE)
    page_no = 1
    while page_no < pages:
        cost = min(state, (pages - page_no - 1) * PAGE_DATA_END)
        spanned = 1
        if cost > 0:
            spanned = -(-cost // (PAGE_DATA_END - CHUNK_HEADER_SIZE))
            room -= cost + spanned * CHUNK_HEADER_SIZE
        following = page_no + spanned
        page_no = max(interval, -(-following // interval) * interval)
    return room
