"""Alembic's entry point: migrations run on the connection ``exam.db.engine.migrate`` passes in,
inside its transaction (never on a URL of their own)."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise SystemExit("exam's migrations run when a store is opened (exam.store.Store), "
                     "not from the alembic command line")
context.configure(connection=connection, target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
