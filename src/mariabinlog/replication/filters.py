"""Which event groups a command-line replica applies: start/stop positions, domain and server
filters, GTID strict mode (seed 004: ``--start-position``, ``--stop-position``,
``--gtid-strict-mode``, ``--do/ignore-domain-ids``, ``--do/ignore-server-ids``).

Semantics, per GTID domain:

* start (exclusive): the last GTID already applied.  As a primary positions a replica,
  groups of the domain are skipped until that GTID's sequence number (or a later one) is
  seen; everything after it follows in binlog order, so an out-of-order group behind
  the start GTID is applied, not lost (non-strict mode);
* stop (inclusive): groups with ``seq > stop.seq`` are skipped; once a domain reaches its
  stop GTID (or passes it) it is done, and when every listed domain is done the run ends.
  With a stop list, domains that are not in it are skipped, as mariadb-binlog does;
* strict mode: a group whose ``seq`` is not above the last one seen in its domain is an
  error (:class:`~mariabinlog.errors.GtidStrictModeError`), the replica stops before it;
* domain and server filters (server = the GTID's server id) skip groups.  Skipped groups
  are not recorded as applied (as with MariaDB's ``DO_DOMAIN_IDS``), so a later run with
  other filters or another stop position still applies them.

Which groups pass the positions and the id rules is the codec's one policy
(:class:`~mariabinlog.codec.gtid.GtidPolicy`, MariaDB's ``Window_gtid_event_filter`` per domain,
shared with mariadb-binlog's options and the Spark source); the strict-mode check and the end
of the run are the replica's.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from ..codec.gtid import ConnectState, Gtid, GtidPolicy, IdFilter, parse_ids
from ..errors import GtidStrictModeError, OptionError


class Decision(Enum):
    """What to do with a group."""

    APPLY = "apply"
    SKIP = "skip"  # filtered out, at or before the start, or beyond the stop position
    STOP = "stop"  # the stop position was reached before this group: end the run


class GroupFilter:
    """Decides, group by group, what a replica does (see the module docstring): the codec's
    one policy (:class:`~mariabinlog.codec.gtid.GtidPolicy`) in binlog order, plus the
    replica's own strict-mode check and end of the run."""

    def __init__(
        self,
        *,
        start: ConnectState | None = None,
        stop: ConnectState | None = None,
        do_domains: Iterable[int] | None = None,
        ignore_domains: Iterable[int] | None = None,
        do_servers: Iterable[int] | None = None,
        ignore_servers: Iterable[int] | None = None,
        strict: bool = False,
        positioned: bool = False,
    ) -> None:
        if do_domains is not None and ignore_domains is not None:
            raise OptionError("--do-domain-ids and --ignore-domain-ids cannot be used together")
        if do_servers is not None and ignore_servers is not None:
            raise OptionError("--do-server-ids and --ignore-server-ids cannot be used together")
        self.start = start.copy() if start is not None else ConnectState()
        self.stop = stop
        self.ids = IdFilter(
            frozenset(do_domains) if do_domains is not None else None,
            frozenset(ignore_domains or ()),
            frozenset(do_servers) if do_servers is not None else None,
            frozenset(ignore_servers or ()),
        )
        self.strict = strict
        # ``positioned``: the source starts after ``start`` itself (a primary, or an archive,
        # seeks to it by GTID as a primary does), so no window skips groups at or below it:
        # a lower sequence number logged after the start is the next group, not an old one.
        self.policy = GtidPolicy(
            () if positioned else self.start.values(),
            stop.values() if stop is not None else (),
            self.ids,
            stop_given=stop is not None,
        )
        # A positioned source's first group of a domain comes right after its start GTID, so
        # strict mode measures it against that GTID, as a replica's own binlog state does.
        self._seen: dict[int, int] = {d: g.seq for d, g in self.start.items()} if positioned else {}
        #: Domains whose start is already at or past their stop: nothing to apply there.
        self._behind: set[int] = set()
        if stop is not None:
            for domain, gtid in stop.items():
                begun = self.start.get(domain)
                if begun is not None and begun.seq >= gtid.seq:
                    self._behind.add(domain)

    def _reached(self, domain: int) -> bool:
        window = self.policy.windows.get(domain)
        return domain in self._behind or (window is not None and window.finished)

    @property
    def done(self) -> bool:
        """True once every stop position has been reached."""
        return self.stop is not None and all(self._reached(domain) for domain in self.stop)

    def decide(self, gtid: Gtid) -> Decision:
        """The decision for the group ``gtid``; raises GtidStrictModeError in strict mode."""
        if self.done:
            return Decision.STOP
        domain, _, seq = gtid
        excluded = self.policy.exclude_position(gtid)
        window = self.policy.windows.get(domain)
        if window is None or window.start is None or window.active or window.passed:
            # Past the start GTID: strict mode wants sequence numbers to grow from here on.
            previous = self._seen.get(domain)
            if previous is not None and seq <= previous and self.strict:
                raise GtidStrictModeError(
                    f"GTID {gtid} is out of order: an earlier group of domain {domain} had sequence number"
                    f" {previous} (GTID strict mode)"
                )
            if previous is None or seq > previous:
                self._seen[domain] = seq
        if excluded or not self.ids.allows(domain, gtid.server):
            return Decision.SKIP
        return Decision.APPLY

    def unreached(self) -> list[Gtid]:
        """Stop GTIDs not reached (for the end-of-run warning)."""
        if self.stop is None:
            return []
        return [gtid for domain, gtid in self.stop.items() if not self._reached(domain)]


def option_ids(option: str, text: str | None) -> frozenset[int] | None:
    """``--option=1,2,3`` as a set of u32 ids (None when the option is absent)."""
    return None if text is None else parse_ids(f"--{option}", text)
