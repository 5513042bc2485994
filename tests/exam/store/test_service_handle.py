"""The service opens its store once per process (exam.web.context.StoreHandle) and gives each
request a connection from that process's pool, on both backends: the schema is not read and
no connection is opened per request, yet a store migrated underneath, a deleted file and a
forked worker are seen as they were when every request opened its own store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.pool import Pool

from exam.errors import StoreError
from exam.store import Store
from exam.store import base as store_mod
from exam.web import context
from exam.web.app import create_app
from tests.backends import marked_newer
from tests.exam.helpers import write_bank

TOKEN = "test-token-5f3a"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def app(store_target):
    return create_app({"API_TOKEN": TOKEN, "DB": store_target, "TESTING": True})


def queue_one(target: str) -> None:
    s = Store(target)
    try:
        s.create_run(agent="A", version="v1", bank_path="nowhere.json", bank_digest="d",
                     repeats=1, plan=[("A-01", "q")], settings={}, status="queued")
    finally:
        s.close()


def run_ids(client) -> list[int]:
    resp = client.get("/api/runs", headers=AUTH)
    assert resp.status_code == 200, resp.json
    return [r["run_id"] for r in resp.json["runs"]]


def test_one_handle_serves_every_request_without_reading_the_schema_again(app, store_target,
                                                                        monkeypatch):
    reads, opened = [], []
    real = store_mod.schema_version
    monkeypatch.setattr(store_mod, "schema_version", lambda conn: reads.append(1) or real(conn))
    queue_one(store_target)
    reads.clear()
    client = app.test_client()
    assert run_ids(client) == [1]  # the first request opens the store: its schema read once
    assert len(reads) == 1
    count = lambda *_: opened.append(1)  # noqa: E731
    event.listen(Pool, "connect", count)  # a connection opened by any engine
    try:
        for _ in range(5):
            assert run_ids(client) == [1]
            assert client.get("/healthz").status_code == 200
    finally:
        event.remove(Pool, "connect", count)
    assert len(reads) == 1 + 5  # /healthz says the schema: it reads it; /api/runs does not
    assert opened == []  # every request's connection came from the pool
    assert app.extensions["exam.store"].pid == os.getpid()


def test_a_store_migrated_underneath_is_refused_with_the_message_of_an_open(app, store_target,
                                                                           monkeypatch):
    client = app.test_client()
    assert run_ids(client) == []
    with marked_newer(store_target):
        with pytest.raises(StoreError) as opening:
            Store(store_target)
        monkeypatch.setattr(context, "RECHECK_S", 0.0)  # the next request reads it again
        resp = client.get("/api/runs", headers=AUTH)
        assert resp.status_code == 503
        assert resp.json["error"] == str(opening.value)
        assert "newer than this agent-exam understands" in str(opening.value)


def test_a_store_found_newer_is_refused_to_requests_that_do_not_read_it_again(
        app, store_target, monkeypatch):
    """Once a request found the store newer than this code, a request that comes while another
    reads the schema (it does not read it itself) is refused too, not served from a schema
    this code does not know."""
    client = app.test_client()
    assert run_ids(client) == []
    with marked_newer(store_target):
        monkeypatch.setattr(context, "RECHECK_S", 0.0)
        assert client.get("/api/runs", headers=AUTH).status_code == 503
        handle = app.extensions["exam.store"]
        assert handle.lock.acquire(blocking=False)  # another request is reading the schema
        try:
            resp = client.get("/api/runs", headers=AUTH)
        finally:
            handle.lock.release()
        assert resp.status_code == 503
        assert "newer than this agent-exam understands" in resp.json["error"]


# between `exam store migrate` and the restart (docs/deployment.md, section 8): every request
# that opens the store is the service's trouble, a 503 a client retries, never a 400 that says
# its request was wrong or a 404 that says the run is gone
REFUSED = [("post", "/api/runs", {"agent": "T", "version": "v2"}),
           ("get", "/api/runs/1", None),
           ("post", "/api/runs/1/exclude", {"reason": "flaky"}),
           ("get", "/api/runs/1/scorecard", None),
           ("get", "/api/compare?agent=T&old=v1&new=v2", None),
           ("get", "/reply/1/T-01/1", None)]


@pytest.mark.parametrize(("method", "path", "body"), REFUSED)
def test_an_old_instance_answers_503_to_a_store_migrated_underneath(store_target, tmp_path,
                                                                    monkeypatch, method, path,
                                                                    body):
    registry = tmp_path / "agents.yaml"
    registry.write_text(json.dumps({"agents": {"T": {"url": "http://127.0.0.1:9/",
                                                     "bank": str(write_bank(tmp_path, ["ok"]))}}}))
    app = create_app({"API_TOKEN": TOKEN, "DB": store_target, "AGENTS": str(registry),
                      "TESTING": True})
    client = app.test_client()
    queue_one(store_target)
    assert run_ids(client) == [1]
    with marked_newer(store_target):
        monkeypatch.setattr(context, "RECHECK_S", 0.0)
        resp = getattr(client, method)(path, json=body, headers=AUTH)
        assert resp.status_code == 503, resp.get_data(as_text=True)
        # the API says why in JSON; a dashboard page says it to the admin on the page
        said = resp.json["error"] if path.startswith("/api/") else resp.get_data(as_text=True)
        assert "newer than this agent-exam understands" in said


def test_a_run_the_store_does_not_hold_is_still_404(app):
    client = app.test_client()
    assert client.get("/api/runs/7", headers=AUTH).status_code == 404
    assert client.post("/api/runs/7/exclude", json={"reason": "x"}, headers=AUTH).status_code == 404
    assert client.get("/reply/7/T-01/1", headers=AUTH).status_code == 404


def sqlite_app_in_use(tmp_path):
    """(the SQLite file, an app over it, its client) after a request that read one run."""
    db = tmp_path / "exam.db"
    app = create_app({"API_TOKEN": TOKEN, "DB": str(db), "TESTING": True})
    queue_one(str(db))
    client = app.test_client()
    assert run_ids(client) == [1]
    return db, app, client


def test_a_deleted_store_file_is_opened_afresh_as_a_new_store(tmp_path):
    db, _app, client = sqlite_app_in_use(tmp_path)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    assert run_ids(client) == []  # not the deleted file's runs through a pooled connection
    assert db.exists()


def test_a_forked_worker_opens_its_own_handle(tmp_path):
    db, app, client = sqlite_app_in_use(tmp_path)
    parent = app.extensions["exam.store"]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a gunicorn worker forked after the app was used
        code = 1
        try:
            ids = run_ids(client)
            mine = app.extensions["exam.store"]
            os.write(write, json.dumps({"ids": ids, "pid": mine.pid, "new": mine is not parent,
                                        "me": os.getpid()}).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as f:
        got = json.loads(f.read() or "{}")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert got == {"ids": [1], "pid": pid, "new": True, "me": pid}
    assert run_ids(client) == [1]  # the parent's pool still works after the child is gone
    assert app.extensions["exam.store"] is parent


FREEZE = """
import gc, json, sys
from exam.web.app import create_app
freezes, real = [], gc.freeze
gc.freeze = lambda: freezes.append(1) or real()
app = create_app({"API_TOKEN": "t", "DB": sys.argv[1], "TESTING": sys.argv[2] == "testing"})
client = app.test_client()
before = gc.get_freeze_count()
client.get("/api/runs", headers={"Authorization": "Bearer t"})
first = gc.get_freeze_count()
client.get("/api/runs", headers={"Authorization": "Bearer t"})
again = len(freezes)
assert "mailbox" not in sys.modules
import mailbox  # a module no request had loaded: the next request leaves the process warmer
client.get("/api/runs", headers={"Authorization": "Bearer t"})
print(json.dumps([before, first, again, len(freezes)]))
"""


@pytest.mark.slow  # a fresh Python process each, as gunicorn starts one
@pytest.mark.parametrize("mode", ["serving", "testing"])
def test_a_serving_process_freezes_what_it_keeps_once_warm(tmp_path, mode):
    done = subprocess.run([sys.executable, "-c", FREEZE, str(tmp_path / "exam.db"), mode],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    before, frozen, again, warmer = json.loads(done.stdout)
    assert before == 0
    if mode == "serving":  # after the first request, and after one that loaded new modules
        assert frozen > 10_000 and again == 1 and warmer == 2
    else:
        assert frozen == again == warmer == 0


WARM = """
import json, sys
from exam.web.app import create_app
create_app({"API_TOKEN": "t", "DB": sys.argv[1], "TESTING": sys.argv[2] == "testing"})
print(json.dumps([m in sys.modules for m in ("jsonschema", "exam.reports.scorecard")]))
"""


@pytest.mark.slow  # a fresh Python process each, as gunicorn starts one
@pytest.mark.parametrize("mode", ["serving", "testing"])
def test_a_serving_app_loads_what_reports_need_before_its_first_request(tmp_path, mode):
    done = subprocess.run([sys.executable, "-c", WARM, str(tmp_path / "exam.db"), mode],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # a testing app skips the warm-up (the bank's validators stay unloaded), but every app
    # loads the report modules: the API's routes are made from the report registry
    assert json.loads(done.stdout) == ([True, True] if mode == "serving" else [False, True])
