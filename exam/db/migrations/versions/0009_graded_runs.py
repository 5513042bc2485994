"""Schema 9: graded runs (issue 19): each finished run's graded cells kept as one row.

Reports read a finished run's graded cells back from one row while the key they were made
under still holds (exam/reports/graded_runs.py); the grade cache stays underneath.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "9"
down_revision = "8"


def upgrade() -> None:
    op.create_table(
        "graded_runs",
        sa.Column("run_id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("rules", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("cells", sa.Text(), nullable=False),
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version=9")  # an older agent-exam refuses a store it can't read
