"""PostgreSQL trouble as production delivers it: a server that accepts and never answers, a
connection whose peer vanished, a lock another session holds on ``runs``. Each is given up on
with one message (a StoreError, which the CLI prints as one line and a worker waits out),
never waited for forever."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading

import psycopg
import pytest
from sqlalchemy import text

from exam.db import engine as db_engine
from exam.db.schema import SCHEMA_VERSION
from exam.errors import StoreUnavailable
from exam.pipeline import worker
from exam.store import Store
from tests.conftest import ROOT
from tests.exam.store.conftest import empty_postgres


class Listener:
    """A listener on 127.0.0.1 (``port``, or any), each connection it accepts handed to
    ``take``, until closed."""

    def __init__(self, port: int = 0) -> None:
        self.sock = socket.create_server(("127.0.0.1", port))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.take(conn)

    def take(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


class Silent(Listener):
    """Accepts connections and never says a word (a firewall or a hung server between a
    process and its PostgreSQL): what libpq waits on forever without a connect timeout."""

    def __init__(self) -> None:
        self.accepted = threading.Event()
        super().__init__()

    def take(self, conn: socket.socket) -> None:
        self.held.append(conn)
        self.accepted.set()


@pytest.fixture
def silent():
    server = Silent()
    yield server
    server.close()


@pytest.mark.slow  # waits out the connect timeout (CONNECT_TIMEOUT_S) in an `exam` process
def test_a_server_that_never_answers_is_one_line_not_a_hang(silent, tmp_path):
    url = f"postgresql://exam:hunter2-secret@127.0.0.1:{silent.port}/exam"
    env = {**os.environ, "EXAM_DB": url, "PYTHONPATH": str(ROOT)}
    # the bound only keeps a broken build from hanging the suite: the command gives up on
    # its own (CONNECT_TIMEOUT_S) long before it
    done = subprocess.run([sys.executable, "-m", "exam", "runs"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert silent.accepted.is_set()
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # one line, no traceback
    assert "timeout" in lines[0] and f"127.0.0.1:{silent.port}/exam" in lines[0]
    assert "hunter2" not in done.stderr + done.stdout


def test_a_connection_tells_a_vanished_server_from_a_slow_one(postgres_url):
    """TCP keepalives and a user timeout on every connection: a server whose host vanished
    (no RST: powered off, a partition, a failover's old address) breaks the connection in
    about a minute, instead of a query waiting for its answer forever."""
    store = Store(empty_postgres(postgres_url))
    try:
        with store._begin() as db:
            fd = db.connection.dbapi_connection.pgconn.socket
            sock = socket.socket(fileno=os.dup(fd))
            try:
                assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
                idle = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)
                every = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL)
                count = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT)
                user_timeout = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT)
            finally:
                sock.close()
    finally:
        store.close()
    assert idle + every * count <= 120
    assert 0 < user_timeout <= 120_000


def test_a_url_setting_wins_over_the_default(postgres_url):
    target = (f"{empty_postgres(postgres_url)}?keepalives_idle=7&connect_timeout=3"
              f"&options=-c%20lock_timeout%3D5s")
    try:
        store = Store(target)
        try:
            with store._begin() as db:
                params = db.connection.dbapi_connection.info.get_parameters()
                assert params["keepalives_idle"] == "7" and params["connect_timeout"] == "3"
                assert db.execute(text("SHOW lock_timeout")).scalar() == "5s"
        finally:
            store.close()
    finally:
        db_engine.dispose(target)


@pytest.fixture
def short_lock_wait(monkeypatch, postgres_url):
    """Locks waited for 1 s instead of a minute; the store's engine made afresh with it."""
    monkeypatch.setattr(db_engine, "LOCK_TIMEOUT_S", 1)
    url = empty_postgres(postgres_url)
    db_engine.dispose(url)
    yield url
    db_engine.dispose(url)


@pytest.fixture
def runs_locked(short_lock_wait):
    """Another session holding ``LOCK TABLE runs IN ACCESS EXCLUSIVE MODE`` (a hand-run
    maintenance, a migration gone astray) until the test releases it."""
    locker = psycopg.connect(short_lock_wait)
    locker.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
    yield locker
    locker.close()


def test_a_claim_blocked_by_a_lock_is_given_up_with_a_message(short_lock_wait, runs_locked):
    store = Store(short_lock_wait)
    try:
        with pytest.raises(StoreUnavailable, match="lock timeout"):
            store.claim_run("w1")
        runs_locked.rollback()
        assert store.claim_run("w1") is None  # the lock gone, the store works again
    finally:
        store.close()


class Logged(logging.Handler):
    """The worker's log lines, with an event per line looked for."""

    def __init__(self, *wanted: str) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.seen = {w: threading.Event() for w in wanted}

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        self.lines.append(line)
        for w, event in self.seen.items():
            if w in line:
                event.set()


def test_a_worker_blocked_by_a_lock_says_so_and_goes_on(short_lock_wait, runs_locked):
    logged = Logged("the store cannot be used", "the store can be used again")
    log = logging.getLogger("exam.pipeline.worker")
    log.addHandler(logged)
    log.setLevel(logging.INFO)
    stop = threading.Event()
    thread = threading.Thread(target=worker.work_forever,
                              args=(short_lock_wait, None, 0.05, stop), daemon=True)
    thread.start()
    try:
        assert logged.seen["the store cannot be used"].wait(60), logged.lines
        assert any("lock timeout" in line for line in logged.lines), logged.lines
        runs_locked.rollback()
        # it tries again (5 s later) and says the store is back
        assert logged.seen["the store can be used again"].wait(60), logged.lines
    finally:
        stop.set()
        thread.join(30)
        log.removeHandler(logged)
    assert not thread.is_alive()


def test_opening_waits_for_a_migration_however_long(short_lock_wait):
    """The lock wait is not applied to the migration lock: a second opener waits for the
    first one's migration to end, however long it takes, rather than failing to start."""
    holder = psycopg.connect(short_lock_wait, autocommit=True)
    try:  # a migration in progress elsewhere: the lock taken, the version not yet today's
        holder.execute("SELECT pg_advisory_lock(%s)", (db_engine.MIGRATION_LOCK,))
        holder.execute(f"UPDATE alembic_version SET version_num = '{SCHEMA_VERSION - 1}'")
        opened: list[object] = []
        thread = threading.Thread(target=lambda: opened.append(_open(short_lock_wait)),
                                  daemon=True)
        thread.start()
        # the opener waits on the lock for three times the lock wait, or gives up before
        while True:
            waited = holder.execute(
                "SELECT extract(epoch FROM now() - a.state_change) FROM pg_locks l "
                "JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' "
                "AND NOT l.granted").fetchone()
            if not thread.is_alive() or (waited and waited[0] > 3):
                break
        assert thread.is_alive(), opened
        # the migration ends
        holder.execute(f"UPDATE alembic_version SET version_num = '{SCHEMA_VERSION}'")
        holder.execute("SELECT pg_advisory_unlock(%s)", (db_engine.MIGRATION_LOCK,))
        thread.join(60)
        assert opened and isinstance(opened[0], Store), opened
        opened[0].close()
    finally:
        holder.execute(f"UPDATE alembic_version SET version_num = '{SCHEMA_VERSION}'")
        holder.close()


def _open(url: str) -> object:
    try:
        return Store(url)
    except Exception as exc:  # recorded for the assertion
        return exc


def test_the_lock_wait_is_what_the_session_runs_with(short_lock_wait):
    store = Store(short_lock_wait)
    try:
        with store._begin() as db:
            assert db.execute(text("SHOW lock_timeout")).scalar() == "1s"
    finally:
        store.close()


def test_the_lock_wait_is_set_after_connecting_not_as_a_startup_option(postgres_url):
    """A pooler in front of PostgreSQL (PgBouncer) refuses a startup parameter it does not
    know, ``options`` among them: the lock wait is a SET on each new connection instead."""
    url = empty_postgres(postgres_url)
    try:
        store = Store(url)
        try:
            with store._begin() as db:
                params = db.connection.dbapi_connection.info.get_parameters()
                assert "options" not in params, params
                assert db.execute(text("SHOW lock_timeout")).scalar() == "1min"
        finally:
            store.close()
    finally:
        db_engine.dispose(url)


class Forwarder(Listener):
    """127.0.0.1:``port`` forwarded to PostgreSQL, once started: a server coming up late."""

    def __init__(self, port: int, to: tuple[str, int]) -> None:
        self.to = to
        super().__init__(port)

    def take(self, conn: socket.socket) -> None:
        upstream = socket.create_connection(self.to)
        self.held += [conn, upstream]  # closed with the listener
        for a, b in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def test_a_worker_started_before_postgresql_waits_for_it(postgres_url, monkeypatch):
    """A reboot starts the workers before PostgreSQL: a worker waits for the store (one log
    line, tried again) instead of exiting, and works once the server answers."""
    from sqlalchemy.engine import make_url

    monkeypatch.setattr(worker, "RETRY_S", 0.05)
    url = make_url(empty_postgres(postgres_url))
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # free once closed: nothing listens there yet
    late = url.set(port=port).render_as_string(hide_password=False)
    logged = Logged("cannot open the store", "the store can be used again", "watching")
    log = logging.getLogger("exam.pipeline.worker")
    log.addHandler(logged)
    log.setLevel(logging.INFO)
    stop = threading.Event()
    failed: list[BaseException] = []

    def work() -> None:
        try:
            worker.work_forever(late, None, 0.05, stop)
        except BaseException as exc:  # recorded for the assertion
            failed.append(exc)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    forwarder = None
    try:
        assert logged.seen["cannot open the store"].wait(60), (logged.lines, failed)
        assert thread.is_alive(), failed
        assert any("trying again" in line for line in logged.lines), logged.lines
        forwarder = Forwarder(port, (url.host, url.port or 5432))
        assert logged.seen["watching"].wait(60), (logged.lines, failed)
        assert logged.seen["the store can be used again"].is_set()
    finally:
        stop.set()
        thread.join(30)
        log.removeHandler(logged)
        if forwarder:
            forwarder.close()
        db_engine.dispose(late)
    assert not thread.is_alive() and failed == []


def test_a_worker_pointed_at_a_database_that_does_not_exist_stops_at_once(postgres_url):
    """Not a store away for a moment: a wrong EXAM_DB is one message, at once."""
    from sqlalchemy.engine import make_url

    wrong = make_url(postgres_url).set(database="no_such_exam_store").render_as_string(
        hide_password=False)
    with pytest.raises(Exception) as raised:
        worker.work_forever(wrong, None, 0.05, threading.Event())
    assert not isinstance(raised.value, StoreUnavailable)
    assert "does not exist" in str(raised.value)


@pytest.mark.parametrize(("said", "away"), [
    ('connection failed: connection to server at "h", port 5432 failed: Connection refused',
     True),
    ('connection failed: connection to server at "h", port 5432 failed: FATAL:  sorry, too '
     'many clients already', True),
    ('connection failed: connection to server at "h", port 5432 failed: FATAL:  the database '
     'system is starting up', True),
    # max_connections nearly reached: the slots left are a superuser's (PostgreSQL ≤ 15, 16+)
    ('connection failed: connection to server at "h", port 5432 failed: FATAL:  remaining '
     'connection slots are reserved for non-replication superuser connections', True),
    ('connection failed: connection to server at "h", port 5432 failed: FATAL:  remaining '
     'connection slots are reserved for roles with the SUPERUSER attribute', True),
    ('connection failed: connection to server at "h", port 5432 failed: FATAL:  database '
     '"x" does not exist', False),
    ('connection failed: connection to server at "h", port 5432 failed: FATAL:  password '
     'authentication failed for user "exam"', False),
    # a server answering in another language (lc_messages): not known to be away, so not
    # waited for (a failed login must not keep a worker waiting for ever)
    ('connection failed: connection to server at "h", port 5432 failed: 致命錯誤:  使用者 '
     '"exam" 密碼認證失敗', False),
    ('connection failed: connection to server at "h", port 5432 failed: timeout expired',
     True),
])
def test_which_failures_to_open_are_waited_for(said, away):
    from sqlalchemy.exc import OperationalError

    from exam.store import away_at_open

    assert away_at_open(OperationalError("connect", {}, psycopg.OperationalError(said))) is away
