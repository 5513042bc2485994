"""The store: runs, cells (question × repeat), attempts with raw bodies, grades, and what people
decided about them.

One schema on two backends (``exam.db``): a SQLite file (the embedded default, WAL mode so
readers never block the runner) or a PostgreSQL database (``postgresql://`` URL, for a team's
service instances and workers on several hosts). The schema is migrated forward on open
(Alembic; SQLite stores of schema 1..7 go through ``exam.db.legacy`` first).

One module per concept, each owning its tables' SQL and its methods:

- ``base``: the connection and transactions every concept runs on (``StoreBase``);
- ``runs``: runs made, read, counted; ``leases``: which process may write a run;
- ``commit``: the group commit of finished cells; ``cells``: cells, attempts, bodies read;
- ``grades``: the grade cache and kept graded runs; ``changes``: kept change verdicts;
  ``answers``: kept report answers;
- ``review``: people's decisions; ``shipped``: versions shipped by hand;
- ``notifications``: pushes and LINE events; ``access``: sessions and share revocations;
- ``snapshots``: rebalance snapshots; ``failures``: what a database error means.

``Store`` composes them: one object per opened store, so the lease a process holds on a run
fences the cells it writes. Every public method turns database errors into one StoreError
naming the store (``failures.named_damage``, applied below the class).
"""

from __future__ import annotations

import inspect

from exam.records import AttemptRow, CellRow
from exam.store.access import REVOCATION_AFTER_EXPIRY_S, Access, Revocation
from exam.store.answers import Answers
from exam.store.base import DEFAULT_DB, StoreBase
from exam.store.cells import Cells
from exam.store.changes import Changes
from exam.store.commit import CELL_BATCH, CellCommit
from exam.store.failures import away_at_open, damage_message, damaged, named_damage, unavailable
from exam.store.grades import GRADE_CACHE_CHUNK, HEAD_PROBE, Grades
from exam.store.leases import LEASE_S, Leases, held_elsewhere
from exam.store.notifications import Notifications
from exam.store.review import Review
from exam.store.runs import MAX_ID, Run, Runs, host_id, owner_alive, owner_gone, owner_id
from exam.store.shipped import Shipped, ShipRecord
from exam.store.snapshots import Snapshots

__all__ = [
    "CELL_BATCH", "DEFAULT_DB", "GRADE_CACHE_CHUNK", "HEAD_PROBE", "LEASE_S", "MAX_ID",
    "REVOCATION_AFTER_EXPIRY_S", "AttemptRow", "CellRow", "Revocation", "Run", "ShipRecord",
    "Store", "away_at_open", "damage_message", "damaged", "held_elsewhere", "host_id",
    "owner_alive", "owner_gone", "owner_id", "unavailable",
]


class Store(CellCommit, Leases, Runs, Cells, Grades, Changes, Answers, Review, Shipped,
            Notifications, Access, Snapshots, StoreBase):
    """One opened store: every concept's methods on one connection (``StoreBase``)."""


def _name_damage(store: type) -> None:
    """Wrap each public method of ``store``'s concepts in ``named_damage`` (not ``tx``, which
    yields a connection: its caller's errors are the caller's)."""
    names = {n for cls in store.__mro__ if cls is not object for n in vars(cls)}
    for name in sorted(names):
        method = inspect.getattr_static(store, name)
        if callable(method) and not name.startswith("_") and name != "tx":
            setattr(store, name, named_damage(method))


_name_damage(Store)
