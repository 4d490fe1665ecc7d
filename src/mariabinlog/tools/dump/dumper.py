"""``mariabinlog dump``: a drop-in ``mariadb-binlog`` for local binlog files.

Reads legacy binlogs (``\\xfebin``) and `.ibb` engine binlogs, detected by
their magic, and prints them as ``mariadb-binlog`` (10.11) does: same option
names and meanings, same output text, same error and warning texts on stderr
and the same exit statuses.  Files named together are one stream: a numeric
``--start-position`` applies to the first file, a numeric ``--stop-position``
to the last; GTID positions and domain/server filters apply to all.

Deliberate differences from the C tool: event checksums are verified by
default (``--skip-verify-binlog-checksum`` turns that off), and every read
error names the file and the byte offset of the damaged event (`.ibb` files
too: page CRCs, cut files, a file missing from the sequence or named out of
order).  Option files (``/etc/mysql/...``) are never read; ``--no-defaults``
and the other defaults-file options are accepted and ignored.

The :class:`Dumper` reads and filters; what it accepts goes to a sink
(:mod:`.sink`): the text printer (:mod:`..printer.printer`), or with ``--format=json``
the JSON writer (:mod:`..jsonout`), for ``mariabinlog events`` the SHOW BINLOG
EVENTS listing (:mod:`..listing`), for ``--convert-engine-binlog`` and
``--convert-to-engine-binlog`` the converters (:mod:`..convert`).  Big files
are mapped, printed in bounded steps (the pages already read are handed back,
so memory does not grow with the file) and, when stderr is a terminal, a
progress bar follows the reading (:mod:`.progress`).

This module is the reader loop over legacy files and a primary's stream; `.ibb` files are
read as one stream by :mod:`.ibb`.  The options are parsed in :mod:`.options`
(GTID positions and id filters in :mod:`.gtid_filter`), the command that picks
the sink and runs the loop is :mod:`.cli`; ``--read-from-remote-server``
reads a :data:`RemoteSource` that the ``mariabinlog`` command wires in.
"""

from __future__ import annotations

import logging
import mmap
import os
import sys
from collections.abc import Callable, Generator
from typing import Any, BinaryIO, Protocol

from ...codec.events import (
    CHECKSUM_CRC32,
    CHECKSUM_OFF,
    DEFAULT_CONTEXT,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    HEARTBEAT_LOG_EVENT,
    GTID_LIST_EVENT,
    ROTATE_EVENT,
    START_EVENT_V3,
    DecodeContext,
    event_length,
    event_type,
    event_type_name,
    gtid_fields,
    gtid_head,
    header_fields,
)
from ...codec.checksum import crc32 as checksum_crc32
from ...codec.gtid import Gtid
from ...codec.ibb.page import LEGACY_MAGIC as BINLOG_MAGIC, file_kind
from ...codec.events.stream import crc_field, crc_mismatch, footer_len
from ...errors import (
    ConnectFailedError,
    ConnectionLostError,
    DecodeError,
    EventReadError,
    FlashbackError,
    MariabinlogError,
    MissingFormatDescription,
    OptionError,
    OptionExit,
    ServerError,
)
from ..printer import base as PB
from ..printer import printer as P
from ..printer.base import options_written
from .ibb import IbbStream
from .options import (
    DRAIN_STEP,
    ERROR_STOP,
    OK_CONTINUE,
    OK_STOP,
    PROG,
    DumpOptions,
    base64_mode,
    parse_datetime,
    write_line,
)
from .gtid_filter import GtidFilter

log = logging.getLogger(__name__)

#: Bytes of a mapped binlog between two releases of the pages already printed.
_RELEASE_STEP = 4 << 20


class RemoteEvent(Protocol):
    """One event of a primary's dump stream, as :meth:`Dumper.run_remote` reads it."""

    raw: bytes
    has_checksum: bool
    file: str
    position: int


#: Opens a primary's dump stream for ``--read-from-remote-server``: called with the
#: options (host, port, user, ...), the GTID list to start after, and the file name and
#: offset to start at (file None: by GTID); closing the generator closes the connection.
#: A failure to connect raises :class:`~mariabinlog.errors.ConnectFailedError`.
RemoteSource = Callable[[DumpOptions, str, "str | None", int], Generator[RemoteEvent, None, None]]


# --------------------------------------------------------------------------- the dump


class Dumper:
    """One run of the tool over a list of files."""

    def __init__(
        self,
        opts: DumpOptions,
        err: Any,
        sink: Callable[[Callable[[bytes], Any]], Any] | None = None,
        progress: Any = None,
    ) -> None:
        self.opts = opts
        self.err = err
        self.out_stream: BinaryIO = sys.stdout.buffer
        base64 = PB.BASE64_AUTO
        if opts.base64_output is not None:
            base64 = base64_mode(opts.base64_output)
        rewrite: dict[bytes, bytes] = {}
        for rule in opts.rewrite_db:
            frm, sep, to = rule.partition("->")
            frm, to = frm.strip(), to.strip().split()[0] if to.strip() else ""
            if not sep or not frm or not to:
                raise OptionExit(
                    "ERROR: Bad syntax in rewrite-db. Expected syntax is FROM->TO.", 1
                )
            rewrite[frm.encode()] = to.encode()
        self.popt = P.PrintOptions(
            short_form=opts.short_form,
            verbose=opts.verbose,
            base64_mode=base64,
            hexdump=opts.hexdump,
            print_row_count=opts.print_row_count,
            print_row_event_positions=opts.print_row_event_positions,
            print_table_metadata=opts.print_table_metadata,
            skip_annotate=opts.skip_annotate,
            flashback=opts.flashback,
            database=opts.database.encode() if opts.database is not None else None,
            table=opts.table.encode() if opts.table is not None else None,
            rewrite_db=rewrite,
            local_load=opts.local_load,
        )
        self.base64_mode = base64
        #: Where accepted events go: the text printer, or a sink made by ``sink(write)``.
        self.printer: Any = (
            P.Printer(self._write, self.popt, self._writelines)
            if sink is None
            else sink(self._write)
        )
        #: A :class:`~mariabinlog.tools.dump.progress.ProgressBar` on a terminal, else None.
        self.progress = progress
        try:
            self.gtid_filter = GtidFilter(opts.gtid_options, verbose=opts.verbose)
        except OptionError as exc:
            raise OptionExit(f"ERROR: {exc}", 1) from None
        self.start_position = (
            self.gtid_filter.start_offset
            if self.gtid_filter.start_offset is not None
            else 4
        )
        self.stop_position = self.gtid_filter.stop_offset
        self.filtering = self.gtid_filter.filtering
        # Positions and domain rules switch whole event groups on and off; server
        # rules alone only filter events one by one on their header server id.
        self.group_filtering = bool(
            self.gtid_filter.start_gtids
            or self.gtid_filter.stop_gtids
            or any(
                name in ("do-domain-ids", "ignore-domain-ids")
                for name, _ in opts.gtid_options
            )
        )
        self.group_active = True
        self.start_datetime = (
            parse_datetime(opts.start_datetime)
            if opts.start_datetime is not None
            else None
        )
        self.stop_datetime = (
            parse_datetime(opts.stop_datetime)
            if opts.stop_datetime is not None
            else None
        )
        self.offset = opts.offset
        self.simple = (
            not self.filtering
            and self.offset == 0
            and self.start_datetime is None
            and self.stop_datetime is None
        )
        self.rec_count = 0
        self.stop_reached = False
        self.stop_datetime_reached = False
        self.ibb: IbbStream | None = None
        self.first_file = True
        self.exit_now = False
        self.files: list[str] = []

    def _write(self, data: bytes) -> None:
        self.out_stream.write(data)

    def _writelines(self, items: list[bytes]) -> None:
        # One join and one write: writelines() costs a buffered write call per item, and the
        # printer's items are short lines (a fifth of an OLTP -v dump went to that).
        self.out_stream.write(b"".join(items))

    # ------------------------------------------------------------------ main loop

    def run(self, files: list[str]) -> int:
        p = self.printer
        if p.text_frame:
            self._prologue()
        progress = self.progress
        if progress is not None:
            progress.start(files)
        retval = OK_CONTINUE
        n = len(files)
        self.files = files
        try:
            for index, name in enumerate(files):
                first = index == 0
                last = index == n - 1
                if progress is not None:
                    progress.next_file(index)
                retval = self.dump_file(name, first, last)
                if retval != OK_CONTINUE:
                    break
        finally:
            if progress is not None:
                progress.close()
        if retval != ERROR_STOP and p.text_frame:
            self._epilogue()
        p.drain()
        self.out_stream.flush()
        if self.ibb is not None:
            self.ibb.close()
        if self.exit_now:
            return 1
        diag = self.gtid_filter.finish(offset_stop_reached=self.stop_reached)
        if self.opts.stop_datetime is not None and not self.stop_datetime_reached and retval != ERROR_STOP:
            write_line(
                self.err,
                f"WARNING: Did not reach stop datetime '{self.opts.stop_datetime}' before end of input",
            )
        for line in diag.lines:
            write_line(self.err, line)
        failed = retval == ERROR_STOP or bool(diag.exit_code)
        p.finish(not failed)
        return 1 if failed else 0

    def run_remote(self, source: RemoteSource, files: list[str]) -> int:
        """``--read-from-remote-server``: the same output for a primary's dump stream.

        As ``mariadb-binlog``: each named file in turn on a new connection (the first from
        ``--start-position``, an offset, 4 by default; ``--stop-position`` applies to the
        last), to its end, on through the following files with ``--to-last-log`` or
        ``--stop-never`` (which also waits for more); a GTID ``--start-position`` dumps by
        GTID (one group per domain after it, as a replica would).
        """
        o = self.opts
        p = self.printer
        if p.text_frame and not o.raw:
            self._prologue()
        retval = OK_CONTINUE
        for index, name in enumerate(files):
            retval = self._dump_remote_file(
                source,
                name,
                self.start_position if index == 0 else 4,
                self.stop_position if index == len(files) - 1 else None,
            )
            if retval != OK_CONTINUE:
                break
        if retval != ERROR_STOP and p.text_frame and not o.raw:
            self._epilogue()
        p.drain()
        self.out_stream.flush()
        diag = self.gtid_filter.finish(offset_stop_reached=self.stop_reached)
        for line in diag.lines:
            write_line(self.err, line)
        failed = retval == ERROR_STOP or bool(diag.exit_code)
        p.finish(not failed)
        return 1 if failed else 0

    def _dump_remote_file(
        self, source: RemoteSource, requested: str, start_position: int, stop_position: int | None
    ) -> int:
        """dump_remote_log_entries: one file's dump request, printed as it arrives.

        The primary's artificial Rotate events name the file being sent; they are printed
        only when following on (as the real tool does), and without ``--to-last-log`` the
        first one naming another file than the requested one ends this file.
        """
        o = self.opts
        start = self.gtid_filter.start_gtids
        binlog_file = None if start else requested
        follow = o.to_last_log or o.stop_never
        p = self.printer
        if p.text_frame and not o.raw:
            p.begin_file(requested)
        self.group_active = True  # a fresh PRINT_EVENT_INFO
        p.drain()
        self.out_stream.flush()
        events = source(o, ",".join(str(g) for g in start or ()), binlog_file, start_position)
        retval = OK_CONTINUE
        ctx: DecodeContext = DEFAULT_CONTEXT
        # The "# at" offset is mariadb-binlog's running count from --start-position (old_off,
        # 4 when starting by GTID): artificial events do not advance it, nor does a new file reset it.
        old_off = start_position
        raw_out: BinaryIO | None = None  # --raw: the file being written
        if o.raw and stop_position is not None:
            write_line(self.err, "WARNING: The --stop-position option is ignored in raw mode")
            stop_position = None
        try:
            for item in events:
                raw = item.raw
                code = raw[4]
                if code == HEARTBEAT_LOG_EVENT:
                    continue
                at = old_off
                ev = PB.view_at(raw, 0, at, 4 if item.has_checksum else 0, ctx)
                advance = len(raw)
                if code == ROTATE_EVENT and item.position == 0:
                    # The primary's artificial Rotate: which file comes now (printed only when following).
                    new_file = ev.decoded().next_file.decode("utf-8", "replace")
                    if not follow and new_file != requested:
                        break
                    if o.raw:
                        raw_out = self._raw_file(raw_out, new_file)
                        continue
                    if not follow:
                        continue
                    advance = 0
                elif code == FORMAT_DESCRIPTION_EVENT and old_off != 4:
                    advance = 0
                old_off += advance
                if stop_position is not None and at >= stop_position:
                    self.stop_reached = True
                    retval = OK_STOP
                    break
                if raw_out is not None:
                    raw_out.write(raw)
                    continue
                if code == FORMAT_DESCRIPTION_EVENT:
                    fde = ev.decoded()
                    ctx = fde.context()
                    p.ctx = ctx
                    p.checksum_alg = fde.checksum_alg
                    p.options_written = options_written(fde.server_version)
                retval = self.process(ev, item.file)
                p.drain()
                self.out_stream.flush()
                if retval != OK_CONTINUE:
                    break
        except OptionExit:
            raise
        except ConnectFailedError as exc:
            self.error(f"Failed on connect: {exc.reason}")
            retval = ERROR_STOP
        except ServerError as exc:
            self.error(f"Got error reading packet from server: {exc.message}")
            retval = ERROR_STOP
        except ConnectionLostError as exc:
            # The C client's CR_SERVER_LOST: mariadb-binlog does not reconnect, even with --stop-never.
            # Its words alone for a server that closed between packets (a shutdown); for a cut
            # inside a packet, a reset or a silence, also which server, where and what.
            detail = "" if exc.clean else f" ({exc})"
            self.error(f"Got error reading packet from server: Lost connection to server during query{detail}")
            retval = ERROR_STOP
        except MariabinlogError as exc:
            self.error(f"Got error reading packet from server: {exc}")
            retval = ERROR_STOP
        finally:
            events.close()
            if raw_out is not None:
                raw_out.close()
        if retval != ERROR_STOP and p.text_frame and not o.raw:
            p.end_file()
        return retval

    def _raw_file(self, current: BinaryIO | None, name: str) -> BinaryIO:
        """``--raw``: close ``current`` and start ``name`` (after the ``--result-file`` prefix)
        with the binlog magic, as ``mariadb-binlog`` names and begins the files it writes."""
        if current is not None:
            current.close()
        path = (self.opts.result_file or "") + name
        try:
            out = open(path, "wb")  # noqa: SIM115 - closed at the next file or the end
        except OSError:
            raise OptionExit(f"ERROR: Could not create log file '{path}'", 1) from None
        out.write(BINLOG_MAGIC)
        return out

    def _prologue(self) -> None:
        out = self.printer.out
        out.append(b"/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=1*/;\n")
        out.append(b"/*!40019 SET @@session.max_delayed_threads=0*/;\n")
        if self.opts.disable_log_bin:
            out.append(
                b"/*!32316 SET @OLD_SQL_LOG_BIN=@@SQL_LOG_BIN, SQL_LOG_BIN=0*/;\n"
            )
        out.append(
            b"/*!50003 SET @OLD_COMPLETION_TYPE=@@COMPLETION_TYPE,COMPLETION_TYPE=0*/;\n"
        )
        if self.opts.set_charset:
            cs = self.opts.set_charset.encode()
            out.append(
                b"\n/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;"
                b"\n/*!40101 SET @OLD_CHARACTER_SET_RESULTS=@@CHARACTER_SET_RESULTS */;"
                b"\n/*!40101 SET @OLD_COLLATION_CONNECTION=@@COLLATION_CONNECTION */;"
                b"\n/*!40101 SET NAMES %s */;\n" % cs
            )

    def _epilogue(self) -> None:
        p = self.printer
        out = p.out
        if self.popt.flashback:
            out.extend(reversed(p.flashback_events))
            out.append(b"COMMIT\n/*!*/;\n")
            out.append(p.flashback_stop)
            out.append(b"DELIMITER ;\n")
        out.append(
            b"# End of log file\nROLLBACK /* added by mysqlbinlog */;\n"
            b"/*!50003 SET COMPLETION_TYPE=@OLD_COMPLETION_TYPE*/;\n"
        )
        if self.opts.disable_log_bin:
            out.append(b"/*!32316 SET SQL_LOG_BIN=@OLD_SQL_LOG_BIN*/;\n")
        if self.opts.set_charset:
            out.append(
                b"/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;\n"
                b"/*!40101 SET CHARACTER_SET_RESULTS=@OLD_CHARACTER_SET_RESULTS */;\n"
                b"/*!40101 SET COLLATION_CONNECTION=@OLD_COLLATION_CONNECTION */;\n"
            )
        out.append(b"/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=0*/;\n")
        if self.filtering:
            out.append(
                b"/*!100001 SET @@SESSION.SERVER_ID=@@GLOBAL.SERVER_ID */;\n"
                b"/*!100001 SET @@SESSION.GTID_DOMAIN_ID=@@GLOBAL.GTID_DOMAIN_ID */;\n"
            )

    def _flashback_error(self) -> int:
        """change_to_flashback_event's exit(1): what was written so far, then nothing more."""
        self.printer.drain()
        self.out_stream.flush()
        self.err.write("\nError row length: 0\n")
        self.err.flush()
        self.exit_now = True
        return ERROR_STOP

    def error(self, message: str) -> None:
        self.printer.drain()
        self.out_stream.flush()
        write_line(self.err, "ERROR: " + message)

    # ------------------------------------------------------------------ one file

    def dump_file(self, name: str, first: bool, last: bool) -> int:
        p = self.printer
        p.begin_file(name)
        self.group_active = True
        self.first_file = first
        if name == "-":  # the tool reads a binlog from standard input too
            data_in = sys.stdin.buffer.read()
            if len(data_in) < 4:
                self.error(
                    "Failed reading header; probably an empty file: standard input."
                )
                return ERROR_STOP
            if data_in[:4] != BINLOG_MAGIC:
                self.error("File is not a binary log file: standard input (offset 0).")
                return ERROR_STOP
            retval = self.dump_legacy("-", data_in, first, last)
            if retval != ERROR_STOP:
                p.end_file()
            return retval
        try:
            fd = os.open(name, os.O_RDONLY)
        except FileNotFoundError:
            p.drain()
            write_line(
                self.err,
                f"{PROG}: File '{name}' not found (Errcode: 2 \"No such file or directory\")",
            )
            return ERROR_STOP
        except OSError as exc:
            p.drain()
            write_line(
                self.err,
                f"{PROG}: Can't read file '{name}' (Errcode: {exc.errno} \"{exc.strerror}\")",
            )
            return ERROR_STOP
        try:
            size = os.fstat(fd).st_size
            data: Any = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else b""
        except OSError as exc:  # not a regular file (a directory, a pipe): not mappable
            p.drain()
            write_line(
                self.err,
                f"{PROG}: Can't read file '{name}' (Errcode: {exc.errno} \"{exc.strerror}\")",
            )
            return ERROR_STOP
        finally:
            os.close(fd)
        log.debug("reading '%s' (%d bytes)", name, size)
        try:
            head = bytes(data[:4])
            if len(head) < 4:
                self.error(f"Failed reading header; probably an empty file: '{name}'.")
                return ERROR_STOP
            kind = file_kind(head)
            if kind == "legacy":
                retval = self.dump_legacy(name, data, first, last)
            elif kind in ("ibb", "empty"):
                if self.ibb is None:
                    self.ibb = IbbStream(self)
                retval = self.ibb.dump_file(name, data, first, last)
            else:
                self.error(
                    f"File is not a binary log file: '{name}' (magic {head.hex(' ')} at offset 0)."
                )
                return ERROR_STOP
        finally:
            if isinstance(data, mmap.mmap):
                try:
                    data.close()
                except BufferError:  # a view is still alive; the GC closes it
                    pass
        if retval == ERROR_STOP:
            return retval
        p.end_file()
        return retval

    def dump_legacy(self, name: str, data: Any, first: bool, last: bool) -> int:
        p = self.printer
        size = len(data)
        start = self.start_position if first else 4
        stop = self.stop_position if (last and self.stop_position is not None) else None
        verify = self.opts.verify_checksum
        ctx: DecodeContext = DEFAULT_CONTEXT
        alg = CHECKSUM_OFF
        in_use = False
        pos = 4
        # check_header: with a start position past the Format_description, it is
        # read (and printed, in base64 'auto' mode) before jumping there.
        if start > 4:
            while pos + 19 <= size:
                code = event_type(data, pos)
                length = event_length(data, pos)
                if code == START_EVENT_V3 or pos >= start:
                    break
                if code == FORMAT_DESCRIPTION_EVENT:
                    try:
                        ev = self._frame(
                            name, data, pos, size, CHECKSUM_OFF, verify, ctx
                        )
                    except EventReadError as exc:
                        self.error(self._read_error_text(name, pos, exc.reason))
                        return ERROR_STOP
                    fde = ev.decoded()
                    ctx = fde.context()
                    alg = fde.checksum_alg
                    in_use = bool(ev.flags & 1)
                    p.ctx = ctx
                    p.checksum_alg = alg
                    p.options_written = options_written(fde.server_version)
                    if self.base64_mode == PB.BASE64_AUTO:
                        retval = self.process(ev, name)
                        if retval != OK_CONTINUE:
                            return retval
                    pos += length
                elif code == ROTATE_EVENT:
                    pos += length
                else:
                    break
            pos = start
        # The hot loop: framing and CRC inline, the slow path (_frame) for the
        # Format_description and for anything that is about to fail.
        hdr = header_fields
        crc_at = crc_field
        crc32 = checksum_crc32
        view = P.EventView
        process = self.process
        print_event = p.print_event
        simple = self.simple
        out = p.out
        progress = self.progress
        release = data.madvise if isinstance(data, mmap.mmap) else None
        released = 0
        checkpoint = pos + DRAIN_STEP
        # Whole ordinary groups in compiled code (the printer says when it cannot); groups
        # end by the stop position, as every event printed starts before it.
        groups = p.print_groups if simple else None
        limit = size if stop is None else min(size, stop)
        accept = self.accept_gtid
        mv = memoryview(data)
        try:
            while pos < size:
                if pos + 19 <= size:
                    when, code, server_id, length, log_pos, flags = hdr(data, pos)
                    end = pos + length
                else:
                    code, length, end = -1, 0, size + 1
                reached = pos
                if code == GTID_EVENT and groups is not None:
                    reached, stopped = groups(data, pos, limit, checkpoint, verify, accept)
                    if stopped:
                        return ERROR_STOP
                if reached != pos:
                    pos = reached
                else:
                    if code in (FORMAT_DESCRIPTION_EVENT, START_EVENT_V3) or length < 23 or end > size:
                        try:
                            ev = self._frame(name, data, pos, size, alg, verify, ctx)
                        except EventReadError as exc:
                            return self._read_failed(exc, in_use)
                        if code == START_EVENT_V3:
                            # MySQL 4.x: no Format_description; the Start_v3 sets the v3 layout.
                            try:
                                ctx = ev.ctx = ev.decoded().context()
                            except DecodeError as exc:
                                self.error(self._read_error_text(name, pos, str(exc)))
                                return ERROR_STOP
                            p.ctx = ctx
                        if code == FORMAT_DESCRIPTION_EVENT:
                            try:
                                fde = ev.decoded()
                            except DecodeError as exc:
                                self.error(self._read_error_text(name, pos, str(exc)))
                                return ERROR_STOP
                            ctx = ev.ctx = fde.context()
                            alg = fde.checksum_alg
                            in_use = bool(ev.flags & 1)
                            p.ctx = ctx
                            p.checksum_alg = alg
                            p.options_written = options_written(fde.server_version)
                    elif alg == CHECKSUM_CRC32:
                        crc = crc_at(data, end - 4)[0]
                        if verify and crc != crc32(mv[pos : end - 4]):
                            try:
                                self._frame(name, data, pos, size, alg, verify, ctx)
                            except EventReadError as exc:
                                return self._read_failed(exc, in_use)
                        ev = view(
                            data,
                            pos,
                            pos,
                            when,
                            code,
                            server_id,
                            length,
                            log_pos,
                            flags,
                            end - 4,
                            crc,
                            ctx,
                        )
                    else:
                        ev = view(
                            data,
                            pos,
                            pos,
                            when,
                            code,
                            server_id,
                            length,
                            log_pos,
                            flags,
                            end,
                            None,
                            ctx,
                        )
                    if stop is not None and pos >= stop:
                        self.stop_reached = True
                        return OK_STOP
                    if simple and code != GTID_EVENT and code != GTID_LIST_EVENT:
                        # process_event with nothing to filter: straight to the printer.
                        try:
                            print_event(ev)
                        except MissingFormatDescription as exc:
                            self.error(exc.reason)
                            return ERROR_STOP
                        except FlashbackError:
                            return self._flashback_error()
                        except DecodeError as exc:
                            self.printer.drop_event(ev.position)
                            self.error(
                                self._read_error_text(name, ev.position, str(exc.reason))
                            )
                            return ERROR_STOP
                    else:
                        retval = process(ev, name)
                        if retval:
                            return retval
                    pos = end
                if len(out) > 4096 or pos >= checkpoint:
                    checkpoint = pos + DRAIN_STEP
                    p.drain()
                    if progress is not None:
                        progress.update(pos)
                    if pos - released >= _RELEASE_STEP and release is not None:
                        # Pages read so far leave our RSS (they stay in the page cache).
                        done = pos & -mmap.PAGESIZE
                        release(mmap.MADV_DONTNEED, released, done - released)
                        released = done
        finally:
            mv.release()
        return OK_CONTINUE

    def accept_gtid(self, domain: int, server: int, seq: int) -> bool:
        """The simple path's GTID check (as :meth:`process`), for the printer's compiled
        groups: False once the strict-mode validator stopped the reading."""
        filt = self.gtid_filter
        filt.accept(Gtid(domain, server, seq))
        return not filt.stopped

    def _read_failed(self, exc: EventReadError, in_use: bool) -> int:
        """A damaged event: the end of an in-use binlog (as the tool treats it), else an error.

        Log_event::read_log_event's own line (``ERROR: Error in ...``), where the C tool has
        one, comes first either way.
        """
        if exc.c_reason is not None:
            self.printer.drain()
            write_line(
                self.err,
                f"ERROR: Error in Log_event::read_log_event(): '{exc.c_reason}', "
                f"data_len: {exc.data_len}, event_type: {exc.event_type}",
            )
        if in_use:
            return OK_CONTINUE
        self.error(self._read_error_text(exc.file or "", exc.offset or 0, exc.reason))
        return ERROR_STOP

    def _read_error_text(self, name: str, pos: int, detail: str) -> str:
        return f"Could not read entry at offset {pos} of '{name}': Error in log format or read error ({detail})."

    def _frame(
        self,
        name: str,
        data: Any,
        pos: int,
        size: int,
        alg: int,
        verify: bool,
        ctx: DecodeContext,
    ) -> P.EventView:
        """Frame (and CRC-check) the event at ``pos``; EventReadError names the file and offset."""
        if pos + 19 > size:
            raise EventReadError(
                f"truncated event header: {size - pos} of 19 bytes", offset=pos, file=name
            )
        length = event_length(data, pos)
        if length < 19:
            raise EventReadError(
                f"event length {length} is below the 19-byte header", offset=pos, file=name
            )
        if pos + length > size:
            raise EventReadError(
                f"event truncated: {event_type_name(event_type(data, pos))} event of {length} bytes, "
                f"only {size - pos} left in the file",
                offset=pos,
                file=name,
                c_reason="Event truncated",
                data_len=length,
                event_type=event_type(data, pos),
            )
        code = event_type(data, pos)
        crc_len = footer_len(data, pos, length, alg)
        if crc_len and length < 23:
            raise EventReadError(
                f"event length {length} leaves no room for its CRC32", offset=pos, file=name
            )
        bad = crc_mismatch(data, pos, length) if verify and crc_len else None
        if bad is not None:
            raise EventReadError(
                f"event crc check failed: {event_type_name(code)} event stored CRC32 0x{bad[0]:08x}, "
                f"computed 0x{bad[1]:08x}",
                offset=pos,
                file=name,
                c_reason="Event crc check failed! Most likely there is event corruption.",
                data_len=length,
                event_type=code,
            )
        if code == FORMAT_DESCRIPTION_EVENT:
            crc_len = 0
        return PB.view_at(data, pos, pos, crc_len, ctx)

    # ------------------------------------------------------------------ process_event

    def process(self, ev: P.EventView, name: str) -> int:
        """process_event: offsets, datetimes, positions, GTID filters, then printing."""
        code = ev.type_code
        if self.simple:
            # No offset, datetime, position or id filter: only the strict-mode validator
            # watches the GTIDs, and the first Gtid_list is checked.
            try:
                if code == GTID_EVENT:  # a body shorter than the head: the printer's error
                    seq_no, domain_id, _ = gtid_fields(ev.buf, ev.body_pos, ev.body_end)
                    filt = self.gtid_filter
                    filt.accept(Gtid(domain_id, ev.server_id, seq_no))
                    if filt.stopped:
                        return ERROR_STOP
                elif (
                    code == GTID_LIST_EVENT
                    and self.first_file
                    and not self._gtid_list(ev)
                ):
                    return ERROR_STOP
                self.printer.print_event(ev)
            except MissingFormatDescription as exc:
                self.error(exc.reason)
                return ERROR_STOP
            except FlashbackError:
                return self._flashback_error()
            except DecodeError as exc:
                self.printer.drop_event(ev.position)
                self.error(self._read_error_text(name, ev.position, str(exc.reason)))
                return ERROR_STOP
            return OK_CONTINUE
        try:
            if code == GTID_LIST_EVENT and self.first_file and not self._gtid_list(ev):
                return ERROR_STOP
            if code == FORMAT_DESCRIPTION_EVENT or (
                self.rec_count >= self.offset
                and (self.start_datetime is None or ev.when >= self.start_datetime)
            ):
                if code != FORMAT_DESCRIPTION_EVENT:
                    self.start_datetime = None
                    self.offset = 0
                if self.stop_datetime is not None and ev.when >= self.stop_datetime:
                    self.stop_datetime_reached = True
                    return OK_STOP
                filt = self.gtid_filter
                if code == GTID_EVENT:
                    if ev.body_end - ev.body_pos >= 13:
                        seq_no, domain_id, _ = gtid_head(ev.buf, ev.body_pos)
                    else:
                        g = ev.decoded()
                        seq_no, domain_id = g.seq_no, g.domain_id
                    reached = filt.all_stops_reached
                    accepted = filt.accept(Gtid(domain_id, ev.server_id, seq_no))
                    if self.group_filtering:
                        self.group_active = accepted
                    if filt.stopped:
                        return OK_STOP if reached else ERROR_STOP
                if not self.group_active:
                    # Everything after a group the filters turned off is off until the next
                    # GTID, a Format_description too: only a new file (a fresh
                    # PRINT_EVENT_INFO) starts active; a remote --to-last-log stream does not.
                    return OK_CONTINUE
                if (
                    code != FORMAT_DESCRIPTION_EVENT
                    and code != ROTATE_EVENT
                    and not filt.server_allowed(ev.server_id)
                ):
                    return OK_CONTINUE
                self.printer.print_event(ev)
        except MissingFormatDescription as exc:
            self.error(exc.reason)
            return ERROR_STOP
        except FlashbackError:
            return self._flashback_error()
        except DecodeError as exc:
            self.error(self._read_error_text(name, ev.position, str(exc.reason)))
            return ERROR_STOP
        finally:
            self.rec_count += 1
        return OK_CONTINUE

    def _gtid_list(self, ev: P.EventView) -> bool:
        """Feed a Gtid_list of the first file to the filter; False when reading must stop.

        Only the first file's list is checked against the positions (probed), and the
        tool sorts the list (by domain, then seq_no) before its validator sees it.
        """
        gl = ev.decoded()
        ordered = sorted(gl.gtids, key=lambda g: (g[0], g[2]))
        return self.gtid_filter.gtid_list(Gtid(*g) for g in ordered)
