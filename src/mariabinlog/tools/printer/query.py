"""Printing of statement events as ``mariadb-binlog`` does: the session ``SET`` lines a
Query event prints when they changed, the query itself, User_var and the LOAD DATA events.

:class:`QueryFamily` owns the session state last printed (current database, pseudo thread
id, ``Q_FLAGS2``, ``sql_mode``, charsets, time zone, ...), the status-variable cache and the
LOAD DATA files; it talks to the rest of the printer only through its
:class:`~.base.PrintContext` (output lists, options, the header comment, the file's decoding
context and ``options_written``, the last GTID's flags, the schema tracker).
"""

from __future__ import annotations

import os
from typing import Any

from ...codec.events import (
    query_sections,
    query_status_bytes,
    LOAD_OPT_ENCLOSED_F,
    LOAD_IGNORE_F,
    LOAD_REPLACE_F,
    CreateFileEvent,
    LOAD_DUP_REPLACE,
    ExecuteLoadQueryEvent,
    BEGIN_LOAD_QUERY_EVENT,
    EXECUTE_LOAD_QUERY_EVENT,
    decompress_block,
    FL_COMMIT_ALTER_E1,
    FL_COMPLETED_XA,
    FL_PREPARED_XA,
    FL_ROLLBACK_ALTER_E1,
    FL_START_ALTER_E1,
    LOG_EVENT_SUPPRESS_USE_F,
    LOG_EVENT_THREAD_SPECIFIC_F,
    Q_HRNOW,
    Q_XID,
    QUERY_COMPRESSED_EVENT,
    QueryEvent,
    USER_VAR_DECIMAL,
    USER_VAR_INT,
    USER_VAR_REAL,
    USER_VAR_STRING,
)
from ...codec.events.session import (
    FLAGS2_VERSIONED,
    SessionContext,
    auto_increment_assignment,
    character_set_collations_text,
    collation_database_value,
    flags2_assignments,
    session_context,
)
from ...codec.rows.packed import decimal_str
from ...codec import charsets
from .rows import _pretty_str
from .base import (
    _backtick,
    BASE64_DECODE_ROWS,
    _base64_lines,
    BASE64_NEVER,
    DELIM,
    EventView,
    _format_g14,
    PrintContext,
    PrintFamily,
)


def _is_trans_keyword(query: bytes, is_xa: bool) -> bool:
    """Query_log_event::is_trans_keyword (strncmp semantics, prefixes included)."""
    return (
        b"BEGIN".startswith(query)
        or b"COMMIT".startswith(query)
        or query[:9].upper() == b"SAVEPOINT"
        or query[:8].upper() == b"ROLLBACK"
        or (is_xa and query[:3].upper() == b"XA ")
    )


class _QueryParts:
    """What the printer reads of a Query event."""

    __slots__ = ("database", "error_code", "exec_time", "query", "session", "status", "thread_id")

    def __init__(
        self,
        thread_id: int,
        exec_time: int,
        error_code: int,
        status: dict[int, Any],
        session: SessionContext,
        database: bytes,
        query: bytes,
    ) -> None:
        self.thread_id = thread_id
        self.exec_time = exec_time
        self.error_code = error_code
        self.status = status
        self.session = session
        self.database = database
        self.query = query


_QUERY_NAMES = {
    QUERY_COMPRESSED_EVENT: b"Query_compressed",
    EXECUTE_LOAD_QUERY_EVENT: b"Execute_load_query",
}


class LoadFiles:
    """The files LOAD DATA events rebuild (the tool's Load_log_processor): a new file per
    Begin_load_query, named ``SQL_LOAD_MB-<file id>-<n>`` (hexadecimal, the first free n)
    in ``directory`` (``--local-load``, else $TMPDIR, else /tmp)."""

    def __init__(self, directory: str | None = None) -> None:
        self.directory = directory
        self.open_files: dict[int, str] = {}

    def _dir(self) -> str:
        return self.directory or os.environ.get("TMPDIR") or "/tmp"

    def create(self, file_id: int, block: bytes, name: str = "SQL_LOAD_MB") -> None:
        """Start the file of ``file_id`` with its first block (``name``: the base name of a
        pre-5.0 Create_file's file, else SQL_LOAD_MB)."""
        base = os.path.join(self._dir(), "%s-%x" % (name, file_id))
        for n in range(0x10000):
            path = f"{base}-{n:x}"
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)
            except FileExistsError:
                continue
            except OSError:
                return
            with os.fdopen(fd, "wb") as handle:
                handle.write(block)
            self.open_files[file_id] = path
            return

    def append(self, file_id: int, block: bytes) -> None:
        """Add a block to the file of ``file_id`` (none: the block is dropped, as the tool does)."""
        path = self.open_files.get(file_id)
        if path is not None:
            with open(path, "ab") as handle:
                handle.write(block)

    def take(self, file_id: int) -> bytes | None:
        """The file name of ``file_id``, forgotten afterwards (Load_log_processor::grab_fname)."""
        path = self.open_files.pop(file_id, None)
        return None if path is None else path.encode()


class QueryFamily(PrintFamily):
    """Query (plain, compressed, Execute_load_query), User_var and the LOAD DATA events;
    owns the session state they print only when it changed.

    Handlers (for the Printer's dispatch table): :meth:`query`, :meth:`user_var_event`,
    :meth:`load_block`, :meth:`create_file`, :meth:`exec_load`.
    """

    def __init__(self, pc: PrintContext) -> None:
        super().__init__(pc)
        self._status_cache: dict[bytes, tuple[dict[int, Any], Any]] = {}
        #: LOAD DATA files rebuilt from Begin_load_query/Append_block events (one set per dump).
        self.load_files = LoadFiles(pc.opt.local_load)
        #: Create_file events waiting for their Exec_load, by file id.
        self.load_events: dict[int, EventView] = {}
        self.reset()

    def reset(self) -> None:
        """A fresh PRINT_EVENT_INFO's session state (one per input file)."""
        self.db = b""
        self.charset: bytes | None = None
        self.time_zone = b""
        self.flags2: int | None = None
        self.sql_mode: bytes | None = None
        self.auto_increment = (0, 0)
        self.lc_time_names = -1
        self.charset_database = -1
        self.thread_id = 0
        self.thread_id_printed = False

    def user_var_event(self, ev: EventView) -> None:
        self.pc.skip_replication_statement(ev.flags)
        self.user_var(ev, self.head)
        self.pc.flush_head()

    def query_parts(self, ev: EventView) -> _QueryParts:
        """Post-header, status variables (cached by their bytes), database and text of a Query."""
        buf = ev.buf
        bp = ev.body_pos
        code = ev.type_code
        post = self.pc.ctx.post_header_len(code)
        if post >= 13 and bp + post <= ev.body_end:
            sections = query_sections(buf, bp, post, ev.body_end)
            if sections is not None:
                thread_id, exec_time, error_code, key, db, q = sections
                cached = self._status_cache.get(key)
                if cached is not None:
                    if code == QUERY_COMPRESSED_EVENT:
                        text = decompress_block(buf, q, ev.body_end)
                    else:
                        text = bytes(buf[q : ev.body_end])
                    return _QueryParts(
                        thread_id, exec_time, error_code, cached[0], cached[1], db, text
                    )
        decoded: QueryEvent = ev.decoded()
        status = dict(decoded.status_vars)
        session = session_context(status)
        if len(self._status_cache) > 4096:
            self._status_cache.clear()
        if post >= 13:
            self._status_cache[query_status_bytes(buf, bp, post)] = (status, session)
        return _QueryParts(
            decoded.thread_id,
            decoded.exec_time,
            decoded.error_code,
            status,
            session,
            decoded.database,
            decoded.query,
        )

    def query(self, ev: EventView) -> None:
        pc = self.pc
        if pc.schema is not None:
            pc.schema.observe_query(ev.decoded(), file=pc.schema_file, pos=ev.position, gtid=pc.schema_gtid)
        q = self.query_parts(ev)
        opt = self.opt
        is_xa = bool(pc.gtid_flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA))
        flags = ev.flags
        query = q.query
        if not _is_trans_keyword(query, is_xa):
            if opt.database is not None and q.database != opt.database:
                return
        else:
            flags |= LOG_EVENT_SUPPRESS_USE_F
        # print_use_stmt: the rewritten database gets its own USE here.
        db = q.database
        if (
            not flags & LOG_EVENT_SUPPRESS_USE_F
            and self.db != db
            and db in opt.rewrite_db
        ):
            self.out.append(b"use %s%s\n" % (_backtick(opt.rewrite_db[db]), DELIM))
            self.db = db
        pc.skip_replication_statement(flags)
        h = self.head
        self.query_header(ev, q, flags, is_xa, h)
        load = ev.decoded() if ev.type_code == EXECUTE_LOAD_QUERY_EVENT else None
        if load is not None:
            query = self._load_statement(load)
        gtid_extra = pc.gtid_flags_extra
        # Execute_load_query prints its statement even with --flashback (its own print()).
        if not opt.flashback or load is not None:
            if gtid_extra & (
                FL_START_ALTER_E1 | FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1
            ):
                encoded = (
                    opt.base64_mode not in (BASE64_NEVER, BASE64_DECODE_ROWS)
                    and not opt.short_form
                )
                comment = encoded and gtid_extra & (
                    FL_START_ALTER_E1 | FL_ROLLBACK_ALTER_E1
                )
                if comment:
                    h.append(b"/*!100600 ")
                if encoded:
                    h.append(b"BINLOG '\n")
                    _base64_lines(ev.raw(), h)
                    h.append(b"' */%s\n" % DELIM if comment else b"'%s\n" % DELIM)
                if opt.verbose:
                    h.append(b"### " + query + b"\n")
            else:
                h.append(query)
                h.append(b"\n%s\n" % DELIM)
                if load is not None and not opt.short_form:
                    h.append(b"# file_id: %d \n" % load.file_id)
        else:
            if query == b"BEGIN":
                h.append(b"COMMIT\n%s\n" % DELIM)
            elif query == b"COMMIT":
                h.append(b"START TRANSACTION\n%s\n" % DELIM)
        if load is not None:
            # ... straight to the output, not kept for --flashback's reversed events.
            self.out.extend(h)
            h.clear()
            return
        pc.release_owned()

    def _load_statement(self, load: ExecuteLoadQueryEvent) -> bytes:
        """Execute_load_query_log_event::print: the statement reading the file the load
        blocks were written to (``LOCAL INFILE``), or as logged when there is none."""
        path = self.load_files.take(load.file_id)
        query = load.query
        if path is None:
            return query
        return (
            query[: load.fn_pos_start]
            + b" LOCAL INFILE "
            + _pretty_str(path)
            + (b" REPLACE" if load.dup_handling == LOAD_DUP_REPLACE else b"")
            + b" INTO"
            + query[load.fn_pos_end :]
        )

    def load_block(self, ev: EventView) -> None:
        """Begin_load_query / Append_block: the block goes to its LOAD DATA file (as the tool's
        Load_log_processor writes it), the event prints one comment line."""
        block = ev.decoded()
        begin = ev.type_code == BEGIN_LOAD_QUERY_EVENT
        if begin:
            self.load_files.create(block.file_id, block.block)
        else:
            self.load_files.append(block.file_id, block.block)
        if self.opt.short_form:
            return
        h = self.head
        self.header(ev, h)
        h.append(
            b"\n#%s: file_id: %d  block_len: %d\n"
            % (b"Begin_load_query" if begin else b"Append_block", block.file_id, len(block.block))
        )
        self.pc.flush_head()

    def create_file(self, ev: EventView) -> None:
        """Create_file (pre-5.0 LOAD DATA): printed commented out, its file started; the
        statement itself is printed at its Exec_load, reading the rebuilt file."""
        cf = ev.decoded()
        if not self.opt.short_form:
            h = self.head
            self._print_load(ev, cf, None, h)
            h.append(b"# file_id: %d  block_len: %d\n" % (cf.file_id, len(cf.block)))
            self.pc.flush_head()
        base = os.path.basename(cf.file_name).decode("utf-8", "surrogateescape")
        self.load_files.create(cf.file_id, cf.block, base)
        self.load_events[cf.file_id] = ev

    def exec_load(self, ev: EventView) -> None:
        """Exec_load: the Create_file's statement again, with ``LOCAL INFILE`` and the rebuilt file."""
        file_id = ev.decoded().file_id
        h = self.head
        if not self.opt.short_form:
            self.header(ev, h)
            h.append(b"\n#Exec_load: file_id=%d\n" % file_id)
        created = self.load_events.pop(file_id, None)
        path = self.load_files.take(file_id)
        if created is None or path is None:
            h.append(b"# Warning: ignoring Exec_load as there is no Create_file event for file_id: %d\n" % file_id)
        else:
            cf = created.decoded()
            created.hexdump_from = ev.position  # --hexdump shows where it is printed again
            self._print_load(created, cf, path, h)
            if not self.opt.short_form:
                h.append(b"# file_id: %d  block_len: %d\n" % (cf.file_id, len(cf.block)))
        self.pc.flush_head()

    def _print_load(self, ev: EventView, cf: CreateFileEvent, path: bytes | None, h: list[bytes]) -> None:
        """Load_log_event::print: commented out (``path`` None) or reading the local file."""
        mark = b"# " if path is None else b""
        if not self.opt.short_form:
            self.header(ev, h)
            h.append(b"\tQuery\tthread_id=%d\texec_time=%d\n" % (cf.thread_id, cf.exec_time))
        if cf.database != self.db:
            self.db = cf.database
            if cf.database:
                h.append(b"%suse %s%s\n" % (mark, _backtick(cf.database), DELIM))
        if ev.flags & LOG_EVENT_THREAD_SPECIFIC_F:
            h.append(b"%sSET @@session.pseudo_thread_id=%d%s\n" % (mark, cf.thread_id, DELIM))
        parts = [mark, b"LOAD DATA ", b"INFILE '%s' " % (cf.file_name if path is None else path)]
        if path is not None:
            parts.insert(2, b"LOCAL ")
        if cf.opt_flags & LOAD_REPLACE_F:
            parts.append(b"REPLACE ")
        elif cf.opt_flags & LOAD_IGNORE_F:
            parts.append(b"IGNORE ")
        parts.append(b"INTO TABLE `%s`" % cf.table)
        parts.append(b" FIELDS TERMINATED BY " + _pretty_str(cf.field_term))
        if cf.opt_flags & LOAD_OPT_ENCLOSED_F:
            parts.append(b" OPTIONALLY ")
        parts.append(b" ENCLOSED BY " + _pretty_str(cf.enclosed))
        parts.append(b" ESCAPED BY " + _pretty_str(cf.escaped))
        parts.append(b" LINES TERMINATED BY " + _pretty_str(cf.line_term))
        parts.append(b" STARTING BY " + _pretty_str(cf.line_start))
        if cf.skip_lines > 0:
            parts.append(b" IGNORE %d LINES" % cf.skip_lines)
        if cf.fields:
            parts.append(b" (" + b",".join(_backtick(f) for f in cf.fields) + b")")
        h.append(b"".join(parts) + DELIM + b"\n")

    def query_header(
        self, ev: EventView, q: _QueryParts, flags: int, is_xa: bool, h: list[bytes]
    ) -> None:
        """Query_log_event::print_query_header: header comment and the changed session SETs."""
        opt = self.opt
        status = q.status
        if not opt.short_form:
            self.header(ev, h)
            h.append(
                b"\t%s\tthread_id=%d\texec_time=%d\terror_code=%d\txid=%d\n"
                % (
                    _QUERY_NAMES.get(ev.type_code, b"Query"),
                    q.thread_id,
                    q.exec_time,
                    q.error_code,
                    status.get(Q_XID, 0),
                )
            )
        if flags & LOG_EVENT_SUPPRESS_USE_F:
            if not _is_trans_keyword(q.query, is_xa):
                self.db = b""
        else:
            db = q.database
            if self.db != db:
                self.db = db
                if db:
                    h.append(b"use %s%s\n" % (_backtick(db), DELIM))
        sec_part = status.get(Q_HRNOW)
        if sec_part:
            h.append(b"SET TIMESTAMP=%d.%06d%s\n" % (ev.when, sec_part, DELIM))
        else:
            h.append(b"SET TIMESTAMP=%d%s\n" % (ev.when, DELIM))
        if not self.thread_id_printed or (
            flags & LOG_EVENT_THREAD_SPECIFIC_F and q.thread_id != self.thread_id
        ):
            h.append(
                b"SET @@session.pseudo_thread_id=%d%s\n"
                % (999999999 if opt.short_form else q.thread_id, DELIM)
            )
            self.thread_id = q.thread_id
            self.thread_id_printed = True
        session = q.session
        flags2 = session.flags2
        if flags2 is not None:
            changed = 0xFFFFFFFF if self.flags2 is None else (self.flags2 ^ flags2)
            if changed:
                bits = changed & ~(FLAGS2_VERSIONED & ~self.pc.options_written)
                h.append(b"SET " + flags2_assignments(flags2, bits) + b"%s\n" % DELIM)
                self.flags2 = flags2
        sql_mode = session.sql_mode
        if sql_mode is not None and sql_mode != self.sql_mode:
            h.append(b"SET @@session.sql_mode=%s%s\n" % (sql_mode, DELIM))
            self.sql_mode = sql_mode
        auto_inc = session.auto_increment
        if auto_inc != self.auto_increment:
            h.append(b"SET " + auto_increment_assignment(auto_inc) + b"%s\n" % DELIM)
            self.auto_increment = auto_inc
        charset = session.charset
        if charset is not None and charset != self.charset:
            cs_name = charsets.charset_name(charset[0])
            if cs_name is not None:
                h.append(b"/*!\\C %s */%s\n" % (cs_name.encode(), DELIM))
            else:
                h.append(b"# Ignored (Unknown charset) ")
            h.append(
                b"SET @@session.character_set_client=%s,@@session.collation_connection=%d,"
                b"@@session.collation_server=%d%s\n"
                % ((cs_name or "Unknown").encode(), charset[1], charset[2], DELIM)
            )
            self.charset = charset
        collations = session.collations
        if collations:
            text = character_set_collations_text(collations)
            if text is not None:
                h.append(b"SET @@session.character_set_collations='%s'%s\n" % (text, DELIM))
            else:
                h.append(
                    b"/* SET @@session.character_set_collations='<format not recognized>' */\n"
                )
        tz = session.time_zone
        if tz and tz != self.time_zone:
            h.append(b"SET @@session.time_zone='%s'%s\n" % (tz, DELIM))
            self.time_zone = tz
        lc = session.lc_time_names
        if lc != self.lc_time_names:
            h.append(b"SET @@session.lc_time_names=%d%s\n" % (lc, DELIM))
            self.lc_time_names = lc
        cdb = session.charset_database
        if cdb != self.charset_database:
            h.append(b"SET @@session.collation_database=%s%s\n" % (collation_database_value(cdb), DELIM))
            self.charset_database = cdb

    def user_var(self, ev: EventView, h: list[bytes]) -> None:
        uv = ev.decoded()
        if not self.opt.short_form:
            self.header(ev, h)
            h.append(b"\tUser_var\n")
        h.append(b"SET @" + _backtick(uv.var_name))
        if uv.is_null:
            h.append(b":=NULL%s\n" % DELIM)
            return
        vt = uv.value_type
        val = uv.value
        value = uv.decoded_value()
        if vt == USER_VAR_REAL:
            h.append(b":=%s%s\n" % (_format_g14(value), DELIM))
        elif vt == USER_VAR_INT:
            h.append(b":=%d%s\n" % (value, DELIM))
        elif vt == USER_VAR_DECIMAL:
            h.append(b":=%s%s\n" % (decimal_str(value), DELIM))
        elif vt == USER_VAR_STRING:
            hexed = b"X'" + val.hex().upper().encode() + b"'" if val else b"''"
            entry = charsets.COLLATIONS.get(uv.charset)
            if entry is None:
                h.append(b":=???%s\n" % DELIM)
            else:
                h.append(
                    b":=_%s %s COLLATE `%s`%s\n"
                    % (entry[0].encode(), hexed, entry[1].encode(), DELIM)
                )
