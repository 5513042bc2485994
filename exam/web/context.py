"""The request's store and registry (the Flask tutorial's ``db.py``).

Blueprints import these accessors from here, never from ``exam.app``, so the app module can
import the blueprints without a cycle.
"""

from __future__ import annotations

from flask import Flask, current_app, g


def store():
    """The request's store (one connection per request: a SQLite file, or one from the
    process's PostgreSQL pool), closed when the request ends."""
    from exam.store import Store

    if "store" not in g:
        g.store = Store(current_app.config["DB"])
    return g.store


def registry():
    """The agent registry named by the AGENTS setting, read afresh for the request."""
    from exam.pipeline.registry import load_registry

    return load_registry(current_app.config["AGENTS"])


def close_store(_exc: BaseException | None = None) -> None:
    s = g.pop("store", None)
    if s is not None:
        s.close()


def init_app(app: Flask) -> None:
    """Close the request's store when its app context ends."""
    app.teardown_appcontext(close_store)
