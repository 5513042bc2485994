"""Kept change verdicts: each agent's versions as the baseline walk decided them, one row per
agent under the key of everything the walk read (``exam/reports/changes.py`` makes the key
and the text; the store only keeps them).

A row is read only under exactly the key asked for, so a row made from other runs, cells,
banks, rules, decisions, ship records or code is never shown: it is replaced by the next walk.
"""

from __future__ import annotations

from sqlalchemy import select

from exam.db.schema import kept_changes
from exam.store.base import StoreBase


class Changes(StoreBase):
    """The kept walk of an agent read under its key, and kept (or replaced)."""

    def kept_changes(self, agent: str, key: str) -> str | None:
        """The text kept for ``agent`` under exactly ``key``, or None."""
        k = kept_changes.c
        return self._value(select(k.changes).where(k.agent == agent, k.key == key))

    def keep_changes(self, agent: str, key: str, changes: str) -> bool:
        """Keep (or replace) ``agent``'s walk; False when the store cannot be written
        (read-only, busy): the verdicts shown are still right, only not kept."""
        stmt = self._insert(kept_changes).values(agent=agent, key=key, changes=changes)
        return self._keep(stmt.on_conflict_do_update(index_elements=[kept_changes.c.agent],
                                                     set_={"key": key, "changes": changes}))
