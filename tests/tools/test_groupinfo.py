"""find's filter and statement reading without an archive (the archive cases run against a
real primary in tests/replication/test_pitr.py)."""

from __future__ import annotations

import pytest

from mariabinlog.codec.gtid import Gtid
from mariabinlog.errors import OptionError
from mariabinlog.tools.groupinfo import GroupQuery, GroupSummary, statement_tables


def test_statement_tables_reads_qualified_and_default_names() -> None:
    assert statement_tables("UPDATE shop.items SET qty = 1 WHERE id = 5", "x") == ["shop.items"]
    assert statement_tables("DELETE o FROM orders o JOIN shop.c ON c.id = o.cid", "shop") == ["shop.orders", "shop.c"]
    assert statement_tables("this is not SQL (", "x") == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"statement": "("}, "not a regular expression"), ({"tables": ["orders"]}, "DB.TABLE"), ({"ops": ["drop"]}, "one of")],
)
def test_query_refuses_bad_options(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        GroupQuery.build(**kwargs)  # type: ignore[arg-type]


def test_query_needs_every_criterion() -> None:
    summary = GroupSummary(Gtid(0, 1, 7), 1000, rows={"delete": 3}, tables=["shop.orders"],
                           statements=["DELETE FROM shop.orders WHERE amount > 50"])
    assert GroupQuery.build(statement=r"delete\s+from", tables=["shop.orders"], ops=["delete"]).matches(summary)
    assert not GroupQuery.build(statement="delete", ops=["insert"]).matches(summary)
    assert not GroupQuery.build(tables=["shop.items"]).matches(summary)
    assert GroupQuery.build(since=1000, until=1001).matches(summary)
    assert not GroupQuery.build(until=1000).matches(summary)
    assert summary.line().split("\t")[0::2] == ["0-1-7", "delete 3", "DELETE FROM shop.orders WHERE amount > 50"]
