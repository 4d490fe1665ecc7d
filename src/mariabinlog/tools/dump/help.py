"""``mariabinlog dump --help``: every option we accept, grouped as a ``mariadb-binlog`` user
looks for it, in our words; then our own options, then the ones we accept without effect.

The option names come from :data:`.options.OPTIONS` (one table, so the help cannot
list an option the parser lacks, nor miss one: :func:`check_complete` says which).
"""

from __future__ import annotations

import textwrap

from ... import __version__
from .options import OPTIONS, PROG

#: ``--version``: ours, and the mariadb-binlog whose behaviour we follow.
VERSION_TEXT = (
    f"{PROG} Ver 3.5 (mariabinlog {__version__}): behaves as MariaDB 10.11's mariadb-binlog 3.5,"
    " and reads MariaDB 12.3's .ibb binlogs too\n"
)

#: (group title, ((option, value name or "", meaning), ...)), in the order the help prints them.
SECTIONS: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = (
    ("Where to start and stop", (
        ("start-position", "#", "Start at this offset of the first file, or after these GTIDs "
         "(a list D-S-N,...: one group per domain after each)."),
        ("stop-position", "#", "Stop at this offset of the last file, or after these GTIDs."),
        ("start-datetime", "name", "Start at the first event at or after this date and time "
         "(local time zone, e.g. 2004-12-25 11:25:56)."),
        ("stop-datetime", "name", "Stop at the first event at or after this date and time."),
        ("offset", "#", "Skip this many entries first."),
        ("to-last-log", "", "With -R: go on through the server's later binlog files up to the last one."),
        ("stop-never", "", "With -R: wait for new events at the end of the last file (implies --to-last-log)."),
        ("stop-never-slave-server-id", "#", "With -R: the server id announced to the server (default: one "
         "derived from the process id)."),
        ("gtid-strict-mode", "", "Stop with an error when GTIDs of a domain are out of order "
         "(default on; --skip-gtid-strict-mode to warn only)."),
    )),
    ("Which events", (
        ("database", "name", "Only the statements and rows of this database (local files only)."),
        ("table", "name", "Only the row events of this table (with --database)."),
        ("do-domain-ids", "#", "Only these GTID domains (comma-separated ids)."),
        ("ignore-domain-ids", "#", "All GTID domains but these."),
        ("do-server-ids", "#", "Only events of these server ids."),
        ("ignore-server-ids", "#", "All server ids but these."),
        ("server-id", "#", "Only events of this server id (older spelling of --do-server-ids)."),
        ("rewrite-db", "name", "Rename a database in the output: --rewrite-db='from->to' (repeatable)."),
        ("skip-annotate-row-events", "", "Leave out the Annotate_rows events (the SQL behind row events)."),
        ("force-read", "", "Print unknown event types as a comment instead of stopping."),
        ("force-if-open", "", "Read a file still marked in use by the server (default on)."),
        ("verify-binlog-checksum", "", "Check each event's CRC32 and stop at a wrong one."),
    )),
    ("How events are printed", (
        ("base64-output", "name", "never | decode-rows | auto (default): whether BINLOG statements "
         "with base64 row images are printed; decode-rows with -v prints them as commented SQL."),
        ("verbose", "", "-v: row events as commented pseudo-SQL; -vv: with column types and metadata."),
        ("hexdump", "", "Add a commented hex dump of each event."),
        ("short-form", "", "Only the statements, without the event comments."),
        ("print-row-count", "", "Print row counts in verbose row output (default on)."),
        ("print-row-event-positions", "", "Print the offset of every row event (default on)."),
        ("print-table-metadata", "", "Print the table metadata of Table_map events."),
        ("local-load", "name", "Rebuild the data files of LOAD DATA events in this directory "
         "(default $TMPDIR or /tmp), as the statements printed refer to them."),
        ("flashback", "", "Print the row changes reversed (DELETE for INSERT, ...), newest first, to undo them."),
        ("disable-log-bin", "", "Begin the output with SET SQL_LOG_BIN=0, so applying it is not binlogged again."),
        ("set-charset", "name", "Begin the output with SET NAMES of this character set."),
        ("result-file", "name", "Write to this file instead of standard output (with --raw: the file name prefix)."),
        ("raw", "", "With -R: write the binlog files as received, byte for byte, instead of text."),
    )),
    ("Reading from a server (-R)", (
        ("read-from-remote-server", "", "-R: read the named binlog files from a MariaDB server."),
        ("host", "name", "The server's host (localhost: the Unix socket)."),
        ("port", "#", "The server's TCP port (3306; a --port means TCP)."),
        ("socket", "name", "The server's Unix socket file."),
        ("protocol", "name", "TCP or SOCKET."),
        ("user", "name", "User name (default: your login name)."),
        ("password", "name", "-p: the password; without a value it is asked on the terminal. "
         "MYSQL_PWD is used when none is given."),
        ("ssl", "", "Use TLS."),
        ("ssl-ca", "name", "CA certificate file to check the server's certificate (implies --ssl)."),
        ("ssl-capath", "name", "Directory of CA certificates (implies --ssl)."),
        ("ssl-cert", "name", "Client certificate (implies --ssl)."),
        ("ssl-key", "name", "Client certificate's key (implies --ssl)."),
        ("ssl-cipher", "name", "TLS ciphers to allow (implies --ssl)."),
        ("ssl-verify-server-cert", "", "Also check that the certificate names the host."),
        ("tls-version", "name", "TLS versions allowed, e.g. TLSv1.2,TLSv1.3."),
    )),
    ("Help", (
        ("help", "", "-?: this help."),
        ("version", "", "-V: our version and the mariadb-binlog it follows."),
    )),
    ("mariabinlog's own", (
        ("format", "name", "text (default, as mariadb-binlog prints it); json: one JSON object per event, "
         "rows decoded to typed values; debezium: one Debezium MariaDB-connector change event per row; "
         "schema-history: the schema history of the files, for --schema-history."),
        ("schema-from", "name", "json/debezium: starting schema of tables created before the binlog, read "
         "from a live server (mariadb://user@host:port); later DDL must be in the binlog."),
        ("schema-file", "name", "json/debezium: starting schema from a mariadb-dump --no-data file."),
        ("schema-history", "name", "json/debezium: starting schema from a history saved earlier "
         "(--format=schema-history, or an archive's schema-history.json)."),
        ("schema-metadata", "", "Text output: --print-table-metadata fills what the binlog lacks from the "
         "schema history (changes the text; off by default)."),
        ("topic-prefix", "name", "debezium: the logical server name of every record (default mariabinlog)."),
        ("convert-engine-binlog", "", "Write .ibb input as legacy binlog files BASE.000001... "
         "(BASE: --result-file, default legacy_log)."),
        ("max-binlog-size", "#", "Size at which a converted file is rotated (1G)."),
        ("convert-to-engine-binlog", "name", "Write legacy input into this directory as .ibb files (the engine)."),
        ("log-level", "name", "mariabinlog's diagnostics on stderr from this level on (DEBUG, INFO, WARNING, "
         "ERROR; -v stays the row verbosity)."),
    )),
)

#: Options of mariadb-binlog we accept and ignore, with why.
IGNORED: tuple[tuple[str, str], ...] = (
    ("character-sets-dir", "character sets are built in"),
    ("debug-check", "no debug build"),
    ("debug-info", "no debug build"),
    ("default-auth", "mysql_native_password and client_ed25519 are built in and chosen by the server"),
    ("plugin-dir", "no client plugins are loaded"),
    ("open-files-limit", "files are read one at a time"),
    ("binlog-row-event-max-size", "row events of any size are read"),
    ("ssl-crl", "certificate revocation lists are not checked"),
    ("ssl-crlpath", "certificate revocation lists are not checked"),
)

_WIDTH = 78
_COLUMN = 22


def _line(option: str, value: str, meaning: str) -> str:
    """One option as the real help sets it out: name in a 22-column gutter, meaning wrapped."""
    short = next((s for name, s, _, _ in OPTIONS if name == option and s), None)
    name = (f"-{short}, " if short else "") + f"--{option}" + (f"={value}" if value else "")
    body = textwrap.wrap(meaning, _WIDTH - _COLUMN)
    head = f"  {name}"
    if len(head) >= _COLUMN:
        return head + "\n" + "".join(" " * _COLUMN + part + "\n" for part in body)
    return head.ljust(_COLUMN) + body[0] + "\n" + "".join(" " * _COLUMN + part + "\n" for part in body[1:])


def help_text(defaults_text: str = "") -> str:
    """The whole ``--help``; ``defaults_text`` is the option-file paragraph (the command line's)."""
    out = [
        f"{PROG} (mariabinlog) for MariaDB binary logs (legacy and .ibb)\n"
        "Dumps a MariaDB binary log in a format usable for viewing or for piping to\n"
        "the mysql command line client.\n\n"
        f"Usage: {PROG} [options] log-files\n\n",
        defaults_text,
    ]
    for title, options in SECTIONS:
        out.append(f"\n{title}:\n")
        out.extend(_line(*option) for option in options)
    out.append("\nAccepted for compatibility, without effect:\n")
    out.extend(_line(option, "", why) for option, why in IGNORED)
    out.append(
        "\nBoolean options take --skip-, --disable- and --enable- prefixes and =0/1/ON/OFF values;"
        "\n'_' and '-' are the same in option names; a loose- prefix makes an unknown option a warning."
        "\nA progress bar is shown on stderr when it is a terminal and stdout is not.\n"
    )
    return "".join(out)


def check_complete() -> tuple[set[str], set[str]]:
    """(options the parser takes that the help leaves out, options the help names the parser lacks)."""
    parsed = {name for name, _, _, _ in OPTIONS}
    helped = {option for _, options in SECTIONS for option, _, _ in options} | {o for o, _ in IGNORED}
    return parsed - helped, helped - parsed
