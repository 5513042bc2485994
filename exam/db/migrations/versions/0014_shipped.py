"""Schema 14: versions shipped by hand (``exam ship AGENT VERSION``), with who, when and why;
and the runs `exam compare --settle` made, under the comparison that asked for them.

Each agent's shipped version is the baseline a new version is compared against
(exam/reports/baseline.py). By default it follows from the verdicts (the latest version
whose verdict against its own baseline was ship); a team that decides by hand records its
decision here, one row per decision, never updated: the newest row of an agent is the last
decision, and the rows are its history.

``settle_rounds``: a settle round is a run of the version it re-asks (it counts in that
version's verdict like any other run), made for one comparison; run lists show the rounds
grouped under it, not as runs of a few questions that read "0%".
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "14"
down_revision = "13"


def upgrade() -> None:
    op.create_table(
        "shipped",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("agent", sa.Text(), nullable=False),
        sa.Column("version", sa.Text(), nullable=False),
        sa.Column("shipped_at", sa.Double(), nullable=False),
        sa.Column("shipped_by", sa.Text(), nullable=False, server_default=""),
        sa.Column("reason", sa.Text(), nullable=False, server_default=""),
        sa.Column("source", sa.Text(), nullable=False, server_default="cli"),
    )
    op.create_index("shipped_agent", "shipped", ["agent", "id"])
    op.create_table(
        "settle_rounds",
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id"), primary_key=True,
                  autoincrement=False),
        sa.Column("old", sa.Text(), nullable=False),
        sa.Column("new", sa.Text(), nullable=False),
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version=14")  # an older agent-exam refuses a store it can't read
