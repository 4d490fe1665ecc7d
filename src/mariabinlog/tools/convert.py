"""Conversion between `.ibb` engine binlogs and legacy binlog files, both ways.

``mariabinlog dump --convert-engine-binlog [-r BASE] FILE.ibb...`` does what
MariaDB 12's ``mariadb-binlog --convert-engine-binlog`` does (MDEV-37605,
mariadb-binlog.md §4): it writes legacy files ``BASE.000001``, ``BASE.000002``
... (``BASE`` = ``--result-file``, default ``legacy_log``), each announced on
stderr as ``Generated output file: NAME``, each starting with the magic, a
Format_description of this tool's server version (checksums OFF, the FD's
own CRC field filled), a Gtid_list of the GTID state so far (from the first
input file's page-1 state record, then every GTID copied) and a
Binlog_checkpoint naming the file.  Events are copied byte for byte with
``log_pos`` set to their end offset in the output.  A new file (after a
Rotate event) starts at a restart marker of the input (a Format_description:
the server was restarted) and at the first GTID once the current file holds
``--max-binlog-size`` bytes (default 1 GiB); groups are never split.  The
synthesized events carry the timestamp and server id of the first input event
(first file) or of the event that caused the rotation (later files).  The
option combinations the C tool rejects are rejected with its messages; so
are the filters it rejected in earlier versions (a conversion copies
everything, or nothing).

``mariabinlog dump --convert-to-engine-binlog DIR FILE...`` goes the other
way: legacy binlog files into an `.ibb` directory written through the storage
engine (:mod:`mariabinlog.engine`), so the result has everything the engine
writes (GTID state records, OOB forests for large groups, a redo log): each
GTID group becomes one commit, its events copied without checksums and with
``log_pos`` 0; a Format_description written at server start (its ``created``
is set) becomes a restart marker; Rotate, Gtid_list, Binlog_checkpoint and
Stop events have no `.ibb` counterpart and are dropped.  DIR must not hold
binlog files yet.  ``--max-binlog-size`` sets the engine's file size.

The engine writes each group's GTID event (:meth:`mariabinlog.engine.Engine.commit`)
from the original one: GTID, ``flags2``, timestamp and every other field
(group-commit id, XA xid of XA PREPARE/COMMIT groups, extra flags, ALTER
phase, thread id), so the converted group replays exactly as the original.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

from .. import server_version
from ..codec.events import (
    BINLOG_CHECKPOINT_EVENT,
    CHECKSUM_OFF,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    HEARTBEAT_LOG_EVENT,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    ROTATE_EVENT,
    START_ENCRYPTION_EVENT,
    STOP_EVENT,
    BinlogCheckpointEvent,
    FormatDescriptionEvent,
    GtidListEvent,
    RotateEvent,
    reframe,
    with_log_pos,
)
from ..codec.groups import GroupBoundary
from ..codec.ibb.page import LEGACY_MAGIC
from ..codec.gtid import BinlogState, Gtid
from ..engine.files import binlog_kind
from ..engine.redo import REDO_NAME, fsync_dir
from ..errors import ConvertError, DecodeError, OptionExit
from .dump.options import DumpOptions, write_line
from .dump.sink import EventSink

#: The server version this tool writes into the Format_description of converted files.
SERVER_VERSION = server_version()
DEFAULT_BASE = "legacy_log"
#: --max-binlog-size range (IO_SIZE .. 4 GiB), as the C tool clamps it.
MIN_MAX_SIZE = 4096
MAX_MAX_SIZE = 1 << 32


def conversion_sink(
    opts: DumpOptions, files: list[str], err: Any
) -> Callable[[Callable[[bytes], Any]], EventSink]:
    """The converter the options ask for, as a sink factory for the dumper.

    Raises :class:`OptionExit` with the C tool's message for option
    combinations and inputs a conversion refuses.
    """
    if opts.convert_engine_binlog and opts.convert_to_engine_binlog is not None:
        raise OptionExit(
            "ERROR: --convert-engine-binlog and --convert-to-engine-binlog cannot be combined", 1
        )
    if opts.convert_engine_binlog:
        _check_ibb_options(opts)
        if any(binlog_kind(f) == "legacy" for f in files):
            raise OptionExit(
                "ERROR: The --convert-engine-binlog option requires InnoDB-engine binlog input files", 1
            )
        size = _clamp_size(opts.max_binlog_size, err)
        base = opts.result_file or DEFAULT_BASE
        return lambda write: IbbToLegacy(base, size, err)
    _check_legacy_options(opts)
    if any(binlog_kind(f) == "ibb" for f in files):
        raise OptionExit(
            "ERROR: The --convert-to-engine-binlog option requires legacy binlog input files", 1
        )
    directory = opts.convert_to_engine_binlog
    assert directory is not None
    if os.path.isdir(directory) and any(n.endswith(".ibb") for n in os.listdir(directory)):
        raise OptionExit(
            f"ERROR: The --convert-to-engine-binlog directory '{directory}' already holds binlog files", 1
        )
    size = opts.max_binlog_size
    return lambda write: LegacyToIbb(directory, size)


def _check_ibb_options(opts: DumpOptions) -> None:
    """mysqlbinlog.cc's rejections for --convert-engine-binlog, same messages and order."""
    def reject(what: str) -> OptionExit:
        return OptionExit(f"ERROR: The --convert-engine-binlog option cannot be combined with {what}", 1)

    if opts.remote:
        raise OptionExit(
            "ERROR: The --convert-engine-binlog option does not support --read-from-remote-server", 1
        )
    if opts.raw:
        raise reject("--raw")
    if opts.flashback:
        raise reject("--flashback")
    if opts.stop_datetime is not None:
        raise reject("--stop-datetime")
    for value in (opts.start_position, opts.stop_position):
        if value is not None and not value.strip().isdigit():
            raise OptionExit(
                "ERROR: The --convert-engine-binlog option does not support GTID values for "
                "--start-position or --stop-position",
                1,
            )
    if opts.stop_position is not None:
        raise reject("--stop-position")
    _check_filters(opts, reject)


def _check_legacy_options(opts: DumpOptions) -> None:
    """--convert-to-engine-binlog copies whole files: no filters, no remote reading."""
    def reject(what: str) -> OptionExit:
        return OptionExit(f"ERROR: The --convert-to-engine-binlog option cannot be combined with {what}", 1)

    if opts.remote:
        raise reject("--read-from-remote-server")
    for flag, what in ((opts.raw, "--raw"), (opts.flashback, "--flashback")):
        if flag:
            raise reject(what)
    if opts.stop_datetime is not None:
        raise reject("--stop-datetime")
    if opts.stop_position is not None:
        raise reject("--stop-position")
    _check_filters(opts, reject)


def _check_filters(opts: DumpOptions, reject: Callable[[str], Exception]) -> None:
    """The filters an earlier MDEV-37605 snapshot rejected: a conversion copies everything."""
    checks = (
        (opts.database is not None, "--database"),
        (opts.table is not None, "--table"),
        (opts.start_position is not None, "--start-position"),
        (opts.start_datetime is not None, "--start-datetime"),
        (opts.offset != 0, "--offset"),
        (opts.do_domain_ids is not None, "--do-domain-ids"),
        (opts.ignore_domain_ids is not None, "--ignore-domain-ids"),
        (opts.do_server_ids is not None, "--do-server-ids"),
        (opts.ignore_server_ids is not None, "--ignore-server-ids"),
        (opts.server_id is not None, "--server-id"),
        (bool(opts.rewrite_db), "--rewrite-db"),
        (opts.skip_annotate, "--skip-annotate-row-events"),
    )
    for bad, what in checks:
        if bad:
            raise reject(what)


def _clamp_size(size: int, err: Any) -> int:
    """my_getopt's range adjustment of --max-binlog-size, with its warning."""
    clamped = min(max(size, MIN_MAX_SIZE), MAX_MAX_SIZE)
    if clamped != size:
        write_line(err, f"Warning: option 'max-binlog-size': unsigned value {size} adjusted to {clamped}")
    return clamped


# ------------------------------------------------------------------------ .ibb -> legacy


class IbbToLegacy(EventSink):
    """Writes the `.ibb` event stream the dumper reads as legacy binlog files."""

    def __init__(self, base: str, max_size: int, err: Any) -> None:
        super().__init__(lambda data: None)
        self.base = base
        self.max_size = max_size
        self.err = err
        self.file_index = 0
        self.output: Any = None
        self.name = ""
        self.position = 0
        self.copied = 0
        self.state: BinlogState | None = None
        self.warned_4g = False

    def begin_file(self, name: str = "") -> None:
        super().begin_file(name)
        if self.state is None:
            self.state = _initial_state(name)

    def print_event(self, ev: Any) -> None:
        raw = bytes(ev.buf[ev.start : ev.start + ev.length])
        code = ev.type_code
        if self.output is None:
            self._open(ev)  # the first input event stamps the first file's prologue
        if code == FORMAT_DESCRIPTION_EVENT:
            # A restart marker: the server restarted; later events go to a new file.
            if self.copied:
                self._rotate(ev)
            return
        if code == GTID_EVENT and self.copied and self.position >= self.max_size:
            self._rotate(ev)
        end = self.position + len(raw)
        if end >= 1 << 32 and not self.warned_4g:
            self.warned_4g = True
            self.err.write(
                f"WARNING: position {end} in '{self.name}' exceeds 4 GiB; log_pos values wrap\n"
            )
        self._append(with_log_pos(raw, end))
        self.copied += 1
        if code == GTID_EVENT:
            assert self.state is not None
            self.state.update(Gtid(ev.decoded().domain_id, ev.server_id, ev.decoded().seq_no))

    def _append(self, data: bytes) -> None:
        self.output.write(data)
        self.position += len(data)

    def _open(self, ev: Any) -> None:
        """A new output file with its prologue (magic, FD, Gtid_list, Binlog_checkpoint)."""
        self.file_index += 1
        self.name = f"{self.base}.{self.file_index:06d}"
        try:
            self.output = open(self.name, "wb")  # noqa: SIM115 - closed by _close
        except OSError as exc:
            raise ConvertError(f"Could not create output file '{self.name}': {exc.strerror}") from None
        self.err.write(f"Generated output file: {self.name}\n")
        self.err.flush()
        self.position = 0
        self.copied = 0
        header = {"timestamp": ev.when, "server_id": ev.server_id}
        self._append(LEGACY_MAGIC)
        fd = FormatDescriptionEvent(
            server_version=SERVER_VERSION, checksum_alg=CHECKSUM_OFF, **header
        ).encode(checksum=True, log_pos=0)
        self._append(reframe(fd[:-4], log_pos=self.position + len(fd), checksum=True))
        assert self.state is not None
        gtid_list = GtidListEvent(gtids=[(g.domain, g.server, g.seq) for g in self.state.to_list()], **header)
        self._synthesized(gtid_list)
        self._synthesized(BinlogCheckpointEvent(filename=os.path.basename(self.name).encode(), **header))

    def _synthesized(self, event: Any) -> None:
        data = event.encode(checksum=False, log_pos=0)
        self._append(with_log_pos(data, self.position + len(data)))

    def _rotate(self, ev: Any) -> None:
        """Rotate event to the next output name, then the next file."""
        next_name = f"{self.base}.{self.file_index + 1:06d}"
        rotate = RotateEvent(
            next_file=os.path.basename(next_name).encode(),
            next_position=4,
            timestamp=ev.when,
            server_id=ev.server_id,
        )
        self._synthesized(rotate)
        self._close()
        self._open(ev)

    def _close(self) -> None:
        if self.output is not None:
            self.output.close()
            self.output = None

    def finish(self, complete: bool) -> None:
        self._close()


def _initial_state(name: str) -> BinlogState:
    """The GTID state record at page 1 of `.ibb` file ``name`` (empty when it has none)."""
    from ..codec.ibb import PAGE_SIZE, decode_header_page
    from ..codec.ibb.state import state_at_page
    from ..engine.files import IbbDirectory

    try:
        with open(name, "rb") as f:
            header = decode_header_page(f.read(PAGE_SIZE))
    except (OSError, DecodeError):
        return BinlogState()
    if header is None:
        return BinlogState()
    with IbbDirectory(os.path.dirname(os.path.abspath(name)), {header.file_no: name}) as source:
        return state_at_page(source, header.file_no, 1) or BinlogState()


# ------------------------------------------------------------------------ legacy -> .ibb


#: Legacy events with no `.ibb` counterpart (file framing, not part of any group).
_FRAMING_EVENTS = frozenset(
    (ROTATE_EVENT, GTID_LIST_EVENT, BINLOG_CHECKPOINT_EVENT, STOP_EVENT, HEARTBEAT_LOG_EVENT, START_ENCRYPTION_EVENT)
)


class LegacyToIbb(EventSink):
    """Writes the GTID groups of legacy binlog files through the storage engine."""

    def __init__(self, directory: str, max_size: int) -> None:
        super().__init__(lambda data: None)
        from ..engine import Engine

        # written aside and renamed into place at the end: a failed conversion leaves nothing
        self.directory = os.path.abspath(directory)
        parent = os.path.dirname(self.directory)
        os.makedirs(parent, exist_ok=True)
        self.aside = tempfile.mkdtemp(prefix=f".{os.path.basename(self.directory)}.partial-", dir=parent)
        self.engine = Engine.open(self.aside, restart_marker=False, durability=0, max_binlog_size=max_size)
        self.trx: Any = None
        self.gtid_event: Any = None
        self.gtid_when = 0
        self.groups = 0
        #: Where a group ends: the codec's one rule (a group cut off by the next GTID event or a
        #: server restart is committed as far as it goes).
        self.boundary = GroupBoundary()

    def print_event(self, ev: Any) -> None:
        code = ev.type_code
        if code == GTID_EVENT:
            self._commit()
            self.gtid_event = ev.decoded()
            self.gtid_when = ev.when
            self.trx = self.engine.begin()
            self.boundary.start(self.gtid_event.flags2)
            return
        if code == FORMAT_DESCRIPTION_EVENT:
            self._commit()
            fd = ev.decoded()
            if fd.create_timestamp:
                self.engine.write_restart_marker(_ibb_event(ev, checksum_alg_off=True))
            return
        if code in _FRAMING_EVENTS:
            return
        if self.trx is None:
            raise DecodeError(
                f"{ev.decoded().name} event outside an event group cannot be converted",
                offset=ev.position,
            )
        self.out.append(_ibb_event(ev))
        query = ev.decoded().query if code in (QUERY_EVENT, QUERY_COMPRESSED_EVENT) else None
        if self.boundary.end_after(code, query):
            self._commit()

    def drain(self) -> None:
        """Hand the events gathered so far to the engine's transaction (spilled out-of-band when large)."""
        if self.out and self.trx is not None:
            self.trx.write(b"".join(self.out))
        self.out.clear()

    def _commit(self) -> None:
        if self.trx is None:
            return
        self.drain()
        g = self.gtid_event
        self.engine.commit(
            trx=self.trx,
            gtid=Gtid(g.domain_id, g.server_id, g.seq_no),
            flags2=g.flags2,
            timestamp=self.gtid_when,
            wait=False,
            gtid_fields=g.optional_fields(),
        )
        self.trx = None
        self.groups += 1

    def finish(self, complete: bool) -> None:
        """Like FLUSH BINARY LOGS at the end: the last file cut to its used pages, no
        pre-allocated next file; then the directory moves into place (or goes, if incomplete)."""
        try:
            if complete:
                self._commit()
            elif self.trx is not None:
                self.trx.rollback()
            self.engine.close(trim=complete)
        except BaseException:
            shutil.rmtree(self.aside, ignore_errors=True)
            raise
        if not complete:
            shutil.rmtree(self.aside, ignore_errors=True)
            return
        if not os.path.exists(self.directory):
            os.rename(self.aside, self.directory)
        else:
            names = sorted(os.listdir(self.aside), key=lambda name: name == REDO_NAME)
            for name in names:  # the redo log last: until it is there, no engine is
                os.rename(os.path.join(self.aside, name), os.path.join(self.directory, name))
            os.rmdir(self.aside)
        fsync_dir(os.path.dirname(self.directory))


def _ibb_event(ev: Any, *, checksum_alg_off: bool = False) -> bytes:
    """An event as `.ibb` files hold it: no CRC footer, ``log_pos`` 0 (a restart FD: algorithm OFF)."""
    if not checksum_alg_off:
        return reframe(ev.buf[ev.start : ev.body_end], log_pos=0)
    # A Format_description keeps its 4-byte CRC field (refilled) behind the algorithm byte.
    data = bytearray(ev.buf[ev.start : ev.start + ev.length - 4])
    data[-1] = CHECKSUM_OFF
    return reframe(data, log_pos=0, checksum=True)
