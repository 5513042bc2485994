"""Kept change verdicts: each agent's versions as the baseline walk decided them, one row per
agent under the key of everything the walk read (``exam/reports/changes.py`` makes the key
and the text; the store only keeps them).

A row is read only under exactly the key asked for, so a row made from other runs, cells,
banks, rules, decisions, ship records or code is never shown: it is replaced by the next walk.
"""

from __future__ import annotations

from exam.db.schema import kept_changes
from exam.store.base import StoreBase


class Changes(StoreBase):
    """The kept walk of an agent read under its key, and kept (or replaced)."""

    def kept_changes(self, agent: str, key: str) -> str | None:
        """The text kept for ``agent`` under exactly ``key``, or None."""
        return self._kept_text(kept_changes, agent, key)

    def keep_changes(self, agent: str, key: str, changes: str) -> bool:
        """Keep (or replace) ``agent``'s walk; False when the store cannot be written
        (read-only, busy): the verdicts shown are still right, only not kept."""
        return self._keep_text(kept_changes, agent, key, changes)
