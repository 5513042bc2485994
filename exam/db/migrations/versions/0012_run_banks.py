"""Schema 12: the rubric of every question in a run's bank, kept as it was when the run was made.

A report re-grades every run with today's bank (one rubric across versions); what it could not
say was what the bank held at run time: whether a question the old version never asked was in
its bank (skipped with --only) or added since, and how a rubric changed since the baseline
run (a budget loosened in the same change as the agent). Runs made before this schema have no
row: the reports say that is not recorded.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "12"
down_revision = "11"


def upgrade() -> None:
    op.create_table(
        "run_banks",
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id"), primary_key=True,
                  autoincrement=False),
        sa.Column("questions", sa.Text(), nullable=False),
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version=12")  # an older agent-exam refuses a store it can't read
