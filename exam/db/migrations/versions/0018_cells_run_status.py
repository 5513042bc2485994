"""Schema 18: each run's cells counted by status from an index (issue 35).

The runs page says, for each of up to 200 runs, how many of its cells arrived and in which
state; at 100,000 stored replies that count read every cell row (~130 ms of each view on
SQLite). An index on (run_id, run_status) answers it from the index alone (~30 ms).
"""

from __future__ import annotations

from alembic import op

revision = "18"
down_revision = "17"


def upgrade() -> None:
    op.create_index("cells_run_status", "cells", ["run_id", "run_status"])
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version=18")  # an older agent-exam refuses a store it can't read
