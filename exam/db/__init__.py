"""The store's database layer: one schema on SQLite or PostgreSQL (SQLAlchemy Core), migrated
by Alembic (``exam/db/migrations``), and ``exam store copy`` between the two.

``exam.store.Store`` is the only caller; nothing else in the app speaks SQL.
"""
