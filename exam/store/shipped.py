"""Versions shipped by hand: a person's decision to ship, kept beside the verdicts.

``exam ship``, the API, the dashboard and n8n record that a version shipped, by whom and why;
a new row every time, so the newest row of an agent is its last decision.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select

from exam.db.schema import shipped
from exam.store.base import StoreBase


@dataclass(frozen=True, slots=True)
class ShipRecord:
    """A version shipped by hand (``exam ship``, the API, the dashboard, n8n): who, when, why."""

    id: int
    agent: str
    version: str
    shipped_at: float
    shipped_by: str
    reason: str
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "agent": self.agent, "version": self.version,
                "shipped_at": self.shipped_at, "shipped_by": self.shipped_by,
                "reason": self.reason, "source": self.source}


class Shipped(StoreBase):
    """Ship decisions recorded and read."""

    def add_ship_record(self, agent: str, version: str, shipped_by: str = "", reason: str = "",
                        source: str = "cli") -> ShipRecord:
        """Record that ``version`` of ``agent`` shipped (a person's decision); a new row every
        time, never an update: the newest row of an agent is its last decision."""
        with self.tx() as db:
            row = db.execute(insert(shipped).values(
                agent=agent, version=version, shipped_at=time.time(), shipped_by=shipped_by,
                reason=reason, source=source).returning(*shipped.c)).one()
        return ShipRecord(**row._mapping)

    def ship_records(self, agent: str | None = None) -> list[ShipRecord]:
        """Ship decisions made by hand (of ``agent``), oldest first."""
        stmt = select(shipped).order_by(shipped.c.id)
        if agent is not None:
            stmt = stmt.where(shipped.c.agent == agent)
        return [ShipRecord(**r._mapping) for r in self._rows(stmt)]
