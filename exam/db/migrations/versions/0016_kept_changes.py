"""Schema 16: the change verdicts of each agent's versions, kept (issue 35).

The overview and the runs page show, per version, the verdict of its change against the last
version shipped before it: a walk over every version that compared each pair afresh on every
view (21 compares for 3 agents × 8 versions, ~80% of a warm view's CPU at 100,000 replies).
One row per agent keeps the walk's outcome under the key of everything it is made of
(exam/reports/changes.py); a row whose key no longer holds is never read, only replaced.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "16"
down_revision = "15"


def upgrade() -> None:
    op.create_table(
        "kept_changes",
        sa.Column("agent", sa.Text(), primary_key=True),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("changes", sa.Text(), nullable=False),
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version=16")  # an older agent-exam refuses a store it can't read
