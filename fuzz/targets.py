"""The fuzz targets: one function per entry where a user's bytes reach mariabinlog.

Each target takes the fuzzer's bytes and drives the library the way its users do (the
codec, the dump printer, the replication drivers, option files, the schema history, the
Spark split reader).  The contract every target checks: for any input, only the typed
errors of :mod:`mariabinlog.errors` come out; anything else (an ``IndexError``, a
``ValueError``, a ``RecursionError``, a disagreement between the C and Python row decoders)
is a finding.  :func:`check` applies that contract; :mod:`fuzz.run` runs a target under
atheris and ``tests/test_fuzz.py`` replays every committed input through :func:`check`.

Inputs are raw files where the format is a file (legacy binlogs, option files, DDL text);
structured ones where a raw file would waste the fuzzer's effort: `.ibb` files travel as
*compact pages* (:func:`ibb_pages`: each page's non-zero prefix, sealed by the harness), the
replication targets as a byte stream split into reads by the first byte.
"""

from __future__ import annotations

import io
import os
import struct
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from mariabinlog.errors import MariabinlogError

from .checksums import fix_legacy_file, seal_pages

PAGE_SIZE = 16384
_U16 = struct.Struct("<H")


@dataclass(frozen=True)
class Target:
    """A harness: ``run`` the library on one input; ``fix`` repairs checksums after a mutation."""

    name: str
    run: Callable[[bytes], None]
    fix: Callable[[bytes], bytes] | None
    max_len: int
    doc: str
    #: The packages whose coverage guides this target (instrumenting all costs seconds at start).
    packages: tuple[str, ...]
    #: Whether it reaches the compiled fast paths (run under the sanitizers by scripts/fuzz.sh).
    native: bool


TARGETS: dict[str, Target] = {}


def target(
    name: str,
    *,
    max_len: int = 65536,
    fix: Callable[[bytes], bytes] | None = None,
    packages: tuple[str, ...] = ("codec",),
    native: bool = False,
) -> Callable[..., Any]:
    """Register a harness under ``name``; ``packages``: mariabinlog's subpackages (or modules) it
    exercises; ``native``: it runs the C fast paths."""

    def register(run: Callable[[bytes], None]) -> Callable[[bytes], None]:
        doc = (run.__doc__ or "").strip().splitlines()[0]
        TARGETS[name] = Target(name, run, fix, max_len, doc, tuple(f"mariabinlog.{p}" for p in packages), native)
        return run

    return register


def check(name: str, data: bytes) -> None:
    """Run target ``name`` on ``data``: typed library errors are expected, anything else raises."""
    try:
        TARGETS[name].run(data)
    except MariabinlogError:
        pass


# ----------------------------------------------------------------------------- helpers


def _scratch() -> str:
    """A private folder in memory (tmpfs where there is one) for targets that need files."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix="mariabinlog-fuzz-", dir=base)


_SCRATCH: str | None = None


def scratch_file(name: str, data: bytes) -> str:
    """Write ``data`` to ``name`` in this process's scratch folder and return its path."""
    global _SCRATCH
    if _SCRATCH is None:
        _SCRATCH = _scratch()
    path = os.path.join(_SCRATCH, name)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def _rows_agree(table_map: Any, event: Any) -> None:
    """Decode ``event``'s rows with every implementation (Python and C), both views; they must
    return the same rows or fail with the same error class at the same offset."""
    from mariabinlog.codec.rows import IMPLEMENTATIONS
    from mariabinlog.errors import DecodeError

    for raw in (False, True):
        outcomes: list[tuple[str, Any]] = []
        for impl in IMPLEMENTATIONS.values():
            try:
                outcomes.append(("rows", impl(table_map).decode(event, raw=raw)))
            except DecodeError as err:
                outcomes.append((type(err).__name__, err.offset))
        first = outcomes[0]
        for other in outcomes[1:]:
            # == first (cheap); repr where it fails, since a NaN is not equal to itself
            if other != first and repr(other) != repr(first):
                raise AssertionError(f"row decoders disagree (raw={raw}): {outcomes}")
        if first[0] != "rows":
            raise DecodeError("rows do not decode", offset=first[1])


#: Rows events per input whose rows the harness decodes (a group of thousands of rows would
#: make one input take seconds; rows have targets of their own).
ROWS_PER_INPUT = 16


def _consume(decoder: Any, events: Iterator[Any], budget: list[int] | None = None) -> None:
    """Everything a reader does with decoded events: rows, user variables, status variables.
    ``budget``: rows events left to decode for this input (shared by its event groups)."""
    from mariabinlog.codec import events as ev

    budget = [ROWS_PER_INPUT] if budget is None else budget
    for event in events:
        if isinstance(event, ev.RowsEvent):
            table_map = decoder.table_map_for(event)
            budget[0] -= 1
            if budget[0] >= 0:
                _rows_agree(table_map, event)
        elif isinstance(event, ev.UserVarEvent):
            event.decoded_value()
        elif isinstance(event, ev.GtidEvent):
            event.optional_fields()


# ----------------------------------------------------------------------------- legacy binlogs


@target("legacy", max_len=1 << 15, fix=fix_legacy_file, native=True)
def legacy(data: bytes) -> None:
    """A legacy binlog file: framing, CRC-32, every event type, FD versions, compressed events, rows."""
    from mariabinlog.codec.events.stream import EventStreamDecoder, iter_legacy_events

    decoder = EventStreamDecoder()
    _consume(decoder, iter_legacy_events(data, decoder=decoder))


@target("events", max_len=1 << 14, fix=None, native=True)
def events(data: bytes) -> None:
    """An `.ibb` event group or a network event stream: events without footers, rows by both decoders."""
    from mariabinlog.codec.ibb import iter_events
    from mariabinlog.codec.events.stream import EventStreamDecoder

    decoder = EventStreamDecoder()
    cut = 1 + data[0] * 37 if data else 0  # the group in two pieces, as OOB data splits it
    _consume(decoder, (decoder.decode(raw, 0) for raw in iter_events([data[:cut], data[cut:]])))


# ----------------------------------------------------------------------------- .ibb


def ibb_pages(data: bytes) -> tuple[list[list[bytearray]], int]:
    """Compact `.ibb` input -> (pages of each file, number of the first file).

    Byte 0: how many pages the first file has (the rest make a second file).  Then per page
    a u16 length and that many bytes: the page's prefix, zero-padded to 16 KiB and sealed
    (header-block and page CRC-32C stored); length 0 is an unwritten (all-zero) page;
    16384 is a page taken as is, its stored CRC unchecked by the harness.  The first
    file's number is the one its header page names (so headers agree unless mutated)."""
    if not data:
        return [[]], 0
    split, pos = data[0], 1
    pages: list[bytearray] = []
    raw: list[bool] = []
    while pos + 2 <= len(data):
        length = min(_U16.unpack_from(data, pos)[0], PAGE_SIZE)
        pos += 2
        body = data[pos : pos + length]
        pos += length
        raw.append(length == PAGE_SIZE or length == 0)
        pages.append(bytearray(body.ljust(PAGE_SIZE, b"\0")))
    for page, as_is in zip(pages, raw):
        if not as_is:
            seal_pages([page])
    files = [pages[:split], pages[split:]] if split < len(pages) else [pages]
    first = int.from_bytes(files[0][0][16:24], "little") if files[0] and files[0][0][:4] == b"\xfe\xfe\x0d\x01" else 0
    return files, first & 0xFFFFFF


class MemoryPages:
    """A :class:`~mariabinlog.codec.ibb.PageSource` over in-memory files."""

    def __init__(self, files: list[list[bytearray]], first: int) -> None:
        self.files = {first + i: [bytes(p) for p in pages] for i, pages in enumerate(files) if pages}

    def page(self, file_no: int, page_no: int) -> bytes | None:
        pages = self.files.get(file_no)
        if pages is None or page_no >= len(pages):
            return None
        return pages[page_no]

    def name(self, file_no: int) -> str:
        return f"binlog-{file_no:06d}.ibb"


def _read_ibb(source: MemoryPages, first: int, start: int, skip_partial: bool) -> None:
    from mariabinlog.codec.ibb import RecordReader, RecordType
    from mariabinlog.codec.events.stream import EventStreamDecoder

    reader = RecordReader(source, first, start, skip_partial=skip_partial)
    decoder = EventStreamDecoder()
    budget = [ROWS_PER_INPUT]
    for record in reader:
        record.decode()
        if record.type == RecordType.COMMIT and not record.nested:
            group = reader.group(record)
            _consume(decoder, (decoder.decode(raw, 0) for raw in group.raw_events()), budget)


@target("ibb", max_len=1 << 17, native=True)
def ibb(data: bytes) -> None:
    """`.ibb` files as compact pages: headers, page CRC-32C, chunks, records, OOB forests, GTID states."""
    from mariabinlog.codec.gtid import ConnectState
    from mariabinlog.codec.ibb.state import seek_gtid, state_points

    files, first = ibb_pages(data)
    source = MemoryPages(files, first)
    _read_ibb(source, first, PAGE_SIZE, False)
    pages = len(files[0])
    if pages > 2:
        _read_ibb(source, first, (1 + data[-1] % (pages - 1)) * PAGE_SIZE, True)
    for _ in state_points(source, first, pages):
        pass
    seek_gtid(source, sorted(source.files), ConnectState.parse("0-1-1,1-1-5"))


@target("ibb-records", max_len=4096)
def ibb_records(data: bytes) -> None:
    """One `.ibb` record payload of the type byte 0 names (COMMIT, GTID_STATE, OOB_DATA, XA, ...), compr integers."""
    from mariabinlog.codec.ibb.compr import read_compr
    from mariabinlog.codec.ibb import decode_record

    if not data:
        return
    try:
        decode_record(data[0] & 0x3F, data[1:])
    finally:
        pos = 1
        while pos < len(data):
            _, pos = read_compr(data, pos)


@target("engine-check", max_len=1 << 17, packages=("engine", "codec.ibb"))
def engine_check(data: bytes) -> None:
    """`mariabinlog engine check` on `.ibb` files (compact pages): every page CRC, record and GTID state record."""
    from mariabinlog.engine.check import check_directory

    files, first = ibb_pages(data)
    directory = _ibb_directory(files, first, "engine")
    check_directory(directory).summary()


def _ibb_directory(files: list[list[bytearray]], first: int, name: str) -> str:
    """A scratch directory holding exactly ``files`` as binlog-NNNNNN.ibb from ``first`` on."""
    global _SCRATCH
    if _SCRATCH is None:
        _SCRATCH = _scratch()
    directory = os.path.join(_SCRATCH, name)
    os.makedirs(directory, exist_ok=True)
    for stale in os.listdir(directory):
        os.unlink(os.path.join(directory, stale))
    for index, pages in enumerate(files):
        with open(os.path.join(directory, f"binlog-{first + index:06d}.ibb"), "wb") as fh:
            fh.write(b"".join(pages))
    return directory


# ----------------------------------------------------------------------------- the dump


_DUMP_ARGS = (
    [],
    ["-v"],
    ["-vv"],
    ["-vv", "--print-table-metadata"],
    ["--hexdump"],
    ["--base64-output=never"],
    ["--base64-output=decode-rows", "-v"],
    ["--flashback"],
    ["--short-form"],
    ["--format=json"],
    ["--format=debezium"],
    ["-v", "--skip-annotate-row-events"],
    ["--start-position=0-1-2", "--stop-position=0-1-9"],
    ["-d", "d1", "--rewrite-db=d1->d2", "-v"],
    ["--print-row-count=0", "--print-row-event-positions=0", "-vv"],
    ["--base64-output=auto", "--hexdump", "-v"],
)


@target("dump", max_len=1 << 15, packages=("codec", "tools", "schema"), native=True, fix=lambda d: d[:1] + fix_legacy_file(d[1:]))
def dump(data: bytes) -> None:
    """`mariabinlog dump` on a legacy file (byte 0 picks the options): the printers, JSON, Debezium, _dumpfast."""
    from mariabinlog.tools.dump import cli as dump_cli

    if not data:
        return
    args = _DUMP_ARGS[data[0] % len(_DUMP_ARGS)]
    path = scratch_file("mysql-bin.000001", data[1:])
    out = io.BytesIO()
    err = io.StringIO()
    _run_dump(dump_cli, args + [path], out, err)


def _run_dump(dump_cli: Any, argv: list[str], out: io.BytesIO, err: io.StringIO) -> None:
    """``dump_main`` as the command runs it, output and diagnostics kept in memory."""
    dump_cli.dump_main(argv, stdout=out, stderr=err)


@target("dump-ibb", max_len=1 << 16, packages=("codec", "tools", "engine"), native=True)
def dump_ibb(data: bytes) -> None:
    """`mariabinlog dump` on `.ibb` files (compact pages; the last byte picks the options)."""
    from mariabinlog.tools.dump import cli as dump_cli

    if not data:
        return
    files, first = ibb_pages(data)
    paths = []
    for index, pages in enumerate(files):
        paths.append(scratch_file(f"binlog-{first + index:06d}.ibb", b"".join(pages)))
    for stale in os.listdir(_SCRATCH or "."):
        if stale.endswith(".ibb") and os.path.join(_SCRATCH or ".", stale) not in paths:
            os.unlink(os.path.join(_SCRATCH or ".", stale))
    args = _DUMP_ARGS[data[-1] % len(_DUMP_ARGS)]
    _run_dump(dump_cli, args + paths[:1], io.BytesIO(), io.StringIO())


# ----------------------------------------------------------------------------- replication


#: The most reads (or ``receive_data`` calls) a replication target splits its input into.
READS_PER_INPUT = 128


class FakeSocket:
    """The peer's side of a connection played from fuzz bytes: ``recv`` hands out the input in
    reads whose sizes byte 0 picks (then end of stream); once the input is spent, sending fails
    as it does to a peer that went away."""

    def __init__(self, data: bytes) -> None:
        # At most READS_PER_INPUT reads: byte-at-a-time reads of a 32 KiB input cost the
        # campaign 30,000 calls per execution and reach no code that 128 reads do not.
        self.step = max(1 + (data[0] if data else 0) * 61, len(data) // READS_PER_INPUT)
        self.data = data[1:]
        self.pos = 0
        self.sent = 0
        self.done = False
        self.timeout: float | None = None

    def recv(self, size: int) -> bytes:
        chunk = self.data[self.pos : self.pos + min(size, self.step)]
        self.pos += len(chunk)
        if not chunk:
            self.done = True
        return chunk

    def send(self, data: bytes) -> int:
        if self.done:
            raise BrokenPipeError(32, "Broken pipe")
        self.sent += len(data)
        return len(data)

    def sendall(self, data: bytes) -> None:
        self.send(data)

    def settimeout(self, value: float | None) -> None:
        self.timeout = value

    def gettimeout(self) -> float | None:
        return self.timeout

    def setsockopt(self, *args: Any) -> None:
        pass

    def shutdown(self, how: int) -> None:
        self.done = True

    def close(self) -> None:
        self.done = True


@target("client", max_len=1 << 15, packages=("codec", "replication"))
def client(data: bytes) -> None:
    """The replication client (archive, replicate, dump -R) reading a hostile primary's bytes: handshake, auth, queries, dump."""
    import socket

    from mariabinlog.replication import client as client_mod
    from mariabinlog.replication.net import ConnectionOptions

    fake = FakeSocket(data)
    real = socket.create_connection
    socket.create_connection = lambda *a, **k: fake  # type: ignore[assignment]
    try:
        checksum = ("server", "NONE", "CRC32")[(data[0] if data else 0) % 3]
        binlog = BinlogClientArgs[(data[0] if data else 0) >> 6]
        options = ConnectionOptions(host="primary.invalid", port=3306, user="repl", password="secret")
        stream = client_mod.BinlogClient(
            options, heartbeat=0, reconnect=0, blocking=False, checksum=checksum, start="0-1-5", **binlog
        )
        for _ in stream.groups():
            pass
    finally:
        socket.create_connection = real  # type: ignore[assignment]


BinlogClientArgs: list[dict[str, Any]] = [
    {},
    {"binlog_file": "mysql-bin.000001", "binlog_position": 4},
    {"register": False, "until": "0-1-9"},
    {"annotate": False, "strict": True},
]

_ARCHIVE: str | None = None


def archive_directory() -> str:
    """A small `.ibb` archive written by the project's own engine (the sample, few groups)."""
    global _ARCHIVE
    if _ARCHIVE is None:
        from mariabinlog.tools.sample import write_sample

        _ARCHIVE = os.path.join(_scratch(), "archive")
        write_sample(_ARCHIVE, transactions=4)
    return _ARCHIVE


@target("serve", max_len=1 << 13, packages=("codec", "replication", "engine"))
def serve(data: bytes) -> None:
    """`mariabinlog serve` reading a hostile replica's bytes: handshake response, auth, SET/SELECT/SHOW, dump requests."""
    from mariabinlog.replication import server as server_mod

    class Server(server_mod.BinlogServer):
        polls = 0

        @property
        def stopping(self) -> bool:
            # The replica's bytes end here: a blocking dump that has sent what the archive
            # holds would wait for new groups until the server stops; stop it a few polls on.
            self.polls += 1
            return fake.done or self.polls > 4

    fake = FakeSocket(data)
    config = server_mod.ServerConfig(
        archive_directory(),
        accounts={"repl": b"", "pw": server_mod.hash_password("secret")},
        poll_interval=0.0,
        engine_style=bool(data and data[0] & 1),
    )
    server = Server(config)
    ticket = server.admission.admit("192.0.2.1")
    session = server_mod._Session(server, fake, ("192.0.2.1", 4000), 7, ticket)  # type: ignore[arg-type]
    session.run()


@target("protocol", max_len=1 << 14)
def protocol(data: bytes) -> None:
    """Both protocol state machines (codec level) on raw packets: the client's and the server's sides."""
    from mariabinlog.codec.wire import protocol as P

    if not data:
        return
    machine: Any
    if data[0] & 1:
        machine = P.ServerProtocol(max_packet=1 << 16)
        machine.send_handshake("10.11.9-MariaDB", 1, b"abcdefghijklmnopqrst")
    else:
        machine = P.ClientProtocol(max_packet=1 << 16)
        machine.semi_sync = bool(data[0] & 2)
    step = max(1 + (data[0] >> 2) * 97, len(data) // READS_PER_INPUT)
    body = data[1:]
    commands = ["query", "register", "dump"]
    for pos in range(0, len(body) + 1, step):
        machine.receive_data(body[pos : pos + step])
        while True:
            event = machine.next_event()
            if event is P.NEED_DATA or isinstance(event, P.ConnectionClosed):
                break
            _answer(P, machine, event, commands)
    machine.receive_data(b"")
    machine.next_event()


def _answer(P: Any, machine: Any, event: Any, commands: list[str]) -> None:
    """What a driver sends back for ``event``, to move the machine on (the client runs the
    replica's script: a query, COM_REGISTER_SLAVE, then the dump)."""
    if isinstance(event, P.Handshake):
        machine.send_handshake_response("repl", "secret", database="d")
    elif isinstance(event, P.AuthSwitchRequest):
        machine.send_auth_switch_response(event)
    elif machine.state is P.ClientState.READY and commands:
        command = commands.pop(0)
        if command == "query":
            machine.send_query("SET @master_binlog_checksum= 'NONE';SELECT 1")
        elif command == "register":
            machine.send_register_slave(P.RegisterSlave(2, user="repl", port=0))
        else:
            machine.send_binlog_dump(P.BinlogDump(2, 4, 0, b""))
    elif isinstance(event, P.BinlogEventPacket) and event.need_ack:
        machine.send_semi_sync_ack(P.SemiSyncAck(4, b"mysql-bin.000001"))
    elif isinstance(event, P.HandshakeResponse):
        machine.check_password(P.native_password_hash(b"secret"))
        machine.send_auth_ok()
    elif isinstance(event, P.Query | P.Ping | P.RegisterSlave | P.UnknownCommand) and machine.state is P.ServerState.RESPONDING:
        machine.send_ok()
    elif isinstance(event, P.BinlogDump):
        machine.send_event(b"\0" * 19)
        machine.send_eof()


# ----------------------------------------------------------------------------- text inputs


@target("optionfiles", max_len=1 << 14, packages=("optionfiles", "tools.dump.options"))
def optionfiles(data: bytes) -> None:
    """Option files (my.cnf) as the command line reads them, and the dump options they hold."""
    from mariabinlog.optionfiles import BINLOG_GROUPS, load_defaults
    from mariabinlog.tools.dump.options import parse_options

    path = scratch_file("my.cnf", data)
    defaults = load_defaults(BINLOG_GROUPS, [f"--defaults-file={path}"], env={})
    parse_options(list(defaults.args) + ["mysql-bin.000001"])


@target("ddl", max_len=1 << 10, packages=("schema",))
def ddl(data: bytes) -> None:
    """The schema history on DDL text (up to four statements split at NUL bytes) and its JSON round trip."""
    from mariabinlog.schema import SchemaHistory

    history = SchemaHistory()
    for index, statement in enumerate(data.split(b"\0")[:4]):
        history.apply(statement.decode("utf-8", "surrogateescape"), "d", pos=index, gtid=f"0-1-{index + 1}", warn=False)
    history.to_json()
    SchemaHistory.from_json(history.to_json())


@target("gtid", max_len=1 << 10, packages=("codec.gtid",))
def gtid(data: bytes) -> None:
    """GTID text as users and replicas give it: GTID lists, connect states, domain/server id lists."""
    from mariabinlog.codec.gtid import BinlogState, ConnectState, GtidList, parse_ids

    text = data.decode("utf-8", "surrogateescape")
    for parse in (GtidList.parse, ConnectState.parse):
        try:
            value = parse(text)
            str(value)
        except MariabinlogError:
            pass
    try:
        BinlogState.from_list(GtidList.parse(text))
    except MariabinlogError:
        pass
    parse_ids("--do-domain-ids", text, tool_syntax=bool(data[:1] == b"("))


# ----------------------------------------------------------------------------- Spark


def _fix_spark(data: bytes) -> bytes:
    return data if not data or data[0] & 4 else data[:1] + fix_legacy_file(data[1:])


_SPARK_OPTIONS = (
    {"view": "events"},
    {"view": "rows"},
    {"view": "groups"},
    {"view": "rows", "table": "w02_types_full.t_dec"},
    {"view": "events", "startPosition": "0-1-2", "verifyChecksum": "false"},
    {"view": "rows", "doDomainIds": "0", "batchRows": "2"},
    {"view": "groups", "stopPosition": "0-1-6"},
    {"view": "rows", "table": "w02_types_full.t_time", "batchRows": "3"},
)


@target("spark", max_len=1 << 16, fix=_fix_spark, packages=("codec", "spark", "schema", "engine"), native=True)
def spark(data: bytes) -> None:
    """The Spark source's split reader and view builders (events, rows, groups as Arrow), Spark itself not running.

    Byte 0: bit 2 chooses `.ibb` (compact pages) over a legacy file, bit 3 the compiled
    columnar path, the high bits the options; the file is cut into two splits at a page."""
    from mariabinlog.spark import read
    from mariabinlog.spark import split as split_reader
    from mariabinlog.spark.options import ScanOptions
    from mariabinlog.spark.partition import arrow_schema
    from mariabinlog.spark.plan import Split
    from mariabinlog.spark.schema import SCHEMAS

    if not data:
        return
    split_reader._REREADS = 0  # a torn page is rescanned for live writers after a pause; inputs here never change
    flags, body = data[0], data[1:]
    options = ScanOptions.parse(_SPARK_OPTIONS[flags >> 5])
    schema = arrow_schema(SCHEMAS[options.view])
    directory = os.path.dirname(scratch_file("placeholder", b""))
    if flags & 4:
        files, first = ibb_pages(body)
        for stale in os.listdir(directory):
            if stale.endswith(".ibb"):
                os.unlink(os.path.join(directory, stale))
        path = ""
        for index, pages in enumerate(files):
            name = scratch_file(f"binlog-{first + index:06d}.ibb", b"".join(pages))
            path = path or name
        size = len(files[0]) * PAGE_SIZE
        cut = PAGE_SIZE * (2 + flags % 2)
        splits = [Split("ibb", path, directory, first, PAGE_SIZE, min(cut, size)), Split("ibb", path, directory, first, cut, max(size, cut))]
    else:
        path = scratch_file("mysql-bin.000001", body)
        cut = max(4, len(body) // 2)
        splits = [Split("legacy", path, directory, 1, 0, cut), Split("legacy", path, directory, 1, cut, max(len(body), cut))]
    for _ in read.read_splits(splits, options, schema, columnar=bool(flags & 8)):
        pass
