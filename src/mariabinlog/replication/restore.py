"""Point-in-time restore: a ``mariadb-backup`` backup plus an archive's groups up to a stop point.

``mariabinlog restore --backup B --archive A --datadir NEW --stop-...`` (see
``docs/commands/restore.md``):

1. reads the backup's GTID position from its own info file (``mariadb_backup_binlog_info``
   or ``xtrabackup_binlog_info``: "GTID of the last change");
2. scans the archive before touching anything: it must hold every group after that
   position (a *gap* is refused, naming the missing GTIDs) and the stop point;
3. copies the backup to NEW and prepares it there with ``mariadb-backup --prepare`` (a
   prepared backup is accepted too: preparing again changes nothing);
4. starts a :class:`~.mariadbd.PrivateServer` on NEW and applies the archive's groups from
   the backup's position to the stop point with ``replicate``'s apply
   (:class:`~.apply.Replicator`: crash-safe, the position committed with the data, GTID
   domains in parallel); groups are cut at the stop point in *archive order*, which is the
   primary's commit order, so every domain stops at the same moment;
5. records the position reached as the server's ``gtid_slave_pos`` (so NEW can be made a
   replica of the primary), drops its own position table and shuts the server down cleanly.

Resumable: NEW holds ``mariabinlog_restore.json`` with the stage reached.  A rerun after a
kill (same options) continues: a copy or prepare cut short is done again, a replay goes on
from the position committed in NEW's own tables.  The file stays in NEW at the end and says
what NEW was restored from and to.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..codec.gtid import ConnectState, Gtid, GtidList
from ..codec.ibb.state import state_at_page
from ..errors import GtidError, RestoreError
from .apply import PositionTable, Replicator
from .filters import GroupFilter
from ..codec.groups import EventGroup
from .mariadbd import PrivateServer, find_program, wait_gone
from .net import Connection, sql_string
from .progress import JobProgress
from .sources import ArchiveReader, ArchiveSource, GroupSource, archive_pages

log = logging.getLogger(__name__)

#: The restore's own state file in NEW.
STATE_FILE = "mariabinlog_restore.json"
#: Where the replay keeps its position inside NEW while it runs (dropped at the end).
POSITION_TABLE = PositionTable("mariabinlog_restore", "gtid_pos", "restore")
#: mariadb-backup's binlog info file, by its 10.11+ and older names.
BINLOG_INFO_FILES = ("mariadb_backup_binlog_info", "xtrabackup_binlog_info")
CHECKPOINT_FILES = ("mariadb_backup_checkpoints", "xtrabackup_checkpoints")


# --------------------------------------------------------------------------- the backup


@dataclass(frozen=True)
class BackupInfo:
    """What a ``mariadb-backup`` directory says about itself."""

    path: Path
    #: The GTID position the backup holds (the primary's binlog position at the backup lock).
    position: ConnectState
    #: ``full-backuped`` (not prepared), ``log-applied`` / ``full-prepared`` (prepared).
    backup_type: str


def _info_file(directory: Path, names: tuple[str, ...]) -> Path | None:
    for name in names:
        if (directory / name).is_file():
            return directory / name
    return None


def read_backup_info(directory: str | os.PathLike[str]) -> BackupInfo:
    """The backup's GTID position and type; RestoreError when ``directory`` is not a usable full backup."""
    path = Path(directory)
    checkpoints = _info_file(path, CHECKPOINT_FILES)
    if checkpoints is None:
        raise RestoreError(f"{path}: not a mariadb-backup directory (no {' or '.join(CHECKPOINT_FILES)})")
    fields = dict(
        (key.strip(), value.strip())
        for key, _, value in (line.partition("=") for line in checkpoints.read_text().splitlines())
        if value
    )
    backup_type = fields.get("backup_type", "")
    if backup_type == "incremental":
        raise RestoreError(f"{path}: an incremental backup; restore takes a full one (merge it with --prepare first)")
    if backup_type not in ("full-backuped", "log-applied", "full-prepared"):
        raise RestoreError(f"{checkpoints}: unknown backup_type {backup_type!r}")
    info = _info_file(path, BINLOG_INFO_FILES)
    if info is None:
        raise RestoreError(
            f"{path}: the backup records no binlog position ({' or '.join(BINLOG_INFO_FILES)} missing):"
            " it was taken from a server without --log-bin"
        )
    columns = info.read_text().strip().split("\t")
    if len(columns) < 3 or not columns[2].strip():
        raise RestoreError(f"{info}: no GTID position in {info.read_text().strip()!r} (binlog file and offset only)")
    try:
        position = ConnectState(GtidList.parse(columns[2].strip()))
    except (GtidError, ValueError) as err:
        raise RestoreError(f"{info}: bad GTID position {columns[2]!r}: {err}") from None
    return BackupInfo(path, position, backup_type)


# --------------------------------------------------------------------------- the stop point


@dataclass(frozen=True)
class StopPoint:
    """Where the replay ends, in archive order: before a group, after a group, or before the
    first group committed at or after a time (epoch seconds, as ``--stop-datetime``)."""

    before: Gtid | None = None
    at: Gtid | None = None
    time: int | None = None

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.before, self.at, self.time)) != 1:
            raise RestoreError("give exactly one of --stop-before-gtid, --stop-gtid, --stop-datetime")

    def describe(self) -> str:
        """The stop point in words (for messages and the state file)."""
        if self.before is not None:
            return f"before {self.before}"
        if self.at is not None:
            return f"after {self.at}"
        return f"before time {self.time}"

    def ends_before(self, group: EventGroup) -> bool:
        """Whether ``group`` is past the stop point (not applied)."""
        if self.before is not None:
            return group.gtid == self.before
        return self.time is not None and group.timestamp >= self.time

    def ends_after(self, group: EventGroup) -> bool:
        """Whether ``group`` is the last one applied."""
        return self.at is not None and group.gtid == self.at


class StoppingSource:
    """A :class:`GroupSource` that ends at a :class:`StopPoint`."""

    def __init__(self, source: GroupSource, stop: StopPoint) -> None:
        self.source = source
        self.stop = stop
        self.reached = False

    @property
    def idle(self) -> bool:
        """As the wrapped source."""
        return self.source.idle

    def groups(self) -> Iterator[EventGroup]:
        """The wrapped source's groups up to the stop point."""
        for group in self.source.groups():
            if self.stop.ends_before(group):
                self.reached = True
                return
            yield group
            if self.stop.ends_after(group):
                self.reached = True
                return

    def close(self) -> None:
        """Close the wrapped source."""
        self.source.close()


# --------------------------------------------------------------------------- the archive check


def _seq_range(domain: int, first: int, last: int) -> str:
    return f"{domain}-*-{first}" if first == last else f"{domain}-*-{first} to {domain}-*-{last}"


def check_archive(archive: str, start: ConnectState, stop: StopPoint) -> int:
    """Check that ``archive`` continues ``start`` without a gap and holds ``stop``; returns the
    number of groups to apply.  RestoreError names the missing GTIDs or the stop point."""
    pages = archive_pages(archive)
    files = pages.list()
    if not files:
        raise RestoreError(f"{archive}: no binlog-NNNNNN.ibb files")
    before = state_at_page(pages, files[0], 1)
    first_state = before.connect_state() if before is not None else ConnectState()
    reader = ArchiveReader(pages, None)
    first: dict[int, Gtid] = {}
    last = ConnectState()
    count = 0
    reached = False
    try:
        for group in reader.groups():
            gtid = group.gtid
            first.setdefault(gtid.domain, gtid)
            last.update(gtid)
            begun = start.get(gtid.domain)
            if begun is not None and gtid.seq <= begun.seq:
                if gtid == stop.before or gtid == stop.at:
                    raise RestoreError(f"the backup already holds {gtid} (its position is {start}): nothing to stop at")
                if gtid == begun and stop.time is not None and group.timestamp >= stop.time:
                    raise RestoreError(
                        f"the backup is newer than the stop time: it holds {gtid}, committed at or after it;"
                        " restore from an older backup"
                    )
                continue
            if stop.ends_before(group):
                reached = True
                break
            count += 1
            if stop.ends_after(group):
                reached = True
                break
    finally:
        reader.close()
        pages.forget()
    missing = []
    for domain in sorted(set(start) | set(first) | set(first_state)):
        held = start.get(domain)
        after = held.seq if held is not None else 0
        oldest = first.get(domain)
        # The archive knows this domain from its first group, or only from the state before it.
        begins = oldest.seq if oldest is not None else None
        if begins is None:
            known = first_state.get(domain)
            if known is not None and known.seq > after:
                missing.append(f"{_seq_range(domain, after + 1, known.seq)} (purged from the archive)")
            continue
        if begins > after + 1:
            missing.append(_seq_range(domain, after + 1, begins - 1))
    if missing:
        raise RestoreError(
            f"the archive {archive} does not reach back to the backup's position {start or '(empty)'}:"
            f" missing GTIDs {', '.join(missing)}; restore needs an archive that holds every group"
            " after the backup (or a newer backup)"
        )
    if not reached:
        if stop.time is None:
            wanted = stop.before or stop.at
            raise RestoreError(
                f"the stop point {wanted} is not in the archive {archive} after the backup's position {start}"
                f" (the archive ends at {last or '(empty)'})"
            )
        log.warning("the archive ends at %s, before the stop time: everything is applied", last)
    return count


# --------------------------------------------------------------------------- the restore


class Restore:
    """One point-in-time restore into ``datadir`` (see the module docstring)."""

    def __init__(
        self,
        backup: str,
        archive: str,
        datadir: str,
        stop: StopPoint,
        *,
        parallel: int = 4,
        progress: JobProgress | None = None,
        server_options: tuple[str, ...] = (),
    ) -> None:
        self.backup = Path(backup).resolve()
        self.archive = str(Path(archive).resolve())
        self.datadir = Path(datadir).resolve()
        self.stop = stop
        self.parallel = parallel
        self.progress = progress or JobProgress("restore")
        self.server_options = server_options
        self.state: dict[str, Any] = {}
        self.server: PrivateServer | None = None
        self._source: GroupSource | None = None
        self._stopped = False

    # -- the state file --------------------------------------------------------------------------

    @property
    def state_path(self) -> Path:
        """``NEW/mariabinlog_restore.json``."""
        return self.datadir / STATE_FILE

    def _save(self, **changes: Any) -> None:
        self.state.update(changes)
        temp = self.state_path.with_name(STATE_FILE + ".tmp")
        with temp.open("w", encoding="utf-8") as handle:
            json.dump(self.state, handle, indent=1)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, self.state_path)

    def _wanted(self, info: BackupInfo) -> dict[str, Any]:
        return {
            "backup": str(self.backup),
            "archive": self.archive,
            "backup_position": str(info.position),
            "stop": self.stop.describe(),
        }

    def _resume_state(self, info: BackupInfo) -> None:
        """Load NEW's state file (a rerun) or, for a new restore, check that NEW is new or empty
        and that the archive fits the backup, then create NEW."""
        if self.state_path.exists():
            try:
                self.state = json.loads(self.state_path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:
                raise RestoreError(f"{self.state_path}: unreadable restore state: {err}") from None
            wanted = self._wanted(info)
            differs = [key for key, value in wanted.items() if self.state.get(key) != value]
            if differs:
                raise RestoreError(
                    f"{self.datadir} holds a restore of {self.state.get('backup')} {self.state.get('stop')}"
                    f" (stage {self.state.get('stage')}); rerun it with the same options, or restore into"
                    f" another --datadir ({', '.join(differs)} differ)"
                )
            pid = self.state.get("server_pid")
            if pid and not _gone(int(pid), self.datadir):
                raise RestoreError(
                    f"a mariadbd (pid {pid}) left by an earlier restore still runs on {self.datadir}; stop it first"
                )
            return
        if self.datadir.exists() and any(self.datadir.iterdir()):
            raise RestoreError(f"{self.datadir} exists and is not empty: restore writes a new datadir")
        total = check_archive(self.archive, info.position, self.stop)
        log.info("%d groups to apply after the backup's position %s", total, info.position)
        self.datadir.mkdir(parents=True, exist_ok=True)
        self.state = {}
        self._save(stage="copying", **self._wanted(info))

    # -- stages ---------------------------------------------------------------------------------

    def _copy_and_prepare(self) -> None:
        """Copy the backup into NEW (again, after a copy or prepare cut short) and prepare it."""
        for entry in self.datadir.iterdir():
            if entry.name not in (STATE_FILE, STATE_FILE + ".tmp"):
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        log.info("copying %s to %s", self.backup, self.datadir)
        shutil.copytree(self.backup, self.datadir, dirs_exist_ok=True, symlinks=True)
        backup_program = find_program("mariadb-backup", "mariabackup")
        result = subprocess.run(
            [backup_program, "--prepare", f"--target-dir={self.datadir}"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
        if result.returncode != 0:
            text = result.stderr.decode("utf-8", "replace")[-3000:]
            raise RestoreError(f"mariadb-backup --prepare of {self.datadir} failed ({result.returncode}):\n{text}")
        self._save(stage="replaying")

    def _server(self) -> PrivateServer:
        cnf = self.datadir / "backup-my.cnf"
        server = PrivateServer(self.datadir, defaults_file=cnf if cnf.is_file() else None, options=self.server_options)
        server.start()
        self.server = server
        self._save(server_pid=server.pid)
        return server

    def _replay(self, server: PrivateServer, start: ConnectState) -> ConnectState:
        """Apply the archive's groups after ``start`` up to the stop point; the position reached."""
        options = server.connection_options()
        if not self.state.get("position_table"):
            with Connection.open(options) as conn:
                if conn.rows(
                    "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME="
                    + sql_string(POSITION_TABLE.database)
                ):
                    raise RestoreError(
                        f"the backup already has a database {POSITION_TABLE.database!r}, which restore keeps its"
                        " position in"
                    )
            self._save(position_table=True)
        replicator = Replicator(options, table=POSITION_TABLE, workers=self.parallel, progress=self.progress)
        resumed = replicator.prepare(start)
        self.progress.position = resumed.copy()
        if resumed != start:
            log.info("resuming the replay after %s", resumed)
        # The source starts at the backup's position whatever was applied, so that the stop
        # point is seen even when an earlier run applied up to it; the filter skips what is done.
        source = StoppingSource(ArchiveSource(self.archive, start, follow=False), self.stop)
        self._source = source
        if not self._stopped:
            replicator.run(source, GroupFilter(start=resumed, strict=False))
        with Connection.open(options) as conn:
            reached, pending = POSITION_TABLE.read(conn)
        if self._stopped:
            raise RestoreError(f"stopped at {reached or start}; run the same command again to go on")
        if pending:
            raise RestoreError(f"the replay stopped with stand-alone groups pending: {pending}")
        merged = start.copy()
        for gtid in reached.values():
            merged.update(gtid)
        return merged

    def _finish(self, server: PrivateServer, reached: ConnectState) -> None:
        """Record the position as gtid_slave_pos, drop the position table."""
        with Connection.open(server.connection_options()) as conn:
            conn.query(f"SET GLOBAL gtid_slave_pos={sql_string(str(reached))}")
            conn.query(f"DROP DATABASE IF EXISTS `{POSITION_TABLE.database}`")

    def close(self) -> None:
        """Stop reading (SIGTERM/SIGINT): the replay ends after what is queued, the server is
        shut down cleanly and a rerun goes on from there."""
        self._stopped = True
        if self._source is not None:
            self._source.close()

    def run(self) -> ConnectState:
        """Restore (or go on with a restore cut short); returns the GTID position reached."""
        info = read_backup_info(self.backup)
        self._resume_state(info)
        stage = self.state.get("stage")
        if stage == "done":
            return ConnectState.parse(self.state["position"])
        if stage == "copying":
            self._copy_and_prepare()
        server = self._server()
        try:
            if self.state.get("stage") == "replaying":
                reached = self._replay(server, info.position)
                self._save(stage="finishing", position=str(reached))
            reached = ConnectState.parse(self.state["position"])
            self._finish(server, reached)
        except BaseException:
            self.server = None
            server.stop(check=False)
            raise
        self.server = None
        server.stop()
        self._save(stage="done", server_pid=None)
        return reached


def _gone(pid: int, datadir: Path) -> bool:
    """Whether process ``pid`` is no server on ``datadir`` any more (waits a while for it)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True
    if f"--datadir={datadir}".encode() not in command:
        return True  # the pid was reused by another program
    return wait_gone(pid, 120.0)
