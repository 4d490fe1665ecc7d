"""restore's checks without a server: the backup's info files, the stop point, and the archive
check (gaps named by GTID, a missing stop point) on archives written by our own engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from mariabinlog.codec.events import QueryEvent
from mariabinlog.codec.gtid import ConnectState, Gtid
from mariabinlog.engine import Engine
from mariabinlog.errors import RestoreError
from mariabinlog.replication.restore import StopPoint, check_archive, read_backup_info


def write_archive(directory: Path, gtids: list[str], first_time: int = 1_700_000_000) -> None:
    """An archive holding one stand-alone group per GTID, one second apart."""
    engine = Engine.open(str(directory))
    try:
        for n, text in enumerate(gtids):
            gtid = Gtid.parse(text)
            event = QueryEvent(query=b"CREATE TABLE t%d (id INT)" % n, database=b"d", server_id=gtid.server,
                               timestamp=first_time + n).encode()
            engine.commit(event, gtid=gtid, flags2=0x01 | 0x20, timestamp=first_time + n)
    finally:
        engine.close()


def backup_dir(tmp_path: Path, checkpoints: str = "backup_type = full-backuped\n",
               binlog_info: str | None = "mysql-bin.000001\t1040\t0-1-3,3-1-1\n") -> Path:
    path = tmp_path / "backup"
    path.mkdir()
    (path / "xtrabackup_checkpoints").write_text(checkpoints)
    if binlog_info is not None:
        (path / "xtrabackup_binlog_info").write_text(binlog_info)
    return path


def test_backup_info_reads_the_gtid_position(tmp_path: Path) -> None:
    info = read_backup_info(backup_dir(tmp_path))
    assert info.position == ConnectState.parse("0-1-3,3-1-1")
    assert info.backup_type == "full-backuped"


@pytest.mark.parametrize(
    ("checkpoints", "binlog_info", "message"),
    [
        (None, None, "not a mariadb-backup directory"),
        ("backup_type = incremental\n", "f\t4\t0-1-3\n", "an incremental backup"),
        ("backup_type = full-backuped\n", None, "without --log-bin"),
        ("backup_type = full-backuped\n", "mysql-bin.000001\t1040\n", "no GTID position"),
        ("backup_type = full-backuped\n", "mysql-bin.000001\t1040\tnonsense\n", "bad GTID position"),
    ],
)
def test_backup_info_refuses_what_it_cannot_use(
    tmp_path: Path, checkpoints: str | None, binlog_info: str | None, message: str
) -> None:
    if checkpoints is None:
        path = tmp_path / "empty"
        path.mkdir()
    else:
        path = backup_dir(tmp_path, checkpoints, binlog_info)
    with pytest.raises(RestoreError, match=message):
        read_backup_info(path)


def test_stop_point_takes_exactly_one_kind() -> None:
    with pytest.raises(RestoreError, match="exactly one"):
        StopPoint()
    with pytest.raises(RestoreError, match="exactly one"):
        StopPoint(before=Gtid(0, 1, 2), time=5)
    assert StopPoint(at=Gtid(0, 1, 2)).describe() == "after 0-1-2"


def test_check_archive_counts_the_groups_to_the_stop_point(tmp_path: Path) -> None:
    write_archive(tmp_path / "a", [f"0-1-{n}" for n in range(1, 11)])
    start = ConnectState.parse("0-1-3")
    assert check_archive(str(tmp_path / "a"), start, StopPoint(before=Gtid(0, 1, 8))) == 4
    assert check_archive(str(tmp_path / "a"), start, StopPoint(at=Gtid(0, 1, 8))) == 5
    assert check_archive(str(tmp_path / "a"), start, StopPoint(time=1_700_000_000 + 5)) == 2


def test_check_archive_names_the_missing_gtids(tmp_path: Path) -> None:
    write_archive(tmp_path / "a", ["1-1-4", "1-1-5"] + [f"0-1-{n}" for n in range(6, 11)])
    with pytest.raises(RestoreError) as raised:
        check_archive(str(tmp_path / "a"), ConnectState.parse("0-1-2,1-1-4"), StopPoint(at=Gtid(0, 1, 9)))
    assert "missing GTIDs 0-*-3 to 0-*-5;" in str(raised.value)
    with pytest.raises(RestoreError) as raised:
        check_archive(str(tmp_path / "a"), ConnectState.parse("0-1-5"), StopPoint(at=Gtid(0, 1, 9)))
    assert "missing GTIDs 1-*-1 to 1-*-3;" in str(raised.value)  # a domain the backup never saw


def test_check_archive_refuses_a_stop_point_it_does_not_hold(tmp_path: Path) -> None:
    write_archive(tmp_path / "a", [f"0-1-{n}" for n in range(1, 6)])
    with pytest.raises(RestoreError, match=r"the stop point 0-1-9 is not in the archive .* ends at 0-1-5"):
        check_archive(str(tmp_path / "a"), ConnectState.parse("0-1-2"), StopPoint(before=Gtid(0, 1, 9)))
    with pytest.raises(RestoreError, match="the backup is newer than the stop time: it holds 0-1-3"):
        check_archive(str(tmp_path / "a"), ConnectState.parse("0-1-3"), StopPoint(time=1_700_000_000 + 1))
    with pytest.raises(RestoreError, match="the backup already holds 0-1-2"):
        check_archive(str(tmp_path / "a"), ConnectState.parse("0-1-3"), StopPoint(before=Gtid(0, 1, 2)))
