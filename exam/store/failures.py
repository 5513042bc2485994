"""What a database error means for the store: damaged (restore it), away for a moment (try
again), or refused (say what was asked); and the one message each gives, never a traceback.

``named_damage`` wraps every public method of ``Store`` (``exam/store/__init__.py``).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from typing import Any

from sqlalchemy.exc import DBAPIError, OperationalError

from exam.errors import StoreDamaged, StoreError, StoreUnavailable


def damaged(exc: BaseException) -> bool:
    """SQLite says the file is corrupt or not a database (overwritten pages, a truncated copy)."""
    exc = getattr(exc, "orig", None) or exc  # SQLAlchemy wraps the driver's error
    if not isinstance(exc, sqlite3.Error):
        return False
    name = getattr(exc, "sqlite_errorname", "")
    return name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or any(
        s in str(exc) for s in ("malformed", "not a database"))


# what libpq and PostgreSQL say, refusing a connection, while it cannot take one yet: the
# server not listening or not reachable yet, starting up, out of connection slots
_NOT_YET = ("connection refused", "could not connect", "timeout expired", "timed out",
            "no route to host", "network is unreachable", "connection reset",
            "server closed the connection", "too many clients", "too many connections",
            "remaining connection slots", "starting up", "shutting down", "in recovery",
            "not yet accepting connections")


def away_at_open(exc: BaseException) -> bool:
    """A store that cannot be opened now but may be soon (refused, starting up, out of
    connection slots: a worker started before PostgreSQL waits for it); not one the server
    refuses for good (no such database or role, a failed login). libpq gives a refused
    connection no SQLSTATE, only a text saying "connection failed", which ``unavailable``
    would take as away whatever followed: so without one, only the texts of ``_NOT_YET``
    count, and anything else, a server answering in another language included, is for good
    (the worker exits, and systemd starts it again, as before)."""
    orig = getattr(exc, "orig", None) or exc
    if type(orig).__module__.startswith("psycopg") and getattr(orig, "sqlstate", None) is None:
        return any(s in str(orig).lower() for s in _NOT_YET)
    return unavailable(exc)


def unavailable(exc: BaseException) -> bool:
    """The database away or busy for a moment (worth trying again), not refusing what was asked
    of it: a dropped or refused connection, PostgreSQL shutting down or starting up, too many
    connections, a lock held elsewhere past the lock wait, SQLite busy or locked. A full disk,
    a read-only file, a missing table or a damaged file are not: a worker retrying them would
    send the same cells to the agent again and again."""
    if getattr(exc, "connection_invalidated", False):
        return True
    orig = getattr(exc, "orig", None) or exc
    if not isinstance(exc, OperationalError) and not isinstance(orig, sqlite3.OperationalError):
        return False
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate:  # PostgreSQL: connection exception, operator intervention, too many
        # connections, a lock another session held past the lock wait (engine.LOCK_TIMEOUT_S)
        return sqlstate.startswith(("08", "57P")) or sqlstate in ("53300", "55P03")
    text = str(orig).lower()
    return any(s in text for s in ("database is locked", "database is busy", "connection",
                                   "could not connect", "starting up", "shutting down"))


def damage_message(path: str, exc: BaseException) -> str:
    exc = getattr(exc, "orig", None) or exc
    return (f"{path}: the store is damaged ({exc}): restore it from a backup, or save what can "
            f"be read with: sqlite3 {path} .recover | sqlite3 recovered.db")


def named_damage(method: Callable[..., Any]) -> Callable[..., Any]:
    """A database error raises StoreError naming the store: a damaged SQLite file says so and
    how to recover it; anything else (PostgreSQL unreachable, a full disk) says what it was."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (DBAPIError, sqlite3.DatabaseError) as exc:
            if damaged(exc):
                raise StoreDamaged(self.said(damage_message(self.path, exc))) from None
            # the database away or busy for a moment, not what was asked of it
            raise (StoreUnavailable if unavailable(exc) else StoreError)(
                self.said(f"{self.path}: {reason(exc)}")) from exc

    return wrapper


def reason(exc: BaseException) -> str:
    """The driver's first line, without SQLAlchemy's statement dump."""
    orig = getattr(exc, "orig", None) or exc
    return (str(orig).strip().splitlines() or [type(orig).__name__])[0]

