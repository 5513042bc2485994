"""The request's store and registry (the Flask tutorial's ``db.py``).

Blueprints import these accessors from here, never from ``exam.web.app``, so the app module can
import the blueprints without a cycle.

A service process opens its store once (``StoreHandle``: the folder made, the schema checked
and migrated, an engine whose pool keeps connections open) and each request takes one
connection from that pool for its whole life, given back when the request ends. Opening a
``Store`` per request cost a connection, SQLite's pragmas and a schema read every time.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from dataclasses import dataclass, field

from flask import Flask, current_app, g
from sqlalchemy import Engine

from exam.bank import load
from exam.db.engine import is_postgres, pooled_engine
from exam.errors import StoreError
from exam.reports import kinds
from exam.store import Store

RECHECK_S = 1.0  # how often a process reads its store's schema again (migrated underneath?)
_handles_lock = threading.Lock()
_frozen_in: tuple[int, int] | None = None  # (pid, modules loaded) when last frozen


@dataclass
class StoreHandle:
    """A process's open store: its engine and pool, made after the process started (a
    gunicorn worker, after the fork), replaced when the process is a fork of the one that
    made it or the SQLite file is no longer the one opened (deleted, replaced)."""

    target: str
    engine: Engine
    pid: int
    file: tuple[int, int] | None  # SQLite: (device, inode) of the file opened
    checked_at: float  # time.monotonic() the schema was last read
    lock: threading.Lock = field(default_factory=threading.Lock)
    # why the last reading of the schema refused the store (newer than this code, damaged):
    # requests are refused so until a reading passes, not only the one that read it
    refused: str | None = None

    @classmethod
    def open(cls, target: str) -> StoreHandle:
        """Open the store as the CLI does (same errors: a folder that cannot be made, a
        damaged file, a schema newer than this agent-exam), then keep a pooled engine."""

        Store(target).close()
        engine = pooled_engine(target)
        return cls(target, engine, os.getpid(), None if is_postgres(target) else _file(target),
                   time.monotonic())

    def current(self) -> bool:
        """Still this process's, on the same file (a stat: microseconds)."""
        return self.pid == os.getpid() and (self.file is None or _file(self.target) == self.file)

    def request_store(self):
        """A Store on one pooled connection; the schema is read again once RECHECK_S has
        passed since it last was (one request does it, the others go on)."""

        s = Store(self.target, engine=self.engine, checked=True)
        if time.monotonic() - self.checked_at > RECHECK_S and self.lock.acquire(blocking=False):
            try:
                s.check_schema()
                self.refused = None
                self.checked_at = time.monotonic()
            except StoreError as exc:
                self.refused = str(exc)
                s.close()
                raise
            except BaseException:
                s.close()
                raise
            finally:
                self.lock.release()
        elif self.refused is not None:  # another request is reading it again meanwhile
            s.close()
            raise StoreError(self.refused)
        return s

    def drop(self) -> None:
        """Let go of the pool: a forked child drops its parent's connections unclosed (they
        are the parent's); PostgreSQL's engine is the process's (exam.db.engine) and stays."""
        if self.engine.url.get_backend_name() == "sqlite":
            self.engine.dispose(close=self.pid == os.getpid())


def _file(target: str) -> tuple[int, int] | None:
    try:
        st = os.stat(target)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def handle(app: Flask) -> StoreHandle:
    """The app's store handle in this process, opened (again) when needed."""
    h = app.extensions.get("exam.store")
    if h is not None and h.current():
        return h
    with _handles_lock:
        h = app.extensions.get("exam.store")
        if h is None or not h.current():
            if h is not None:
                app.extensions.pop("exam.store")
                h.drop()
            h = app.extensions["exam.store"] = StoreHandle.open(app.config["DB"])
    return h


def store():
    """The request's store: one connection from the process's pool (SQLite or PostgreSQL),
    given back when the request ends."""

    if "store" not in g:
        target = str(current_app.config["DB"])
        if target == ":memory:":  # each connection would be another empty database
            g.store = Store(target)
        else:
            g.store = handle(current_app._get_current_object()).request_store()
    return g.store


def registry():
    """The agent registry named by the AGENTS setting, read afresh for the request."""
    from exam.pipeline.registry import load_registry

    return load_registry(current_app.config["AGENTS"])


def close_store(_exc: BaseException | None = None) -> None:
    s = g.pop("store", None)
    if s is not None:
        s.close()


def freeze_once(_exc: BaseException | None = None) -> None:
    """After a serving process's first request, and after any request that loaded modules
    no request had loaded before, what the process keeps for its life (modules, the app, the
    store handle, parsed banks: ~73,000 objects in a warm worker) is moved out of the cyclic
    GC's reach: a full collection over them cost ~42 ms of CPU, with every request in flight
    on that worker waiting, about once every 250 requests. Not in tests (TESTING): their
    objects would live as long as the test session."""
    global _frozen_in
    warmth = (os.getpid(), len(sys.modules))  # a forked child freezes what it makes too
    if _frozen_in == warmth or current_app.testing:
        return
    _frozen_in = warmth
    gc.collect()  # garbage first: what is frozen is never collected
    gc.freeze()


def warm() -> None:
    """Load what a report request loads (every report module, the bank's JSON schema
    validators) while the worker starts, not in its first report request: 57 ms of CPU on
    the demo store, with the worker's other requests waiting on its interpreter lock, after
    every start of every worker."""

    kinds.names()  # imports every module of exam.reports: the registry's list, not one kept here
    load._validators()


def init_app(app: Flask) -> None:
    """Close the request's store when its app context ends; freeze the process's objects once
    it is warm. A serving app (not TESTING) loads the reports' modules at once."""
    app.teardown_appcontext(close_store)
    app.teardown_request(freeze_once)
    if not app.testing:
        warm()


def store_time() -> float:
    """The store's time for this request (one read, kept for the request): share links are
    signed and judged by it, never by this host's clock."""
    if "store_time" not in g:
        g.store_time = store().now()
    return g.store_time
