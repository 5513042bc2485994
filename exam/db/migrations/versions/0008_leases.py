"""Schema 8: runs are held by a lease (issue 19).

A worker that claims a run holds it until ``lease_until`` and renews it while it works;
``lease_token`` goes up by one at every claim, and a cell is stored only by the holder of the
current token (fencing: a worker that lost its lease cannot write). Runs running at upgrade
time keep 30 s from their last heartbeat, the grace the old heartbeat rule gave them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "8"
down_revision = "7"


def upgrade() -> None:
    op.add_column("runs", sa.Column("lease_until", sa.Double()))
    op.add_column("runs", sa.Column("lease_token", sa.Integer(), nullable=False,
                                    server_default=sa.text("0")))
    op.execute("UPDATE runs SET lease_until = heartbeat_at + 30"
               " WHERE status = 'running' AND source != 'cli'")
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version=8")  # an older agent-exam refuses a store it can't read
