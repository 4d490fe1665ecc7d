"""The applier's two ways to turn a group into statements agree: the fast one, made from the
events' bytes (:meth:`TargetSession.statements`, sent many groups to a packet by
:meth:`TargetSession.apply_many`), and the decoding one (:meth:`TargetSession.plan`), on every
group of the corpus binlogs.  No server is needed: only the statements are compared."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_data import corpus_glob

from mariabinlog.replication.apply import PositionTable, TargetSession
from mariabinlog.replication.net import ConnectionOptions
from mariabinlog.replication.sources import FileSource

BINLOGS = corpus_glob("binlogs/*/*.0*")


def _slow(session: TargetSession, group: object) -> list[bytes]:
    """:meth:`TargetSession.plan`'s statements, if they are one batch (what a plain group gives)."""
    plan = session.plan(group)  # type: ignore[arg-type]
    assert [step[0] for step in plan.steps] == ["batch"]
    return list(plan.steps[0][1])


@pytest.mark.parametrize("path", BINLOGS, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("preserve", [True, False])
def test_fast_statements_are_the_plans(path: Path, preserve: bool) -> None:
    fast = TargetSession(ConnectionOptions(), PositionTable(), preserve_gtids=preserve)
    slow = TargetSession(ConnectionOptions(), PositionTable(), preserve_gtids=preserve)
    plain = 0
    for group in FileSource([str(path)]).groups():
        statements = fast.statements(group)
        if statements is None:
            continue
        plain += 1
        assert statements == _slow(slow, group), group
    if path.parent.name in ("w01_basic_row", "w02_types_full", "w07_gtid_domains"):
        assert plain > 0
