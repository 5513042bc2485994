"""Which database errors a worker waits out (the store away or busy for a moment) and which it
does not (the store refusing what was asked): retrying the latter would send the same cells to
the agent again and again."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError

from exam.store import unavailable


class PgError(Exception):
    def __init__(self, text: str, sqlstate: str | None):
        super().__init__(text)
        self.sqlstate = sqlstate


def op(orig: BaseException) -> OperationalError:
    return OperationalError("SELECT 1", {}, orig)


@pytest.mark.parametrize("orig", [
    sqlite3.OperationalError("database is locked"),
    PgError("connection failed: Connection refused", None),  # no server to give a state
    PgError("terminating connection due to administrator command", "57P01"),
    PgError("the database system is starting up", "57P03"),
    PgError("server closed the connection unexpectedly", "08006"),
    PgError("sorry, too many clients already", "53300"),
    PgError("canceling statement due to lock timeout", "55P03"),
])
def test_a_store_away_for_a_moment_is_waited_out(orig):
    assert unavailable(op(orig))


@pytest.mark.parametrize("error", [
    op(sqlite3.OperationalError("database or disk is full")),
    op(sqlite3.OperationalError("attempt to write a readonly database")),
    op(sqlite3.OperationalError("no such table: cells")),
    op(PgError("could not extend file: No space left on device", "53100")),
    op(PgError("permission denied for table cells", "42501")),
    IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE constraint failed")),
])
def test_a_store_refusing_what_was_asked_is_not(error):
    assert not unavailable(error)
