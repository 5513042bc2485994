"""Schema 17: report answers kept in the store (issue 35).

A report of finished runs is a pure function of what it reads; each process kept its
answers in memory (exam/reports/answer_cache.py), so the first view in every process, and
the first after every run, built it again: 2–4 s for a compare, a scorecard or
discrimination at 100,000 replies. One row per report and arguments keeps the latest answer
under the key of everything it is made of; the worker makes the answers a finished run's
pages ask for (exam/reports/kept.py), and every process and instance reads them. A row whose
key no longer holds is never read, only replaced.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "17"
down_revision = "16"


def upgrade() -> None:
    op.create_table(
        "kept_answers",
        sa.Column("slot", sa.Text(), primary_key=True),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version=17")  # an older agent-exam refuses a store it can't read
