"""One exception hierarchy for everything a user of mariabinlog can trigger.

Decoding errors carry the file (when known), the absolute byte offset and what
was expected there, so a message always points at the damaged bytes.  Codecs
raise with offsets relative to the buffer they were given; the layer that knows
the file and the buffer's base offset calls :meth:`DecodeError.located` to turn
that into a file position.
"""

from __future__ import annotations


class MariabinlogError(Exception):
    """Base class of every error mariabinlog raises on purpose."""


class DecodeError(MariabinlogError):
    """Bytes that do not follow the binlog format.

    ``offset`` is the byte offset of the bad data (relative to the decoded
    buffer until :meth:`located` anchors it in a file), ``expected`` says what
    should have been there.
    """

    def __init__(
        self,
        message: str,
        *,
        offset: int | None = None,
        expected: str | None = None,
        file: str | None = None,
        context: str | None = None,
    ) -> None:
        self.reason = message
        self.offset = offset
        self.expected = expected
        self.file = file
        self.context = context
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        if self.context:
            where.append(self.context)
        text = self.reason
        if self.expected:
            text += f" (expected {self.expected})"
        return f"{': '.join([', '.join(where), text]) if where else text}"

    def located(self, file: str | None, base_offset: int | None = 0, context: str | None = None) -> "DecodeError":
        """Return a copy anchored in ``file`` with the offset shifted by ``base_offset``.

        ``file`` may also name a stream (a primary's ``host:port`` and binlog file name),
        ``base_offset`` None drops an offset that means nothing there, and ``context`` says
        more of where (e.g. the GTID of the event group being read)."""
        if self.file is not None:
            return self
        offset = None if self.offset is None or base_offset is None else self.offset + base_offset
        err = type(self).__new__(type(self))
        DecodeError.__init__(err, self.reason, offset=offset, expected=self.expected, file=file, context=context)
        for key, value in self.__dict__.items():
            if key not in ("reason", "offset", "expected", "file", "context"):
                setattr(err, key, value)
        return err


class TruncatedError(DecodeError):
    """The data ends before a complete structure could be read."""


class ChecksumError(DecodeError):
    """A CRC-32 (event) or CRC-32C (page) checksum does not match."""


class CorruptRecordError(DecodeError):
    """An `.ibb` page, chunk, record or OOB forest is structurally damaged."""


class EncryptedBinlogError(DecodeError):
    """The binlog is encrypted (Start_encryption event); reading it needs the key."""


class EventReadError(DecodeError):
    """An event of a binlog file could not be framed or failed its checksum.

    Besides file, offset and reason, it keeps what ``mariadb-binlog`` reports for the same
    damage: ``c_reason`` is ``Log_event::read_log_event``'s own text (None where the C tool
    has none), ``data_len`` and ``event_type`` the event length and type code it names.
    """

    def __init__(
        self,
        message: str,
        *,
        offset: int | None = None,
        expected: str | None = None,
        file: str | None = None,
        c_reason: str | None = None,
        data_len: int = 0,
        event_type: int = 0,
    ) -> None:
        self.c_reason = c_reason
        self.data_len = data_len
        self.event_type = event_type
        super().__init__(message, offset=offset, expected=expected, file=file)


class MissingFormatDescription(DecodeError):
    """A row event arrived before any Format_description was printed (base64 needs one)."""

    def __init__(self, type_name: bytes) -> None:
        super().__init__(
            "malformed binlog: it does not contain any Format_description_log_event. Found a "
            f"{type_name.decode()} event, which is not safe to process without a Format_description_log_event."
        )


class FlashbackError(DecodeError):
    """--flashback met a row it cannot measure; the tool prints "Error row length: 0" and exits 1."""

    def __init__(self) -> None:
        super().__init__("Error row length: 0")


class UnsupportedError(MariabinlogError):
    """Valid input that this operation refuses, e.g. unknown events where rows are applied."""


class GtidError(MariabinlogError, ValueError):
    """Malformed GTID or GTID list text, or an inconsistent GTID state."""


class OptionError(MariabinlogError, ValueError):
    """Invalid or conflicting options (message texts follow mariadb-binlog's)."""


class OptionExit(MariabinlogError):
    """Option handling ended a tool run: the text for stderr and the exit status.

    mariadb-binlog exits with a status of its own per kind of option error (2 for
    an unknown option, 9 for a bad number suffix, ...); the tools keep them.
    """

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class GtidStrictModeError(MariabinlogError):
    """GTID strict mode was violated (out-of-order GTID, position never reached)."""


class EngineError(MariabinlogError):
    """The binlog engine refused an operation or found its directory inconsistent."""


class LogInUseError(EngineError):
    """A purge would remove a file still needed (reader, OOB reference, pending XA)."""


class ConvertError(MariabinlogError):
    """A conversion between `.ibb` and legacy binlogs cannot go on (output file, engine directory)."""


class ReplicationError(MariabinlogError):
    """A replication peer misbehaved or refused us (protocol, auth, unknown GTID)."""


class ConnectionLostError(ReplicationError):
    """The connection broke, was closed by the peer, or stayed silent past the read timeout.

    ``errno`` is the system error of a failed connect (None otherwise)."""

    def __init__(self, message: str, errno: int | None = None, *, clean: bool = False) -> None:
        super().__init__(message)
        self.errno = errno
        #: The peer closed the connection between two packets, as a server that shuts down does
        #: (not inside a packet, and not by a reset or a timeout).
        self.clean = clean


class ApplyError(ReplicationError):
    """The target refused a group; names the GTID, the statement and the server error."""

    def __init__(self, gtid: object, statement: bytes, error: ServerError) -> None:
        self.gtid = gtid
        self.error = error
        text = statement[:200].decode("utf-8", "replace")
        super().__init__(f"applying GTID {gtid} failed: {error} (statement: {text!r})")


class QueryRefusedError(ReplicationError):
    """Our binlog server does not serve a client's query; it answers with ERR ``code``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class MalformedPacketError(DecodeError, ReplicationError):
    """The peer sent bytes that do not follow the protocol (offset is into the packet payload)."""


class FramingError(MalformedPacketError):
    """The packet framing broke: a sequence id out of order (a packet duplicated, lost or
    injected on the way: MariaDB's ER_NET_PACKETS_OUT_OF_ORDER), or a packet whose length
    disagrees with the event it carries.  Nothing after it in the byte stream can be trusted,
    a new connection can: replication clients reconnect, as MariaDB's I/O thread does."""


class PacketTooLargeError(MalformedPacketError):
    """A packet announces more bytes than the receiver allows (``max_allowed_packet``;
    MariaDB's ER_NET_PACKET_TOO_LARGE); refused from its header, before it is buffered."""


class LocalProtocolError(ReplicationError):
    """The caller used a protocol state machine in a way the protocol does not allow."""


class ServerError(ReplicationError):
    """The peer answered with an ERR packet: MariaDB error ``code``, ``sql_state`` and message."""

    def __init__(self, code: int, sql_state: str, message: str) -> None:
        self.code = code
        self.sql_state = sql_state
        self.message = message
        super().__init__(f"ERROR {code} ({sql_state}): {message}")


class SchemaHistoryError(MariabinlogError):
    """A schema history (saved file, dump file, live server) that cannot be read; names its source."""


class UnparsedDDLError(SchemaHistoryError):
    """A DDL statement the schema history cannot read; ``tables`` are the (db, table) keys it names."""

    def __init__(self, reason: str, tables: tuple[tuple[str, str], ...]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.tables = tables

class UncarriedRowsError(MariabinlogError):
    """The pipeline found CDC rows it cannot carry to their typed state and change tables;
    ``rows`` lists them as (``db.table``, GTID, why, how many)."""

    def __init__(self, message: str, rows: list[tuple[str, str | None, str, int]]) -> None:
        super().__init__(message)
        self.rows = rows


class MirrorError(MariabinlogError):
    """A live mirror (``pipeline --follow``, an incremental run) cannot go on: a table whose
    changes could not be applied (named with the GTIDs and the reason), or an output directory
    that mirrors another source or format."""


class ConnectFailedError(ReplicationError):
    """A client could not connect to or log in to a server; ``reason`` is the cause in
    MariaDB's client words (``Can't connect to server on '127.0.0.1' (111)``, or the
    server's own message), for tools that print it as the real ones do."""

    def __init__(self, reason: str, where: str) -> None:
        self.reason = reason
        self.where = where
        super().__init__(f"cannot connect to {where}: {reason}")


class OptionFileError(OptionError):
    """An option file (``my.cnf``) that MariaDB's clients would refuse: the message is theirs."""


class RestoreError(MariabinlogError):
    """A point-in-time restore cannot go on: an unreadable backup, a gap between the backup and
    the archive (the message names the missing GTIDs), a stop point the archive does not hold,
    a private server that would not start or stop, a datadir that is not ours to write."""


class UndoError(MariabinlogError):
    """``undo`` refuses a group: statement-logged or DDL, partial row images, unknown GTIDs."""


class UndoConflictError(UndoError):
    """Later groups of the archive changed rows that ``undo`` would revert; ``conflicts`` maps
    each undone GTID (text) to the later GTIDs that touched its rows."""

    def __init__(self, message: str, conflicts: dict[str, list[str]]) -> None:
        super().__init__(message)
        self.conflicts = conflicts
