"""Rebalance snapshots: each saved quarterly rebalance of an agent's bank, so the next one
can show what changed since (``exam/reports/rebalance.py``).
"""

from __future__ import annotations

import json
import time
from typing import Any

from sqlalchemy import insert, select

from exam.db.schema import rebalance_snapshots
from exam.store.base import StoreBase


class Snapshots(StoreBase):
    """Rebalances kept and read, oldest first."""

    def add_rebalance_snapshot(self, agent: str, since: str | None,
                               snapshot: dict[str, Any]) -> int:
        """Keep one agent's rebalance; returns its id."""
        with self.tx() as db:
            return int(db.execute(insert(rebalance_snapshots).values(
                agent=agent, created_at=time.time(), since=since,
                snapshot=json.dumps(snapshot, ensure_ascii=False),
            ).returning(rebalance_snapshots.c.id)).scalar_one())

    def rebalance_snapshots(self, agent: str) -> list[dict[str, Any]]:
        """An agent's saved rebalances, oldest first."""
        s = rebalance_snapshots.c
        rows = self._rows(select(rebalance_snapshots).where(s.agent == agent).order_by(s.id))
        return [{**dict(r._mapping), "snapshot": json.loads(r.snapshot)} for r in rows]
