"""Per-domain parallel replay: a Spark job that applies binlog event groups to a MariaDB server.

MariaDB orders transactions only within a GTID domain, so the unit of parallel apply is the
domain: the ``groups`` view is partitioned by ``domain_id`` (one task per domain), each task
sorts its groups into binlog order and applies them through the command-line replica's apply
code (:class:`mariabinlog.replication.apply.TargetSession`: row events as ``BINLOG``
statements, queries with their session context, the applied GTID committed with the data in
the target's position table).  A task first reads that table and skips the groups already
applied, so a retried task, or a rerun of the whole job, applies every group exactly once.

DDL is a barrier, as in ``mariabinlog replicate``: groups flagged DDL or stand-alone split the
stream into epochs; each epoch's domains run in parallel, then the DDL group runs alone, so
tables exist before any domain writes into them.  ``ddl_barrier=False`` trusts the domains to
be independent and runs everything in one job.

The position table and pending stand-alone groups are prepared once on the driver by the
replica's :class:`~mariabinlog.replication.apply.Replicator`.  Inputs are one binlog stream
(one directory or file list of one server); groups are ordered by ``(file_no, position)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..codec.events import CHECKSUM_OFF, FL_DDL, FL_STANDALONE
from ..codec.gtid import Gtid
from ..codec.events.stream import EventStreamDecoder
from ..codec.groups import EventGroup
from ..replication.apply import PositionTable, Replicator, TargetSession
from ..replication.net import ConnectionOptions

_ORDER = ("file_no", "position")
_BARRIER = FL_DDL | FL_STANDALONE


def event_group(row: Any) -> EventGroup:
    """The replica's :class:`EventGroup` for one row of the ``groups`` view."""
    decoder = EventStreamDecoder(checksum_alg=CHECKSUM_OFF)
    raw = [bytes(data) for data in row["events"]]
    events = [decoder.decode(data, 0) for data in raw]
    gtid = Gtid(row["domain_id"], row["gtid_server_id"], row["seq_no"])
    return EventGroup(gtid, raw=raw, events=events, source=row["source_file"])


def apply_groups(rows: Iterable[Any], target: str, channel: str, preserve_gtids: bool) -> Iterator[tuple[int, int]]:
    """Apply rows of the ``groups`` view (sorted: domain, then binlog order) to ``target``.

    Yields ``(domain_id, groups applied)`` per domain met; groups at or before the domain's
    recorded position are skipped.
    """
    table = PositionTable(channel=channel)
    session = TargetSession(ConnectionOptions.from_url(target), table, preserve_gtids=preserve_gtids)
    counts: dict[int, int] = {}
    try:
        position, _ = table.read(session.connect())
        for row in rows:
            domain = row["domain_id"]
            counts.setdefault(domain, 0)
            done = position.get(domain)
            if done is not None and row["seq_no"] <= done.seq:
                continue
            session.apply(event_group(row))
            counts[domain] += 1
    finally:
        session.close()
    yield from counts.items()


def replay(
    spark: Any,
    source: str,
    target: str,
    *,
    channel: str = "spark",
    options: dict[str, str] | None = None,
    ddl_barrier: bool = True,
    preserve_gtids: bool = True,
) -> dict[int, int]:
    """Apply the event groups of ``source`` to the server at ``target`` (``mariadb://`` URL).

    ``options`` are read options of the ``mariabinlog`` source (GTID window, domain filters).
    Returns the number of groups applied per domain (0 for a domain already up to date).
    """
    from pyspark.sql import functions as F

    from .source import register

    register(spark)
    Replicator(ConnectionOptions.from_url(target), table=PositionTable(channel=channel),
               preserve_gtids=preserve_gtids).prepare(None)
    reader = spark.read.format("mariabinlog").option("view", "groups")
    for key, value in (options or {}).items():
        reader = reader.option(key, value)
    groups = reader.load(source)
    if not ddl_barrier:
        return _apply_epoch(groups, target, channel, preserve_gtids)
    barrier = (F.col("gtid_flags").bitwiseAND(_BARRIER) != 0)
    walls = groups.filter(barrier).orderBy(*_ORDER).collect()
    totals: dict[int, int] = {}
    previous: tuple[int, int] | None = None
    for wall in [*walls, None]:
        epoch = groups.filter(~barrier)
        if previous is not None:
            epoch = epoch.filter(_after(previous))
        if wall is not None:
            epoch = epoch.filter(~_after((wall["file_no"], wall["position"] - 1)))
        for domain, count in _apply_epoch(epoch, target, channel, preserve_gtids).items():
            totals[domain] = totals.get(domain, 0) + count
        if wall is not None:
            for domain, count in apply_groups([wall], target, channel, preserve_gtids):
                totals[domain] = totals.get(domain, 0) + count
            previous = (wall["file_no"], wall["position"])
    return totals


def _after(point: tuple[int, int]) -> Any:
    """Rows whose (file_no, position) comes after ``point``."""
    from pyspark.sql import functions as F

    file_no, position = point
    return (F.col("file_no") > file_no) | ((F.col("file_no") == file_no) & (F.col("position") > position))


def _apply_epoch(groups: Any, target: str, channel: str, preserve_gtids: bool) -> dict[int, int]:
    """One task per domain: partition by domain, sort into binlog order, apply."""
    domains = sorted(r[0] for r in groups.select("domain_id").distinct().collect())
    if not domains:
        return {}
    index = {domain: i for i, domain in enumerate(domains)}
    keyed = groups.rdd.map(lambda row: ((row["domain_id"], row["file_no"], row["position"]), row))
    ordered = keyed.repartitionAndSortWithinPartitions(len(domains), partitionFunc=lambda key: index[key[0]])
    applied = ordered.mapPartitions(
        lambda items: apply_groups((row for _, row in items), target, channel, preserve_gtids)
    ).collect()
    totals: dict[int, int] = {}
    for domain, count in applied:
        totals[domain] = totals.get(domain, 0) + count
    return totals
