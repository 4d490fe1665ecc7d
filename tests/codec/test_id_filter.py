"""The one definition of group filters by domain/server id and of id lists (codec/gtid.py)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mariabinlog.codec.gtid import U32_MAX, IdFilter, parse_ids
from mariabinlog.errors import OptionError


def test_parse_ids_default_syntax() -> None:
    assert parse_ids("--x", " 1, 2,,3 ") == frozenset({1, 2, 3})
    assert parse_ids("--x", "") == frozenset()
    assert parse_ids("--x", str(U32_MAX)) == frozenset({U32_MAX})
    for bad in ("-1", "1.5", "a", str(U32_MAX + 1), "+1", "²"):
        with pytest.raises(OptionError, match=r"^--x: .* is not an id between 0 and 4294967295"):
            parse_ids("--x", bad)


def test_parse_ids_mariadb_binlog_syntax() -> None:
    """Blanks and '+' before digits, 64-bit values keep their low 32 bits, no empty parts."""
    assert parse_ids("--x", " +5,\t7", tool_syntax=True) == frozenset({5, 7})
    assert parse_ids("--x", str((1 << 64) - 1), tool_syntax=True) == frozenset({U32_MAX})
    assert parse_ids("--x", str(1 << 32), tool_syntax=True) == frozenset({0})
    for bad in ("", "1,", "1 ", str(1 << 64), "a"):
        with pytest.raises(OptionError):
            parse_ids("--x", bad, tool_syntax=True)


@given(st.frozensets(st.integers(0, U32_MAX), min_size=1))
def test_parse_ids_reads_what_is_written(ids: frozenset[int]) -> None:
    text = ",".join(map(str, sorted(ids)))
    assert parse_ids("--x", text) == ids == parse_ids("--x", text, tool_syntax=True)


def test_id_filter_rules() -> None:
    everything = IdFilter()
    assert not everything.active and everything.allows(7, 9)
    only = IdFilter(do_domains=frozenset({1}), ignore_servers=frozenset({3}))
    assert only.active
    assert only.allows(1, 2) and not only.allows(2, 2) and not only.allows(1, 3)
    assert only.allows_domain(1) and not only.allows_server(3)
    narrowed = only.narrowed(do_domains=[1, 2], do_servers=[2])
    assert narrowed == IdFilter(frozenset({1}), frozenset(), frozenset({2}), frozenset({3}))
    assert IdFilter().narrowed(do_domains=[4]).do_domains == frozenset({4})
    assert pickle.loads(pickle.dumps(narrowed)) == narrowed  # travels to Spark executors
