"""No 500s and no tracebacks on what users really have: a canary agent sharing another agent's
bank, a bank file that was moved, a store with overwritten pages, odd API input."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading

import pytest
import yaml
from click.testing import CliRunner

from exam import review
from exam.cli.main import main
from exam.pipeline.worker import work_once
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs
from exam.store import Store
from exam.web.app import create_app
from tests.exam.conftest import History
from tests.exam.helpers import wait_for, write_bank
from tests.fakes.agent import FakeAgent

TOKEN = "users-token-91c2"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CASES = [("Q-01", "c", "major"), ("Q-02", "c", "critical")]


@pytest.fixture
def history(tmp_path):
    h = History(tmp_path)
    yield h
    h.store.close()


def cli(db, *args):
    """The CLI in-process; an exception that is not a clean exit fails the test (traceback)."""
    return CliRunner().invoke(main, [*args, "--db", str(db)], catch_exceptions=False)


def exam(db, *args):
    """The CLI as a user runs it, to see what reaches the terminal."""
    return subprocess.run([sys.executable, "-m", "exam", *args, "--db", str(db)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


def web(db, **extra):
    return create_app({"API_TOKEN": TOKEN, "DB": str(db), **extra}).test_client()


# -- a canary agent with another agent's bank ---------------------------------------------

@pytest.fixture
def canary(history):
    history.bank("W2", CASES)
    history.banks["W2canary"] = history.banks["W2"]  # bank: bank/W2.json, agent "W2" inside
    history.run("W2", "v1", {"Q-01": "h", "Q-02": "p"})
    history.run("W2canary", "v1", {"Q-01": "hh", "Q-02": "h"})
    return history


def test_the_review_queue_holds_a_canary_that_shares_a_bank(canary):
    items = review.queue(regrade(canary.store, select_runs(canary.store)))
    assert sorted((i.agent, i.case_no) for i in items) == [
        ("W2", "Q-01"), ("W2canary", "Q-01"), ("W2canary", "Q-02")]


def test_review_page_and_decision_for_a_canary(canary):
    client = web(canary.tmp / "exam.db")
    page = client.get("/review", headers=AUTH)
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "W2canary Q-02" in text
    key = next(k for k in re.findall(r'name="key" value="([^"]+)"', text)
               if k.startswith("W2canary:Q-02:"))
    resp = client.post("/review", data={"key": key, "decision": "pass", "reviewer": "Mei"},
                       headers=AUTH)
    assert resp.status_code == 302
    assert [a["agent"] for a in canary.store.adjudications()] == ["W2canary"]


def test_exam_review_with_a_canary(canary, table):
    out = canary.tmp / "queue.csv"
    result = cli(canary.tmp / "exam.db", "review", "--export", str(out))
    assert result.exit_code == 0, result.output
    assert "3 item(s) written" in result.output
    table("bad input", "a registry agent named unlike its bank's `agent` (W2canary with "
                       "bank/W2.json): /review, a decision, `exam review --export`", 3,
          "the queue holds both agents' replies; 200, decision stored; exit 0", "nothing")


# -- a bank file that was moved -----------------------------------------------------------

@pytest.fixture
def moved(history):
    history.bank("A", CASES)
    history.bank("B", CASES)
    history.run("A", "v1", {"Q-01": "p", "Q-02": "p"})
    history.run("A", "v2", {"Q-01": "f", "Q-02": "h"})
    history.run("B", "v1", {"Q-01": "p", "Q-02": "f"})
    shutil.move(history.banks["A"], history.tmp / "A-moved.json")
    return history


def note(history, run_id, version):
    return (f"run {run_id} (A {version}): its bank {history.banks['A']} is missing (moved or "
            f"deleted?); its 2 stored cell(s) are left out of this report")


@pytest.mark.parametrize("kind", ["discrimination", "rebalance", "scorecard"])
def test_cli_reports_name_the_runs_whose_bank_is_missing_and_show_the_rest(moved, kind):
    result = exam(moved.tmp / "exam.db", "report", kind)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    for run_id, version in ((1, "v1"), (2, "v2")):
        assert f"note: {note(moved, run_id, version)}" in result.stdout
    assert re.search(r"^B\b", result.stdout, re.M)  # B's report is all there


@pytest.mark.parametrize("fmt", ["json", "csv", "junit", "markdown"])
def test_every_format_says_which_bank_is_missing(moved, fmt):
    result = exam(moved.tmp / "exam.db", "report", "discrimination", "--format", fmt)
    assert result.returncode == 0, result.stderr
    said = result.stdout if fmt in ("markdown", "json") else result.stderr
    assert note(moved, 1, "v1") in said
    if fmt == "json":
        report = json.loads(result.stdout)
        assert [m["run_id"] for m in report["missing_banks"]] == [1, 2]
        assert [a["agent"] for a in report["agents"]] == ["B"]


def test_compare_of_a_version_whose_bank_is_missing_says_so(moved):
    result = exam(moved.tmp / "exam.db", "compare", "A", "v1", "v2")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"cannot compare A v1 → v2: {note(moved, 1, 'v1')}" in result.stderr


@pytest.mark.parametrize("path", ["/discrimination", "/discrimination?agent=A", "/scorecard/A/v1",
                                  "/scorecard/B/v1", "/compare?agent=A&old=v1&new=v2",
                                  "/review", "/"])
def test_dashboard_pages_name_the_missing_bank(moved, path):
    resp = web(moved.tmp / "exam.db").get(path, headers=AUTH)
    # a compare of a version whose bank is missing is a 404, as GET /api/compare answers
    assert resp.status_code == (404 if path.startswith("/compare") else 200)
    text = resp.get_data(as_text=True)
    if path != "/" and "B/v1" not in path:
        assert f"run 1 (A v1): its bank {moved.banks['A']} is missing" in text


def test_the_discrimination_page_still_shows_the_other_agent(moved, table):
    text = web(moved.tmp / "exam.db").get("/discrimination", headers=AUTH).get_data(as_text=True)
    assert 'id="heatmap-B"' in text and 'id="heatmap-A"' not in text
    table("bad input", "runs whose bank file was moved: CLI reports in 5 formats, compare, "
                       "7 dashboard pages, 3 API reports", 18,
          "each names the run(s) whose bank is missing and shows the rest; compare of such a "
          "version: exit 2 naming the run; no 500, no traceback", "nothing")


@pytest.mark.parametrize("path", ["/api/discrimination", "/api/runs/1/scorecard",
                                  "/api/runs/3/scorecard"])
def test_api_reports_list_the_missing_banks(moved, path):
    resp = web(moved.tmp / "exam.db").get(path, headers=AUTH)
    assert resp.status_code == 200
    missing = resp.json["missing_banks"]
    assert all(m["bank_path"] == moved.banks["A"] for m in missing)
    assert [m["run_id"] for m in missing] == ([] if path.endswith("/3/scorecard") else
                                              [1] if "/1/" in path else [1, 2])


def test_api_compare_of_a_version_whose_bank_is_missing(moved):
    resp = web(moved.tmp / "exam.db").get("/api/compare?agent=A&old=v1&new=v2", headers=AUTH)
    assert resp.status_code == 404 and "run 1 (A v1): its bank" in resp.json["error"]


# -- a bank a newer version refuses, under one of a version's runs ---------------------------

REFUSED = r"re:(\d+),\1"  # a backreference: loaded on Python's re, refused since RE2 (issue 31)


@pytest.fixture
def half_lost(history):
    """A v2 has two runs: one made with bank/A.json (all pass), one with a copy of it that
    failed the critical Q-02 every time; the copy now holds a regex the bank check refuses."""
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})
    history.run("A", "v2", {"Q-01": "ppp", "Q-02": "ppp"})
    kept = history.banks["A"]
    copy = history.tmp / "A-copy.json"
    shutil.copy(kept, copy)
    history.banks["A"] = str(copy)
    history.run("A", "v2", {"Q-01": "ppp", "Q-02": "fff"})
    history.banks["A"] = kept
    bank = json.loads(copy.read_text(encoding="utf-8"))
    bank["questions"][1]["expect_facts"].append(REFUSED)
    copy.write_text(json.dumps(bank), encoding="utf-8")
    return history


def test_compare_never_ships_a_version_one_of_whose_runs_lost_its_bank(half_lost):
    result = exam(half_lost.tmp / "exam.db", "compare", "A", "v1", "v2")
    assert result.returncode == 2, result.stdout
    assert "VERDICT: SHIP" not in result.stdout and "Traceback" not in result.stderr
    assert (f"cannot compare A v1 → v2: run 3 (A v2): its bank cannot be loaded: "
            f"{half_lost.tmp / 'A-copy.json'}: Q-02.expect_facts[1]: regex") in result.stderr


def test_api_compare_never_ships_a_version_one_of_whose_runs_lost_its_bank(half_lost):
    resp = web(half_lost.tmp / "exam.db").get("/api/compare?agent=A&old=v1&new=v2",
                                              headers=AUTH)
    assert resp.status_code == 404, resp.json
    assert "run 3 (A v2): its bank cannot be loaded" in resp.json["error"]


def test_a_notification_of_a_run_whose_bank_no_longer_loads_is_refused(half_lost, tmp_path):
    out = tmp_path / "preview.json"
    result = exam(half_lost.tmp / "exam.db", "notify", "webhook", "--run", "3", "--dry-run",
                  "--out", str(out))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "run 3 (A v2): its bank cannot be loaded" in result.stderr
    assert not out.exists()  # never a payload that says nothing of the run it was asked for


# -- a store with overwritten pages ---------------------------------------------------------

@pytest.fixture
def damaged(history):
    history.bank("A", CASES)
    for v in ("v1", "v2", "v3"):
        history.run("A", v, {"Q-01": "p", "Q-02": "h"})
    db = history.tmp / "exam.db"
    history.store._conn.connection.dbapi_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = history.store._conn.connection.dbapi_connection.execute("PRAGMA page_size").fetchone()[0]
    root = history.store._conn.connection.dbapi_connection.execute(
        "SELECT rootpage FROM sqlite_master WHERE name = 'runs'").fetchone()[0]
    history.store.close()
    with open(db, "r+b") as f:  # the runs table's page, overwritten as a bad disk would
        f.seek((root - 1) * page)
        f.write(b"\xde\xad\xbe\xef" * (page // 4))
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):  # it is really damaged
        sqlite3.connect(db).execute("SELECT * FROM runs").fetchall()
    history.store = Store(":memory:")  # the fixture closes this one
    return db


@pytest.mark.parametrize("args", [["runs"], ["report", "scorecard"], ["report", "discrimination"],
                                  ["review", "--export", "q.csv"], ["worker", "--once"],
                                  ["resume", "1"], ["compare", "A", "v1", "v2"]])
def test_a_damaged_store_is_one_message_and_exit_2(damaged, args):
    result = exam(damaged, *args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [f"Error: {damaged}: the store is damaged (database disk image is malformed):"
                     f" restore it from a backup, or save what can be read with: sqlite3 "
                     f"{damaged} .recover | sqlite3 recovered.db"]


def test_the_service_answers_503_json_on_a_damaged_store(damaged, table):
    client = web(damaged)
    health = client.get("/healthz")
    assert health.status_code == 503
    assert health.json == {"ok": False, "error": "the store cannot be opened (see the service log)"}
    for path in ("/api/runs", "/api/discrimination", "/"):
        resp = client.get(path, headers=AUTH)
        said = resp.json["error"] if path.startswith("/api/") else resp.get_data(as_text=True)
        assert resp.status_code == 503 and "the store is damaged" in said, path
    table("store", "a store file whose pages were overwritten: 7 commands, /healthz, API and "
                   "dashboard", 11,
          "one line naming the file and how to recover, exit 2; /healthz and every API route "
          "answer JSON 503, dashboard pages a 503 page; no traceback",
          "what the overwritten pages held")


def test_the_in_process_worker_stops_with_one_line_on_a_damaged_store(damaged, caplog):
    from exam.pipeline.worker import start_in_thread

    before = set(threading.enumerate())
    with caplog.at_level(logging.ERROR, logger="exam.pipeline.worker"):
        start_in_thread(str(damaged), None)  # what `exam serve` starts
        # the thread may be gone before it could be looked for: wait on what it logs
        wait_for(lambda: caplog.records, "the worker to say why it stopped")
        started = [t for t in threading.enumerate() if t not in before]
        for worker in started:
            worker.join(timeout=60)
    assert not [t for t in started if t.is_alive()]
    assert [r.getMessage() for r in caplog.records] == [
        f"worker stopped: {damaged}: the store is damaged (database disk image is malformed): "
        f"restore it from a backup, or save what can be read with: sqlite3 {damaged} .recover "
        "| sqlite3 recovered.db"]


@pytest.mark.parametrize("where", ["under a file", "a folder"])
def test_healthz_is_503_json_when_the_store_cannot_open(tmp_path, where):
    (tmp_path / "file").write_text("not a folder")
    path = tmp_path / "file" / "exam.db" if where == "under a file" else tmp_path
    resp = web(path).get("/healthz")
    assert resp.status_code == 503 and resp.json["ok"] is False


# -- odd API input ------------------------------------------------------------------------

@pytest.fixture
def service(tmp_path):
    with FakeAgent() as agent:
        bank = write_bank(tmp_path, ["ok", "ok"], name="Y")
        registry = tmp_path / "agents.yaml"
        registry.write_text(yaml.safe_dump({"agents": {"Y": {"url": agent.url, "bank": str(bank),
                                                             "timeout_s": 5}}}))
        client = web(tmp_path / "exam.db", AGENTS=str(registry))
        yield client, agent, tmp_path, registry


def test_a_case_named_three_times_is_sent_once_and_the_run_completes(service, table):
    client, agent, tmp, registry = service
    resp = client.post("/api/runs", json={"agent": "Y", "version": "v1",
                                          "only": ["Y-01", "Y-01", "Y-01"]}, headers=AUTH)
    assert resp.status_code == 202
    run_id = resp.json["run_id"]
    store = Store(tmp / "exam.db")
    try:
        assert work_once(store, str(registry)) == run_id
    finally:
        store.close()
    run = client.get(f"/api/runs/{run_id}", headers=AUTH).json
    assert run["status"] == "done" and run["progress"] == {"done": 1, "total": 1}
    assert [json.loads(r["raw"])["task_id"] for r in agent.requests] == ["Y-01"]
    table("bad input", 'API run with `{"only": ["Y-01", "Y-01", "Y-01"]}`', 1,
          "one question planned, one POST sent, run done 1/1", "nothing")


@pytest.mark.parametrize("limit", ["²", "١٢", "1" * 5000, "0", "1001", "-1", "ten", ""])
def test_a_limit_that_is_not_ascii_digits_is_a_400_naming_it(service, limit):
    client, *_ = service
    resp = client.get("/api/runs", query_string={"limit": limit}, headers=AUTH)
    assert resp.status_code == 400
    assert resp.json["field"] == "limit" and resp.json["error"].startswith("limit: expected")


def test_a_body_nested_100000_deep_is_a_json_400(service):
    client, *_ = service
    body = '{"agent": ' + "[" * 100_000 + "]" * 100_000 + "}"
    resp = client.post("/api/runs", data=body, headers={**AUTH, "Content-Type":
                                                       "application/json"})
    assert resp.status_code == 400 and resp.is_json
    assert resp.json["error"] == "the JSON body is nested deeper than 64 levels"


@pytest.mark.parametrize(("method", "path", "code"), [
    ("GET", "/api/runs/99999999999999999999999", 404),
    ("GET", "/api/runs/99999999999999999999999/scorecard", 404),
    ("DELETE", "/api/runs", 405), ("GET", "/api/nothing", 404),
    ("POST", "/api/runs", 400),
])
def test_every_api_error_is_json(service, method, path, code):
    client, *_ = service
    resp = client.open(path, method=method, data=b"{not json",
                       headers={**AUTH, "Content-Type": "application/json"})
    assert resp.status_code == code and resp.is_json and "error" in resp.json


def test_an_unexpected_error_in_a_route_is_a_json_500_without_a_traceback(service, monkeypatch):
    client, *_ = service
    client.application.config["PROPAGATE_EXCEPTIONS"] = False
    monkeypatch.setattr(Store, "list_runs", lambda *a, **k: 1 / 0)
    resp = client.get("/api/runs", headers=AUTH)
    assert resp.status_code == 500 and resp.is_json
    assert resp.json == {"error": "internal error (logged by the service)"}
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
