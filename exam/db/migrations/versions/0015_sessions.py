"""Schema 15: dashboard sessions the store knows, so logging out ends one on every instance.

A dashboard login was only Flask's signed cookie: a copy kept after ``POST /logout`` still
read pages (and, an admin's, excluded runs) until the cookie's 31 days ran out. A row here is
one login: ``id`` a digest of the session's random id (the cookie holds the id, never the
store), its role, and its end by the store's clock. Each request looks its session up here,
on whichever instance it reaches; logging out deletes the row.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "15"
down_revision = "14"


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("until", sa.Double(), nullable=False),
    )
    op.create_index("sessions_until", "sessions", ["until"])
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version=15")  # an older agent-exam refuses a store it can't read
