"""``mariabinlog events FILE...`` and ``mariabinlog files DIR``: SHOW BINLOG EVENTS / SHOW BINARY LOGS.

``events`` prints what ``SHOW BINLOG EVENTS IN '<file>'`` returns on the
server that wrote the file, as the ``mariadb`` client prints it in batch
mode (``-B``): a header row, then tab-separated ``Log_name, Pos, Event_type,
Server_id, End_log_pos, Info`` with the client's escaping (``\\t``, ``\\n``,
``\\0``, ``\\\\``).  The Info texts follow the server's ``pack_info`` methods;
statement texts go through the server's conversion of the Info column
(utf8mb3 to the client's utf8mb4): a byte that does not start a valid 1..3
byte UTF-8 sequence becomes ``?`` (so a 4-byte emoji shows as ``????``).
Files are read by the same machinery as ``dump`` (legacy and `.ibb`, checksums
verified, damaged input reported with file and offset), so ``--start-position``,
``--stop-position`` and the other ``dump`` filters work here too.

For `.ibb` files (which the server lists through the engine), ``Pos`` and
``End_log_pos`` are the byte offsets where the event's commit record starts
and ends: all events of one group share them.  ``End_log_pos`` is an offset in
the next file when the record continues there.

``files`` prints ``SHOW BINARY LOGS`` for a directory: ``Log_name`` and
``File_size`` of its binlog files in order (:func:`.binlog_dir.binary_logs`).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from typing import Any
from decimal import Decimal

from ..codec.events import (
    ANNOTATE_ROWS_EVENT,
    BINLOG_CHECKPOINT_EVENT,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    FL_STANDALONE,
    FORMAT_DESCRIPTION_EVENT,
    GTID_EVENT,
    GTID_LIST_EVENT,
    INCIDENT_EVENT,
    INTVAR_EVENT,
    LOG_EVENT_SUPPRESS_USE_F,
    Q_FLAGS2_CODE,
    QUERY_COMPRESSED_EVENT,
    QUERY_EVENT,
    RAND_EVENT,
    ROTATE_EVENT,
    ROWS_KIND,
    TABLE_MAP_EVENT,
    USER_VAR_EVENT,
    USER_VAR_STRING,
    XA_PREPARE_LOG_EVENT,
    XID_EVENT,
    event_type_name,
    serialize_xid,
)
from ..codec import charsets
from ..codec.rows.packed import decimal_str
from .binlog_dir import binary_logs
from ..codec.events.session import OPTION_NO_FOREIGN_KEY_CHECKS, OPTION_RELAXED_UNIQUE_CHECKS
from .printer.base import _backtick
from .dump.sink import EventSink

HEADER = b"Log_name\tPos\tEvent_type\tServer_id\tEnd_log_pos\tInfo\n"
_ESCAPES = {0: b"\\0", 9: b"\\t", 10: b"\\n", 92: b"\\\\"}
_NEEDS_ESCAPE = re.compile(rb"[\x00\t\n\\]")
_UTF8MB3 = re.compile(
    rb"[\x00-\x7f]|[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xef][\x80-\xbf]{2}|(.)",
    re.DOTALL,
)


def batch_escape(value: bytes) -> bytes:
    """A field as ``mariadb -B`` prints it: NUL, tab, newline and backslash escaped."""
    if _NEEDS_ESCAPE.search(value) is None:
        return value
    return _NEEDS_ESCAPE.sub(lambda m: _ESCAPES[m.group()[0]], value)


def as_utf8mb3(text: bytes) -> bytes:
    """The server's conversion of Info text: bytes outside valid 1..3-byte UTF-8 become ``?``."""
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        decoded = None
    if decoded is not None and (decoded.isascii() or max(decoded) <= "\uffff"):
        return text
    return _UTF8MB3.sub(lambda m: b"?" if m.group(1) is not None else m.group(), text)


def _gcvt17(value: float) -> bytes:
    """my_gcvt(..., MY_GCVT_ARG_DOUBLE, 17 digits): the shortest repr that reads back."""
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent):+03d}"
    return text.removesuffix(".0").encode()


def event_info(ev: Any) -> bytes:
    """The Info column of SHOW BINLOG EVENTS for one event (``Log_event::pack_info``)."""
    code = ev.type_code
    if code == QUERY_EVENT or code == QUERY_COMPRESSED_EVENT:
        q = ev.decoded()
        text = b""
        if not ev.flags & LOG_EVENT_SUPPRESS_USE_F and q.database:
            text = b"use " + _backtick(q.database) + b"; "
        flags2 = q.status(Q_FLAGS2_CODE) or 0
        if flags2 & (OPTION_NO_FOREIGN_KEY_CHECKS | OPTION_RELAXED_UNIQUE_CHECKS):
            sets = []
            if flags2 & OPTION_NO_FOREIGN_KEY_CHECKS:
                sets.append(b"foreign_key_checks=0")
            if flags2 & OPTION_RELAXED_UNIQUE_CHECKS:
                sets.append(b"unique_checks=0")
            text += b"set " + b", ".join(sets) + b"; "
        # The Info String is utf8mb3 (system_charset_info), converted on its way out.
        return as_utf8mb3(text + q.query)
    if code in ROWS_KIND:
        r = ev.decoded()
        return b"table_id: %d%s" % (r.table_id, b" flags: STMT_END_F" if r.stmt_end else b"")
    if code == TABLE_MAP_EVENT:
        t = ev.decoded()
        name = t.schema.encode("utf-8", "surrogateescape") + b"." + t.table.encode("utf-8", "surrogateescape")
        return b"table_id: %d (%s)" % (t.table_id, as_utf8mb3(name))
    if code == GTID_EVENT:
        g = ev.decoded()
        if g.flags2 & FL_STANDALONE:
            text = b"GTID "
        elif g.flags2 & FL_PREPARED_XA:
            text = b"XA START " + serialize_xid(g.xa_format_id or 0, g.xa_gtrid, g.xa_bqual) + b" GTID "
        else:
            text = b"BEGIN GTID "
        text += b"%d-%d-%d" % (g.domain_id, ev.server_id, g.seq_no)
        if g.flags2 & FL_GROUP_COMMIT_ID:
            text += b" cid=%d" % (g.commit_id or 0)
        return text
    if code == XID_EVENT:
        return b"COMMIT /* xid=%d */" % ev.decoded().xid
    if code == ANNOTATE_ROWS_EVENT:
        return ev.decoded().query  # stored as binary: no conversion
    if code == FORMAT_DESCRIPTION_EVENT:
        fd = ev.decoded()
        return b"Server ver: %s, Binlog ver: %d" % (fd.server_version.encode(), fd.binlog_version)
    if code == GTID_LIST_EVENT:
        gl = ev.decoded()
        items = sorted(gl.gtids, key=lambda g: (g[0], g[2]))  # the server sorts the list
        return b"[" + b",".join(b"%d-%d-%d" % g for g in items) + b"]"
    if code == BINLOG_CHECKPOINT_EVENT:
        return ev.decoded().filename
    if code == ROTATE_EVENT:
        r = ev.decoded()
        return b"%s;pos=%d" % (r.next_file, r.next_position)
    if code == INTVAR_EVENT:
        i = ev.decoded()
        return b"%s=%d" % (b"LAST_INSERT_ID" if i.kind == 1 else b"INSERT_ID", i.value)
    if code == RAND_EVENT:
        r = ev.decoded()
        return b"rand_seed1=%d,rand_seed2=%d" % (r.seed1, r.seed2)
    if code == USER_VAR_EVENT:
        return _user_var_info(ev.decoded())
    if code == XA_PREPARE_LOG_EVENT:
        x = ev.decoded()
        xid = serialize_xid(x.format_id, x.gtrid, x.bqual)
        return b"XA COMMIT %s ONE PHASE" % xid if x.one_phase else b"XA PREPARE %s" % xid
    if code == INCIDENT_EVENT:
        inc = ev.decoded()
        return b"#%d (%s)" % (inc.incident, b"LOST_EVENTS" if inc.incident == 1 else b"NONE") + (
            b" " + inc.message if inc.message else b""
        )
    return b""


def _user_var_info(uv: Any) -> bytes:
    head = b"@" + _backtick(uv.var_name) + b"="
    value = uv.decoded_value()
    if value is None:
        return head + b"NULL"
    if isinstance(value, float):
        return head + _gcvt17(value)
    if isinstance(value, int):
        return head + b"%d" % value
    if isinstance(value, Decimal):
        return head + decimal_str(value)
    if uv.value_type == USER_VAR_STRING:
        entry = charsets.COLLATIONS.get(uv.charset)
        cs, coll = (entry[0].encode(), entry[1].encode()) if entry else (b"???", b"???")
        return head + b"_%s X'%s' COLLATE %s" % (cs, value.hex().upper().encode(), coll)
    return head


class ListingSink(EventSink):
    """SHOW BINLOG EVENTS rows for the events the dumper accepts."""

    record_positions = True

    def __init__(self, write: Callable[[bytes], Any]) -> None:
        super().__init__(write)
        self.out.append(HEADER)
        self.log_name = b""

    def begin_file(self, name: str = "") -> None:
        super().begin_file(name)
        self.log_name = batch_escape(os.path.basename(name).encode("utf-8", "surrogateescape"))

    def print_event(self, ev: Any) -> None:
        self.out.append(
            b"%s\t%d\t%s\t%d\t%d\t%s\n"
            % (
                self.log_name,
                ev.position,
                event_type_name(ev.type_code).encode(),
                ev.server_id,
                ev.log_pos,
                batch_escape(event_info(ev)),
            )
        )


#: ``mariabinlog events --help``.
EVENTS_HELP = """Usage: mariabinlog events [options] FILE|DIR...

Lists the events of binlog files (legacy and .ibb) as the server's SHOW BINLOG EVENTS
does: one tab-separated line per event with Log_name, Pos, Event_type, Server_id,
End_log_pos and Info, values escaped as the mariadb client's batch mode prints them.

Options: those of mariabinlog dump that choose events (mariabinlog dump --help):
  --start-position, --stop-position, --start-datetime, --stop-datetime, --offset,
  --database, --table, --do-domain-ids, --ignore-domain-ids, --do-server-ids,
  --ignore-server-ids, --skip-annotate-row-events, --force-read, --verify-binlog-checksum.
  GTID strict mode is off (the server lists without judging GTID order) unless
  --gtid-strict-mode is given.
  -?, --help          This help.
"""


def events_main(argv: list[str]) -> int:
    """``mariabinlog events [dump options] FILE...``.

    The server lists what its files hold without judging GTID order, so strict
    mode is off unless ``--gtid-strict-mode`` is given.
    """
    from .dump.cli import dump_main
    from .dump.options import leading_defaults_options

    if any(arg in ("--help", "-?") for arg in argv):
        sys.stdout.write(EVENTS_HELP)
        return 0
    lead = leading_defaults_options(argv)
    return dump_main([*argv[:lead], "--skip-gtid-strict-mode", *argv[lead:]], sink=ListingSink)


# ------------------------------------------------------------------------------ files


def files_main(args: argparse.Namespace) -> int:
    """``mariabinlog files DIR``."""
    directory = args.directory
    if not os.path.isdir(directory):
        print(f"mariabinlog files: '{directory}' is not a directory", file=sys.stderr)
        return 1
    out = sys.stdout.buffer
    out.write(b"Log_name\tFile_size\n")
    for name, size in binary_logs(directory):
        out.write(b"%s\t%d\n" % (batch_escape(name.encode("utf-8", "surrogateescape")), size))
    out.flush()
    return 0


# ------------------------------------------------------------------------------ registration


def add_events_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``events``: every argument after it goes to the dump option parser."""
    parser = subparsers.add_parser(
        "events",
        help="list events as SHOW BINLOG EVENTS does (legacy and .ibb files)",
        add_help=False,
        prefix_chars="\x01",
    )
    parser.add_argument("events_argv", nargs="*", metavar="ARGS")
    parser.set_defaults(handler=lambda args: events_main(list(args.events_argv)))


def add_files_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``files``."""
    parser = subparsers.add_parser(
        "files", help="list a directory's binlog files as SHOW BINARY LOGS does (legacy and .ibb)"
    )
    parser.add_argument("directory", help="binlog directory")
    parser.set_defaults(handler=files_main)
