"""Schema 13: share links revoked, one at a time or every link to a page made before a time.

A share link was revoked only by changing EXAM_SECRET_KEY on every instance, which revoked
every link and logged everyone out. A row here revokes one link (``link``: its id, a digest
of what its token signs, never the token) or, with ``link`` NULL, every link to ``page`` made
before ``made_before``. Every request read through a share link looks its links up here, on
whichever instance it reaches: by ``link`` (unique) and by ``page``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "13"
down_revision = "12"


def upgrade() -> None:
    op.create_table(
        "share_revocations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("link", sa.Text()),
        sa.Column("page", sa.Text(), nullable=False),
        sa.Column("until", sa.Double()),
        sa.Column("made_before", sa.Double()),
        sa.Column("revoked_at", sa.Double(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False, server_default=""),
    )
    op.create_index("share_revocations_link", "share_revocations", ["link"], unique=True)
    op.create_index("share_revocations_page", "share_revocations", ["page", "link"])
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version=13")  # an older agent-exam refuses a store it can't read
