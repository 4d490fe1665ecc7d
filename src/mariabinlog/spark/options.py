"""Read options of the ``mariabinlog`` Spark source, parsed once into picklable values.

Spark hands a data source its options as a case-insensitive dict of strings; this module turns
them into :class:`ScanOptions` (what to read and how to cut it) and :class:`ScanFilter` (which
event groups to keep).  Both are frozen dataclasses of plain values, so they travel inside the
reader and the input partitions to the executors.

Filter semantics (all stateless, so every partition can apply them on its own; the positions and
id rules are the codec's one GTID policy, :class:`~mariabinlog.codec.gtid.GtidPolicy`):

* ``startPosition`` ``"d-s-n,..."``: per listed domain keep groups with ``seq > n`` (exclusive,
  as ``mariadb-binlog --start-position``); domains not listed are kept from the beginning.
* ``stopPosition``: per listed domain keep groups with ``seq <= n``; once a stop position is given,
  domains it does not list are dropped (as ``mariadb-binlog --stop-position``).
* ``doDomainIds``/``ignoreDomainIds``, ``doServerIds``/``ignoreServerIds``: comma lists, applied to
  the GTID's domain and server id (whole groups, never parts of one).
* ``startDatetime``/``stopDatetime``: keep groups whose GTID event time is in ``[start, stop)``
  (UTC; ISO text or epoch seconds).  Events outside groups are judged by their own time.
* Pushed-down Spark filters on ``domain_id``, ``gtid_server_id`` and ``seq_no`` narrow the same
  filter (Spark still re-checks them; here they only prune).

The GTID seek (``.ibb`` GTID state records, legacy Gtid_list events) assumes sequence numbers grow
within each domain, as ``gtid_strict_mode`` guarantees; ``gtidSeek=false`` turns it off.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..codec.gtid import BinlogState, Gtid, GtidList, GtidPolicy, IdFilter, parse_ids
from ..errors import GtidError, OptionError
from .fs import Listing, Storage

VIEWS = ("events", "rows", "groups")
DEFAULT_MAX_PARTITION_BYTES = 128 * 1024 * 1024
DEFAULT_OPEN_COST_BYTES = 4 * 1024 * 1024
DEFAULT_MIN_PARTITIONS = 2
DEFAULT_BATCH_ROWS = 32768
_SIZE_SUFFIXES = {"b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30}


def parse_size(name: str, text: str, minimum: int = 1) -> int:
    """``"128m"``, ``"64k"``, ``"1g"`` or plain bytes, as Spark's byte-size confs accept them."""
    value = text.strip().lower()
    digits = value.rstrip("bkmg")
    suffix = value[len(digits) :] or "b"
    if not digits.isdigit() or suffix not in _SIZE_SUFFIXES:
        raise OptionError(f"option {name}: {text!r} is not a size such as 134217728, 64k or 128m")
    size = int(digits) * _SIZE_SUFFIXES[suffix]
    if size < minimum:
        raise OptionError(f"option {name} must be at least {minimum}, not {text!r}")
    return size


def parse_bool(name: str, text: str) -> bool:
    """Spark-style boolean option text."""
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise OptionError(f"option {name}: {text!r} is not true or false")


def parse_datetime(name: str, text: str) -> int:
    """Epoch seconds from ``"2024-01-01 00:00:00"`` (UTC unless it has an offset) or a number."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise OptionError(f"option {name}: {text!r} is neither epoch seconds nor an ISO date-time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp())


def _gtid_positions(name: str, text: str) -> GtidList:
    try:
        gtids = GtidList.parse(text)
    except GtidError as err:
        raise OptionError(f"option {name}: {err}") from None
    seen: set[int] = set()
    for gtid in gtids:
        if gtid.domain in seen:
            raise OptionError(f"option {name}: domain {gtid.domain} is listed twice")
        seen.add(gtid.domain)
    return gtids


@dataclass(frozen=True)
class ScanFilter:
    """Which event groups to keep; also answers "can anything before/after this state pass?".

    ``positions`` is the codec's one GTID policy (:class:`~mariabinlog.codec.gtid.GtidPolicy`:
    start/stop positions and the domain and server id rules), asked statelessly (per-domain
    exclusive lower and inclusive upper ``seq_no`` bounds) so that every partition applies it on
    its own; ``seq_min``/``seq_max`` bound every domain (from pushed filters), ``start_time``/
    ``stop_time`` the GTID event time.
    """

    positions: GtidPolicy = field(default_factory=GtidPolicy)
    seq_min: int | None = None
    seq_max: int | None = None
    start_time: int | None = None
    stop_time: int | None = None

    @property
    def ids(self) -> IdFilter:
        """The domain and server id rules."""
        return self.positions.ids

    @property
    def by_gtid(self) -> bool:
        """True if the filter looks at GTIDs (events outside groups are then dropped)."""
        return self.positions.by_gtid or self.seq_min is not None or self.seq_max is not None

    def allows_domain(self, domain: int) -> bool:
        """Whether groups of ``domain`` can pass at all."""
        return self.positions.allows_domain(domain)

    def _bounds(self, domain: int) -> tuple[int | None, int | None]:
        """(exclusive lower, inclusive upper) seq_no bound of ``domain``."""
        low, high = self.positions.bounds(domain)
        if self.seq_min is not None:
            low = self.seq_min - 1 if low is None else max(low, self.seq_min - 1)
        if self.seq_max is not None:
            high = self.seq_max if high is None else min(high, self.seq_max)
        return low, high

    def accepts(self, domain: int, server: int, seq: int, timestamp: int) -> bool:
        """Whether the group with this GTID and GTID-event time is kept."""
        if not self.allows_domain(domain):
            return False
        if not self.ids.allows_server(server):
            return False
        low, high = self._bounds(domain)
        if (low is not None and seq <= low) or (high is not None and seq > high):
            return False
        return self.accepts_time(timestamp)

    def accepts_time(self, timestamp: int) -> bool:
        """Whether an event or group time is inside ``[start_time, stop_time)``."""
        if self.start_time is not None and timestamp < self.start_time:
            return False
        return self.stop_time is None or timestamp < self.stop_time

    def none_before(self, state: BinlogState) -> bool:
        """True if no group written before a point whose binlog state is ``state`` can pass.

        With growing seq_nos, every group of domain d before that point has
        ``seq <= last seq of d in state``; it fails if that is at or below d's lower bound.
        """
        if not self.by_gtid:
            return False
        for domain, seq in _domain_maxima(state).items():
            if not self.allows_domain(domain):
                continue
            low, _ = self._bounds(domain)
            if low is None or seq > low:
                return False
        return True

    def none_after(self, state: BinlogState) -> bool:
        """True if no group written after a point whose binlog state is ``state`` can pass."""
        domains = self.positions.finite_domains()
        if domains is None:
            return False
        maxima = _domain_maxima(state)
        for domain in domains:
            if not self.allows_domain(domain):
                continue
            _, high = self._bounds(domain)
            seq = maxima.get(domain)
            if high is None or seq is None or seq < high:
                return False
        return True

    def narrowed(
        self,
        *,
        only_domains: Iterable[int] | None = None,
        only_servers: Iterable[int] | None = None,
        seq_min: int | None = None,
        seq_max: int | None = None,
    ) -> ScanFilter:
        """This filter AND the given constraints (from pushed-down Spark filters)."""
        ids = self.ids.narrowed(do_domains=only_domains, do_servers=only_servers)
        changes: dict[str, object] = {"positions": self.positions.with_ids(ids)}
        if seq_min is not None:
            changes["seq_min"] = seq_min if self.seq_min is None else max(self.seq_min, seq_min)
        if seq_max is not None:
            changes["seq_max"] = seq_max if self.seq_max is None else min(self.seq_max, seq_max)
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def _domain_maxima(state: BinlogState) -> dict[int, int]:
    maxima: dict[int, int] = {}
    for gtid in state.to_list():
        seen = maxima.get(gtid.domain)
        if seen is None or gtid.seq > seen:
            maxima[gtid.domain] = gtid.seq
    return maxima


def state_from_gtids(gtids: Iterable[tuple[int, int, int]]) -> BinlogState:
    """A :class:`BinlogState` from (domain, server, seq) triples."""
    return BinlogState.from_list(Gtid(*g) for g in gtids)


@dataclass(frozen=True)
class ScanOptions:
    """Everything a partition needs to know besides its byte ranges."""

    view: str = "events"
    table: tuple[str, str] | None = None
    filter: ScanFilter = field(default_factory=ScanFilter)
    verify_checksum: bool = True
    gtid_seek: bool = True
    batch_rows: int = DEFAULT_BATCH_ROWS
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    open_cost_bytes: int = DEFAULT_OPEN_COST_BYTES
    min_partitions: int = DEFAULT_MIN_PARTITIONS
    listing: Listing = field(default_factory=Listing)
    #: ``schemaHistory``: a saved schema history (JSON) naming and typing the rows of a NO_LOG binlog.
    schema_history: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> ScanOptions:
        """Parse Spark options (keys case-insensitive); ``defaults`` fill keys the user left out."""
        opts = {k.lower(): v for k, v in (defaults or {}).items()}
        opts.update({k.lower(): v for k, v in options.items()})
        known = {
            "path", "paths", "view", "table", "startposition", "stopposition", "dodomainids", "ignoredomainids",
            "doserverids", "ignoreserverids", "startdatetime", "stopdatetime", "verifychecksum", "gtidseek",
            "batchrows", "maxpartitionbytes", "opencostinbytes", "minpartitions", "maxgroupspertrigger",
            "startingoffset",
            "pathglobfilter", "recursivefilelookup", "modifiedbefore", "modifiedafter", "ignoremissingfiles",
            "ignorecorruptfiles", "schemahistory",
        }
        unknown = sorted(k for k in set(opts) - known if not k.startswith("fs."))
        if unknown:
            raise OptionError(f"unknown mariabinlog option(s): {', '.join(unknown)}")
        view = opts.get("view", "events").strip().lower()
        if view not in VIEWS:
            raise OptionError(f"option view: {view!r} is not one of {', '.join(VIEWS)}")
        table = None
        if "table" in opts:
            db, dot, name = opts["table"].strip().partition(".")
            if not dot or not db or not name:
                raise OptionError(f"option table: {opts['table']!r} is not database.table")
            if view != "rows":
                raise OptionError("option table needs option view=rows (typed row images of one table)")
            table = (db, name)
        starts = _gtid_positions("startPosition", opts["startposition"]) if "startposition" in opts else ()
        stops = _gtid_positions("stopPosition", opts["stopposition"]) if "stopposition" in opts else ()
        do_domains = parse_ids("option doDomainIds", opts["dodomainids"]) if "dodomainids" in opts else None
        skip_domains = parse_ids("option ignoreDomainIds", opts["ignoredomainids"]) if "ignoredomainids" in opts else None
        if do_domains is not None and skip_domains is not None:
            raise OptionError("options doDomainIds and ignoreDomainIds exclude each other")
        do_servers = parse_ids("option doServerIds", opts["doserverids"]) if "doserverids" in opts else None
        skip_servers = parse_ids("option ignoreServerIds", opts["ignoreserverids"]) if "ignoreserverids" in opts else None
        if do_servers is not None and skip_servers is not None:
            raise OptionError("options doServerIds and ignoreServerIds exclude each other")
        start_time = parse_datetime("startDatetime", opts["startdatetime"]) if "startdatetime" in opts else None
        stop_time = parse_datetime("stopDatetime", opts["stopdatetime"]) if "stopdatetime" in opts else None
        group_filter = ScanFilter(
            positions=GtidPolicy(
                starts,
                stops,
                IdFilter(do_domains, skip_domains or frozenset(), do_servers, skip_servers or frozenset()),
                stop_given="stopposition" in opts,
            ),
            start_time=start_time,
            stop_time=stop_time,
        )
        batch_rows = parse_size("batchRows", opts.get("batchrows", str(DEFAULT_BATCH_ROWS)))
        min_partitions = opts.get("minpartitions", str(DEFAULT_MIN_PARTITIONS)).strip()
        if not min_partitions.isdigit() or int(min_partitions) < 1:
            raise OptionError(f"option minPartitions: {min_partitions!r} is not a positive number")
        return cls(
            view=view,
            table=table,
            filter=group_filter,
            verify_checksum=parse_bool("verifyChecksum", opts.get("verifychecksum", "true")),
            gtid_seek=parse_bool("gtidSeek", opts.get("gtidseek", "true")),
            batch_rows=batch_rows,
            max_partition_bytes=parse_size(
                "maxPartitionBytes", opts.get("maxpartitionbytes", str(DEFAULT_MAX_PARTITION_BYTES))
            ),
            open_cost_bytes=parse_size(
                "openCostInBytes", opts.get("opencostinbytes", str(DEFAULT_OPEN_COST_BYTES)), minimum=0
            ),
            min_partitions=int(min_partitions),
            listing=Listing(
                glob_filter=opts.get("pathglobfilter"),
                recursive=parse_bool("recursiveFileLookup", opts.get("recursivefilelookup", "false")),
                modified_before=(parse_datetime("modifiedBefore", opts["modifiedbefore"])
                                 if "modifiedbefore" in opts else None),
                modified_after=(parse_datetime("modifiedAfter", opts["modifiedafter"])
                                if "modifiedafter" in opts else None),
                ignore_missing=parse_bool("ignoreMissingFiles", opts.get("ignoremissingfiles", "false")),
                ignore_corrupt=parse_bool("ignoreCorruptFiles", opts.get("ignorecorruptfiles", "false")),
                storage=Storage.parse(opts),
            ),
            schema_history=opts.get("schemahistory", "").strip() or None,
        )
