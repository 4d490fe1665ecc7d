"""GTIDs, GTID lists, binlog GTID state, connect state and id filters (pure, no I/O).

* :class:`Gtid` / :class:`GtidList`: ``domain-server-seq`` values and ``"0-1-5,1-2-9"`` lists
  with strict parsing (domain and server u32, seq u64).
* :class:`BinlogState`: last GTID per (domain, server) like ``rpl_binlog_state`` (Gtid_list
  events, ``.ibb`` GTID_STATE records), with ``is_before_pos`` for the ``.ibb`` binary search.
* :class:`ConnectState`: one GTID per domain, the replication start position
  (``@slave_connect_state``).
* :class:`IdFilter` and :func:`parse_ids`: which event groups pass by their GTID's domain and
  server id (``do``/``ignore`` lists), the one definition the dump's option policy
  (:mod:`mariabinlog.tools.dump.gtid_filter`), the replica and the Spark source all use.
* :func:`mysys_hash_order`: the order in which MariaDB walks a ``HASH`` of ids, which fixes
  the order of ``Gtid_list`` entries and of per-domain diagnostics.

Not observable in the corpus: ibb-format.md §7 summarises ``is_before_pos`` per domain;
MariaDB's source compares the state's GTID of the *same server id*
(``rpl_binlog_state_base::is_before_pos``), see :meth:`BinlogState.is_before_pos`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple, Self

from ..errors import GtidError, OptionError

__all__ = [
    "U32_MAX",
    "U64_MAX",
    "BinlogState",
    "ConnectState",
    "Gtid",
    "GtidList",
    "IdFilter",
    "bounded_int",
    "mysys_hash_order",
    "parse_ids",
]

U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1

_DIGITS = re.compile(r"[0-9]+")
_FIELDS = (("domain id", U32_MAX), ("server id", U32_MAX), ("sequence number", U64_MAX))


def bounded_int(digits: str, limit: int) -> int | None:
    """``int(digits)`` if it is at most ``limit``; cheap on absurdly long digit strings."""
    stripped = digits.lstrip("0")
    if len(stripped) > 20:
        return None
    value = int(stripped or "0")
    return value if value <= limit else None


class Gtid(NamedTuple):
    """One global transaction id; a plain tuple, so it is immutable, hashable and fast.

    The constructor does not check ranges (decoders unpack them from fixed-width fields);
    :meth:`parse` does.
    """

    domain: int
    server: int
    seq: int

    def __str__(self) -> str:
        return f"{self.domain}-{self.server}-{self.seq}"

    @classmethod
    def parse(cls, text: str) -> Gtid:
        """Parse ``"domain-server-seq"`` (decimal digits only); :class:`GtidError` says what is wrong."""
        parts = text.split("-")
        if len(parts) != 3:
            raise GtidError(f"GTID {text!r} is not domain-server-seq")
        values = []
        for part, (name, limit) in zip(parts, _FIELDS):
            if not _DIGITS.fullmatch(part):
                raise GtidError(f"{name} {part!r} of GTID {text!r} is not a decimal number")
            value = bounded_int(part, limit)
            if value is None:
                raise GtidError(f"{name} {part} of GTID {text!r} is larger than {limit}")
            values.append(value)
        return cls(*values)


class GtidList(tuple[Gtid, ...]):
    """An ordered list of GTIDs, written ``"0-1-5,1-2-9"`` (empty list: ``""``)."""

    __slots__ = ()

    def __new__(cls, gtids: Iterable[Gtid] = ()) -> Self:
        return super().__new__(cls, gtids)

    @classmethod
    def parse(cls, text: str) -> GtidList:
        """Parse a comma-separated list; :class:`GtidError` names the bad element."""
        if text == "":
            return cls()
        gtids = []
        for number, part in enumerate(text.split(","), 1):
            try:
                gtids.append(Gtid.parse(part))
            except GtidError as err:
                raise GtidError(f"element {number} of GTID list {text!r}: {err}") from None
        return cls(gtids)

    def __str__(self) -> str:
        return ",".join(map(str, self))

    def __repr__(self) -> str:
        return f"GtidList.parse({str(self)!r})"


def mysys_hash_order(keys: Iterable[int]) -> list[int]:
    """The order in which MariaDB iterates a ``HASH`` of uint32 keys inserted in ``keys`` order.

    mariadb-binlog prints per-domain diagnostics by walking such hashes (``my_hash_element``),
    and ``my_hash_insert`` (mysys/hash.c, linear hashing) moves records around as the table
    grows.  This replays it step by step: hash = ``my_hash_sort_bin`` over the 4 little-endian
    key bytes, records ``[key, hash, next]`` in the array the real one iterates.
    """
    low_find, low_used, high_find, high_used = 1, 2, 4, 8
    data: list[list[int]] = []
    blength = 1

    def mask(hashnr: int, buffmax: int, maxlength: int) -> int:
        if hashnr & (buffmax - 1) < maxlength:
            return hashnr & (buffmax - 1)
        return hashnr & ((buffmax >> 1) - 1)

    for records, key in enumerate(keys):  # records: how many the hash held before this key
        nr1, nr2 = 1, 4
        for byte in key.to_bytes(4, "little"):
            nr1 = (nr1 ^ ((((nr1 & 63) + nr2) * byte) + (nr1 << 8))) & U64_MAX
            nr2 += 3
        current = nr1 & U32_MAX
        data.append([0, 0, -1])  # -1: NO_RECORD
        empty = len(data) - 1
        halfbuff = blength >> 1
        idx = first_index = records - halfbuff
        if idx != records:
            # Split the chain of bucket first_index: records with the halfbuff bit set move to
            # the new bucket ("high"), the others stay ("low"); gpos/gpos2 are pending writes.
            flag = 0
            gpos = gpos2 = 0
            rec: list[int] = []
            rec2: list[int] = []
            while True:
                pos = idx
                hash_nr = data[pos][1]
                if flag == 0 and mask(hash_nr, blength, records) != first_index:
                    break
                if not hash_nr & halfbuff:
                    if not flag & low_find:
                        if flag & high_find:
                            flag = low_find | high_find
                            gpos, empty = empty, pos
                        else:
                            flag = low_find | low_used
                            gpos = pos
                    else:
                        if not flag & low_used:
                            data[gpos] = [*rec, pos]
                            flag = (flag & high_find) | low_find | low_used
                        gpos = pos
                    rec = data[pos][:2]
                else:
                    if not flag & high_find:
                        flag = (flag & low_find) | high_find
                        gpos2, empty = empty, pos
                    else:
                        if not flag & high_used:
                            data[gpos2] = [*rec2, pos]
                            flag = (flag & low_find) | high_find | high_used
                        gpos2 = pos
                    rec2 = data[pos][:2]
                idx = data[pos][2]
                if idx == -1:
                    break
            if flag & (low_find | low_used) == low_find:
                data[gpos] = [*rec, -1]
            if flag & (high_find | high_used) == high_find:
                data[gpos2] = [*rec2, -1]
        pos = mask(current, blength, records + 1)
        if pos == empty:
            data[pos] = [key, current, -1]
        else:
            data[empty] = list(data[pos])
            home = mask(data[pos][1], blength, records + 1)
            if pos == home:
                data[pos] = [key, current, empty]
            else:
                data[pos] = [key, current, -1]
                prev = home
                while data[prev][2] != pos:  # movelink(): the chain that led to pos leads to empty
                    prev = data[prev][2]
                data[prev][2] = empty
        if records + 1 == blength:
            blength += blength
    return [record[0] for record in data]


class ConnectState(Mapping[int, Gtid]):
    """The slave connect state: at most one GTID per domain, the last one already applied.

    Replication starts after each listed GTID; domains not listed start from the beginning.
    """

    __slots__ = ("_by_domain",)

    def __init__(self, gtids: Iterable[Gtid] = ()) -> None:
        self._by_domain: dict[int, Gtid] = {}
        for gtid in gtids:
            seen = self._by_domain.get(gtid.domain)
            if seen is not None:
                raise GtidError(f"GTID {seen} and {gtid} conflict (duplicate domain id {gtid.domain})")
            self._by_domain[gtid.domain] = gtid

    @classmethod
    def parse(cls, text: str) -> ConnectState:
        """Parse ``@slave_connect_state`` text (``""`` = from the beginning)."""
        return cls(GtidList.parse(text))

    def __getitem__(self, domain: int) -> Gtid:
        return self._by_domain[domain]

    def __iter__(self) -> Iterator[int]:
        return iter(self._by_domain)

    def __len__(self) -> int:
        return len(self._by_domain)

    def get(self, domain: int, default: Gtid | None = None) -> Gtid | None:  # type: ignore[override]
        """The domain's GTID, or ``default`` (the dict's own lookup: a job asks per group)."""
        return self._by_domain.get(domain, default)

    def update(self, gtid: Gtid) -> None:
        """Record ``gtid`` as the last applied GTID of its domain."""
        self._by_domain[gtid.domain] = gtid

    def copy(self) -> ConnectState:
        """An independent copy."""
        return ConnectState(self._by_domain.values())

    def to_list(self) -> GtidList:
        """The GTIDs, in the order their domains were first given."""
        return GtidList(self._by_domain.values())

    def __str__(self) -> str:
        return str(self.to_list())

    def __repr__(self) -> str:
        return f"ConnectState.parse({str(self)!r})"


class BinlogState:
    """The binlog GTID state: the last GTID of every (domain, server) pair.

    Like ``rpl_binlog_state``: domains keep the order they first appeared in, servers within a
    domain too, except that the server that wrote the domain's most recent GTID comes last.
    That is the order of Gtid_list events and ``.ibb`` GTID_STATE records (up to MariaDB's
    hash order, which :meth:`mariadb_order` reproduces where it matters).
    """

    __slots__ = ("_domains", "_last")

    def __init__(self) -> None:
        self._domains: dict[int, dict[int, int]] = {}  # domain -> {server: seq}
        self._last: dict[int, int] = {}  # domain -> server of its most recent GTID

    @classmethod
    def from_list(cls, gtids: Iterable[Gtid]) -> BinlogState:
        """Load a state from a list (Gtid_list event, GTID_STATE record, ``@@gtid_binlog_state``)."""
        state = cls()
        for gtid in gtids:
            state.update(gtid)
        return state

    def update(self, gtid: Gtid) -> None:
        """Record ``gtid`` as the newest GTID of its domain and of its (domain, server) pair."""
        domain, server, seq = gtid
        servers = self._domains.get(domain)
        if servers is None:
            self._domains[domain] = {server: seq}
        else:
            servers[server] = seq
        self._last[domain] = server

    def copy(self) -> BinlogState:
        """An independent copy."""
        state = BinlogState()
        state._domains = {domain: dict(servers) for domain, servers in self._domains.items()}
        state._last = dict(self._last)
        return state

    def last(self, domain: int) -> Gtid | None:
        """The most recent GTID of ``domain``, or None."""
        server = self._last.get(domain)
        return None if server is None else Gtid(domain, server, self._domains[domain][server])

    def find(self, domain: int, server: int) -> Gtid | None:
        """The last GTID that ``server`` wrote in ``domain``, or None."""
        seq = self._domains.get(domain, {}).get(server)
        return None if seq is None else Gtid(domain, server, seq)

    def _ordered(self, domains: Iterable[int], hashed: bool) -> Iterator[Gtid]:
        for domain in domains:
            servers = self._domains[domain]
            last = self._last[domain]
            for server in mysys_hash_order(servers) if hashed else servers:
                if server != last:
                    yield Gtid(domain, server, servers[server])
            yield Gtid(domain, last, servers[last])

    def to_list(self) -> GtidList:
        """All GTIDs: domains in first-seen order, each domain's most recent GTID last."""
        return GtidList(self._ordered(self._domains, False))

    def mariadb_order(self) -> GtidList:
        """All GTIDs in the order MariaDB's ``rpl_binlog_state`` iterates them (its HASH order)."""
        return GtidList(self._ordered(mysys_hash_order(self._domains), True))

    def connect_state(self) -> ConnectState:
        """One GTID per domain (its most recent): where a replica of this state would start."""
        return ConnectState(
            Gtid(domain, server, self._domains[domain][server]) for domain, server in self._last.items()
        )

    def is_before_pos(self, pos: ConnectState) -> bool:
        """True if this state lies at or before the connect state ``pos`` (ibb-format.md §7).

        As ``rpl_binlog_state_base::is_before_pos``: false if, for a GTID of ``pos``, the state
        holds a GTID of the same domain *and server* that is later, or equal but followed by
        another server's GTID in that domain; false if the state has a domain ``pos`` lacks.
        """
        for domain, server, seq in pos.values():
            servers = self._domains.get(domain)
            if servers is None or server not in servers:
                continue
            mine = servers[server]
            if mine > seq or (mine == seq and self._last[domain] != server):
                return False
        return all(domain in pos for domain in self._domains)

    def __len__(self) -> int:
        return sum(map(len, self._domains.values()))

    def __iter__(self) -> Iterator[Gtid]:
        return iter(self.to_list())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BinlogState):
            return NotImplemented
        return self._domains == other._domains and self._last == other._last

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return str(self.to_list())

    def __repr__(self) -> str:
        return f"BinlogState.from_list(GtidList.parse({str(self)!r}))"


# ----------------------------------------------------------------------------------------------
# Groups by domain and server id

#: One id of a mariadb-binlog id list: blanks and ``+`` allowed before the digits.
_TOOL_ID = re.compile(r"[ \t\n\v\f\r]*\+?([0-9]+)")


def parse_ids(what: str, text: str, *, tool_syntax: bool = False) -> frozenset[int]:
    """A comma list of u32 ids (domain or server ids); ``what`` names the option in errors.

    By default blanks around an id are allowed, empty parts are skipped and an id must fit in
    32 bits.  ``tool_syntax`` reads ``mariadb-binlog``'s syntax instead: every part must be an
    id, with blanks and ``+`` before the digits, and ids up to 2**64-1 keep their low 32 bits.
    Raises :class:`OptionError` naming the bad part.
    """
    ids = set()
    for part in text.split(","):
        if tool_syntax:
            match = _TOOL_ID.fullmatch(part)
            value = None if match is None else bounded_int(match.group(1), U64_MAX)
            if value is not None:
                value &= U32_MAX
        else:
            part = part.strip()
            if not part:
                continue
            value = bounded_int(part, U32_MAX) if _DIGITS.fullmatch(part) else None
        if value is None:
            raise OptionError(f"{what}: {part!r} is not an id between 0 and {U32_MAX}")
        ids.add(value)
    return frozenset(ids)


@dataclass(frozen=True, slots=True)
class IdFilter:
    """Which groups pass by their GTID's domain id and server id.

    ``do_*`` (None = no such rule) lets only the listed ids pass, ``ignore_*`` drops the
    listed ids.  Frozen and picklable, so it travels to Spark executors too.
    """

    do_domains: frozenset[int] | None = None
    ignore_domains: frozenset[int] = frozenset()
    do_servers: frozenset[int] | None = None
    ignore_servers: frozenset[int] = frozenset()

    @property
    def active(self) -> bool:
        """True if any rule is set."""
        return bool(
            self.do_domains is not None or self.ignore_domains or self.do_servers is not None or self.ignore_servers
        )

    def allows_domain(self, domain: int) -> bool:
        """Whether groups of ``domain`` pass the domain rules."""
        return domain not in self.ignore_domains and (self.do_domains is None or domain in self.do_domains)

    def allows_server(self, server: int) -> bool:
        """Whether groups (or events) of ``server`` pass the server rules."""
        return server not in self.ignore_servers and (self.do_servers is None or server in self.do_servers)

    def allows(self, domain: int, server: int) -> bool:
        """Whether the group with this GTID domain and server id passes."""
        return self.allows_domain(domain) and self.allows_server(server)

    def narrowed(
        self, *, do_domains: Iterable[int] | None = None, do_servers: Iterable[int] | None = None
    ) -> IdFilter:
        """This filter AND "only these domains / servers"."""
        domains = self.do_domains
        if do_domains is not None:
            domains = frozenset(do_domains) if domains is None else domains & frozenset(do_domains)
        servers = self.do_servers
        if do_servers is not None:
            servers = frozenset(do_servers) if servers is None else servers & frozenset(do_servers)
        return IdFilter(domains, self.ignore_domains, servers, self.ignore_servers)


class GtidWindow:
    """One domain's GTIDs in (start, stop]: MariaDB's ``Window_gtid_event_filter`` (rpl_gtid.cc).

    Stateful: it expects the domain's GTIDs in binlog order.  Before the start GTID nothing
    passes; from a group at or after the start on everything passes (an out-of-order group
    behind the start included) up to the stop; a group at or after the stop closes it.  Only
    sequence numbers are compared, as MariaDB does.
    """

    __slots__ = ("active", "passed", "start", "stop")

    def __init__(self, start: Gtid | None = None, stop: Gtid | None = None) -> None:
        self.start = start
        self.stop = stop
        self.active = False
        self.passed = False

    @property
    def finished(self) -> bool:
        """A window with a stop that has been passed: its domain passes nothing more."""
        return self.stop is not None and self.passed

    def exclude(self, seq: int) -> bool:
        """Whether the group with this seq_no is outside the window; moves the window along."""
        start, stop = self.start, self.stop
        if self.passed:
            return True
        if self.active:
            if stop is not None and seq >= stop.seq:
                self.active, self.passed = False, True
                return seq > stop.seq
            return False
        if start is None:
            if stop is None or seq > stop.seq:
                return True
            include = True
        elif seq >= start.seq and (stop is None or seq <= stop.seq):
            include = seq != start.seq  # the start GTID itself is already applied
        else:
            return True
        self.active = True
        if stop is not None and seq == stop.seq:
            self.passed = True
        return not include


class GtidPolicy:
    """Which event groups pass, given start and stop GTID positions and domain/server id rules:
    the one policy of ``mariadb-binlog``'s GTID options, the command-line replica and the Spark
    source (their option texts and reports stay theirs).

    Per domain the start is exclusive and the stop inclusive (a :class:`GtidWindow` each);
    once a stop position is given, domains it does not list pass nothing (as mariadb-binlog);
    ``ids`` (an :class:`IdFilter`) then filters by the GTID's domain and server id.  Domains
    keep the order they were added in (``order``: MariaDB's ``HASH`` order derives from it).

    Two ways to ask it:

    * in binlog order (:meth:`exclude`): the windows move along as MariaDB's do, so an
      out-of-order group behind the start still passes (non-strict mode);
    * statelessly (:meth:`passes`, :meth:`bounds`, :meth:`allows_domain`): the window as
      seq_no bounds, for readers that see only a part of the stream (Spark partitions); exact
      where seq_nos grow per domain (``gtid_strict_mode``).
    """

    __slots__ = ("ids", "stop_given", "windows")

    def __init__(
        self,
        starts: Iterable[Gtid] = (),
        stops: Iterable[Gtid] = (),
        ids: IdFilter | None = None,
        *,
        stop_given: bool | None = None,
        order: Iterable[int] = (),
    ) -> None:
        self.windows: dict[int, GtidWindow] = {domain: GtidWindow() for domain in order}
        for gtid in starts:
            self.windows.setdefault(gtid.domain, GtidWindow()).start = gtid
        stops = list(stops)
        for gtid in stops:
            self.windows.setdefault(gtid.domain, GtidWindow()).stop = gtid
        self.windows = {d: w for d, w in self.windows.items() if w.start is not None or w.stop is not None}
        self.ids = ids if ids is not None else IdFilter()
        #: True once a stop position was given (even one that lists no domain)
        self.stop_given = bool(stops) if stop_given is None else stop_given

    def __reduce__(self) -> tuple[object, ...]:
        return (_policy, (self.starts, self.stops, self.ids, self.stop_given, tuple(self.windows)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GtidPolicy) and self.__reduce__()[1] == other.__reduce__()[1]

    def __hash__(self) -> int:
        return hash(self.__reduce__()[1])

    @property
    def starts(self) -> GtidList:
        """The start GTIDs (exclusive), domain by domain."""
        return GtidList(w.start for w in self.windows.values() if w.start is not None)

    @property
    def stops(self) -> GtidList:
        """The stop GTIDs (inclusive), domain by domain."""
        return GtidList(w.stop for w in self.windows.values() if w.stop is not None)

    @property
    def by_gtid(self) -> bool:
        """True if positions or id rules are set (events outside groups then do not pass)."""
        return bool(self.windows) or self.stop_given or self.ids.active

    def with_ids(self, ids: IdFilter) -> GtidPolicy:
        """The same positions with other id rules."""
        return GtidPolicy(self.starts, self.stops, ids, stop_given=self.stop_given, order=self.windows)

    # -- stateless --------------------------------------------------------------------------

    def allows_domain(self, domain: int) -> bool:
        """Whether groups of ``domain`` can pass at all."""
        if not self.ids.allows_domain(domain):
            return False
        return not self.stop_given or self._stop_seq(domain) is not None

    def _stop_seq(self, domain: int) -> int | None:
        window = self.windows.get(domain)
        return None if window is None or window.stop is None else window.stop.seq

    def bounds(self, domain: int) -> tuple[int | None, int | None]:
        """(exclusive lower, inclusive upper) seq_no bound of ``domain`` (None: unbounded)."""
        window = self.windows.get(domain)
        if window is None:
            return None, None
        return (window.start.seq if window.start is not None else None, self._stop_seq(domain))

    def passes(self, gtid: Gtid) -> bool:
        """Statelessly: whether the group ``gtid`` is inside its domain's bounds and the id rules."""
        if not self.allows_domain(gtid.domain) or not self.ids.allows_server(gtid.server):
            return False
        low, high = self.bounds(gtid.domain)
        return (low is None or gtid.seq > low) and (high is None or gtid.seq <= high)

    def finite_domains(self) -> frozenset[int] | None:
        """The domains that can pass, when that set is finite (a stop list or a do-domain rule)."""
        if self.stop_given:
            listed = frozenset(d for d in self.windows if self._stop_seq(d) is not None)
            only = self.ids.do_domains
            return listed if only is None else only & listed
        return self.ids.do_domains

    # -- in binlog order ----------------------------------------------------------------------

    def exclude_position(self, gtid: Gtid) -> bool:
        """Whether the positions exclude the group ``gtid`` (the id rules not asked); moves the
        domain's window along (every GTID must be shown, in binlog order)."""
        window = self.windows.get(gtid.domain)
        if self.stop_given and (window is None or window.stop is None):
            return True
        return window is not None and window.exclude(gtid.seq)

    def exclude(self, gtid: Gtid) -> bool:
        """Whether the group ``gtid`` does not pass, in binlog order (see the class)."""
        excluded = self.exclude_position(gtid)
        return excluded or not self.ids.allows(gtid.domain, gtid.server)

    @property
    def all_stops_reached(self) -> bool:
        """True once every stop position has been passed (nothing more will pass)."""
        stops = [w for w in self.windows.values() if w.stop is not None]
        return bool(stops) and all(w.finished for w in stops)

    def unreached(self) -> list[Gtid]:
        """The stop GTIDs not reached yet, in the order the domains were added."""
        return [w.stop for w in self.windows.values() if w.stop is not None and not w.passed]


def _policy(
    starts: GtidList, stops: GtidList, ids: IdFilter, stop_given: bool, order: tuple[int, ...]
) -> GtidPolicy:
    return GtidPolicy(starts, stops, ids, stop_given=stop_given, order=order)
