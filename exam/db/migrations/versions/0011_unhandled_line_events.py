"""Schema 11: an index of the LINE events not yet handled (issue 19).

Every service process looks for events left unhandled every few seconds
(exam/web/line.py); without an index each look read the whole table, which keeps every
event ever received (200,000 events: 23 ms a look on either backend). A partial index holds
only the events not yet handled, which are few, so a look reads only those.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "11"
down_revision = "10"


def upgrade() -> None:
    unhandled = sa.text("handled_at IS NULL")
    op.create_index("line_events_unhandled", "line_events", ["received_at"],
                    sqlite_where=unhandled, postgresql_where=unhandled)
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA user_version=11")  # an older agent-exam refuses a store it can't read
