"""Schema 10: a LINE webhook event is kept until it has been handled (issue 19).

An instance records each event (without its reply token) before answering LINE's 200, and
marks it handled afterwards; an event whose handler died is claimed by another instance once
its claim runs out (exam/web/line.py). Events recorded by older versions were handled then.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "10"
down_revision = "9"


def upgrade() -> None:
    with op.batch_alter_table("line_events") as batch:
        batch.add_column(sa.Column("event", sa.Text(), nullable=True))
        batch.add_column(sa.Column("claimed_until", sa.Double(), nullable=True))
        batch.add_column(sa.Column("handled_at", sa.Double(), nullable=True))
    op.execute("UPDATE line_events SET handled_at = received_at")
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version=10")  # an older agent-exam refuses a store it can't read
