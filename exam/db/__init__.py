"""The store's database layer: one schema on SQLite or PostgreSQL (SQLAlchemy Core), migrated
by Alembic (``exam/db/migrations``; SQLite's schemas 1..7 in ``legacy.py``).

``exam.store`` is the only caller (``exam store copy`` is ``exam/store/copy.py``); nothing else
in the app speaks SQL.
"""
