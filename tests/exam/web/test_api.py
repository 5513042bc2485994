"""The JSON API through Flask's test client, with a real fake agent on 127.0.0.1."""

from __future__ import annotations

import json
import re
import sqlite3
import time

import pytest

from exam.errors import ExamError
from exam.pipeline.worker import work_once
from exam.store import Store
from exam.web.app import create_app
from exam.web.openapi import spec

ROUTES = [("GET", "/api/runs"), ("POST", "/api/runs"), ("GET", "/api/runs/1"),
          ("GET", "/api/runs/1/scorecard"), ("GET", "/api/compare?agent=T&old=a&new=b"),
          ("GET", "/api/discrimination"), ("GET", "/api/openapi.json")]


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic dGVzdA==", "Bearer "])
def test_every_api_route_needs_the_token(client, method, path, header):
    headers = {"Authorization": header} if header else {}
    resp = client.open(path, method=method, headers=headers, json={})
    assert resp.status_code == 401
    assert resp.json == {"error": "missing or wrong bearer token"}


def test_healthz_is_open(client):
    resp = client.get("/healthz")
    assert resp.status_code == 200 and resp.json["ok"] is True


def test_right_token(client, auth):
    assert client.get("/api/runs", headers=auth).status_code == 200


def test_refuses_to_start_without_a_token(tmp_path):
    with pytest.raises(ExamError, match="EXAM_API_TOKEN is not set"):
        create_app({"DB": str(tmp_path / "x.db")})
    app = create_app({"DB": str(tmp_path / "x.db"), "LOCAL_DEV": True})
    assert app.test_client().get("/api/runs").status_code == 200


def test_token_from_environment_stays_a_string(tmp_path, monkeypatch):
    monkeypatch.setenv("EXAM_API_TOKEN", "12345")
    monkeypatch.setenv("EXAM_DB", str(tmp_path / "x.db"))
    client = create_app().test_client()
    assert client.get("/api/runs", headers={"Authorization": "Bearer 12345"}).status_code == 200


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"version": "v1"}, "agent", "expected the name of an agent"),
        ({"agent": "W9", "version": "v1"}, "agent", "no agent named 'W9' in the registry"),
        ({"agent": "T"}, "version", "non-empty label"),
        ({"agent": "T", "version": "  "}, "version", "non-empty label"),
        ({"agent": "T", "version": "v1", "repeats": 0}, "repeats", "from 1 to 20"),
        ({"agent": "T", "version": "v1", "repeats": "3"}, "repeats", "from 1 to 20"),
        ({"agent": "T", "version": "v1", "repeats": True}, "repeats", "from 1 to 20"),
        ({"agent": "T", "version": "v1", "only": "T-01"}, "only", "list of case_no"),
        ({"agent": "T", "version": "v1", "only": ["T-99"]}, "only", "no question 'T-99'"),
        ({"agent": "T", "version": "v1", "url": "http://evil.example/"}, "url", "unknown field"),
    ],
)
def test_validation_names_the_field(client, auth, body, field, message):
    resp = client.post("/api/runs", json=body, headers=auth)
    assert resp.status_code == 400
    assert resp.json["field"] == field and message in resp.json["error"]


def test_non_json_body_is_400(client, auth):
    resp = client.post("/api/runs", data="agent=T", headers=auth)
    assert resp.status_code == 400 and "expected a JSON object" in resp.json["error"]


def test_oversized_body_is_413(client, auth):
    resp = client.post("/api/runs", data="x" * 2_000_000, headers={**auth,
                                                                   "Content-Type": "application/json"})
    assert resp.status_code == 413 and "larger than" in resp.json["error"]


def test_unknown_run_is_404(client, auth):
    assert client.get("/api/runs/999", headers=auth).status_code == 404


def test_run_lifecycle(client, auth, app, fake_agent):
    resp = client.post("/api/runs", json={"agent": "T", "version": "v1", "repeats": 2},
                       headers=auth)
    assert resp.status_code == 202
    run_id = resp.json["run_id"]
    assert resp.headers["Location"] == f"/api/runs/{run_id}"
    queued = client.get(f"/api/runs/{run_id}", headers=auth).json
    assert queued["status"] == "queued" and queued["progress"] == {"done": 0, "total": 6}
    assert fake_agent.requests == []  # never inside the request

    store = Store(app.config["DB"])
    assert work_once(store, app.config["AGENTS"]) == run_id
    done = client.get(f"/api/runs/{run_id}", headers=auth).json
    assert done["status"] == "done" and done["progress"] == {"done": 6, "total": 6}
    card = client.get(f"/api/runs/{run_id}/scorecard", headers=auth).json["scorecards"][0]
    assert card["verdicts"]["pass"] == 4 and card["run_status"]["http_error"] == 2

    client.post("/api/runs", json={"agent": "T", "version": "v2"}, headers=auth)
    work_once(store, app.config["AGENTS"])
    cmp = client.get("/api/compare?agent=T&old=v1&new=v2", headers=auth)
    assert cmp.status_code == 200 and cmp.json["old"] == "v1" and cmp.json["regressions"] == []
    disc = client.get("/api/discrimination?agent=T", headers=auth).json
    assert disc["agents"][0]["versions"] == ["v1", "v2"]
    listed = client.get("/api/runs", headers=auth).json["runs"]
    assert [r["version"] for r in listed] == ["v2", "v1"]


def test_scorecard_lists_its_cells_a_page_at_a_time(client, auth, app):
    """A year of history gives a run thousands of cells: the API lists a page of them, every
    count still of every cell, and the pages, followed by ``next``, are every cell once."""
    from exam.reports.scorecard import API_CELLS

    client.post("/api/runs", json={"agent": "T", "version": "v1", "repeats": 3}, headers=auth)
    run_id = work_once(Store(app.config["DB"]), app.config["AGENTS"])
    url = f"/api/runs/{run_id}/scorecard"
    first = client.get(url, headers=auth).json
    assert first["cells_page"] == {"start": 0, "limit": API_CELLS, "listed": 9, "total": 9,
                                   "next": None}
    whole = [(case["case_no"], c["repeat"]) for case in first["scorecards"][0]["cases"]
             for c in case["cells"]]
    assert len(whole) == 9 and len(set(whole)) == 9

    seen, start, pages = [], 0, 0
    while start is not None:
        page = client.get(f"{url}?limit=2&start={start}", headers=auth).json
        card = page["scorecards"][0]
        assert card["verdicts"] == first["scorecards"][0]["verdicts"]  # counts: every cell
        assert all(case["cells_total"] == 3 for case in card["cases"])
        seen += [(case["case_no"], c["repeat"]) for case in card["cases"] for c in case["cells"]]
        assert page["cells_page"]["listed"] == len(seen) - 2 * pages
        start, pages = page["cells_page"]["next"], pages + 1
    assert seen == whole and pages == 5

    beyond = client.get(f"{url}?start=50", headers=auth).json
    assert beyond["cells_page"]["listed"] == 0 and beyond["cells_page"]["next"] is None
    for bad in ("start=-1", "limit=0", "limit=x"):
        resp = client.get(f"{url}?{bad}", headers=auth)
        assert resp.status_code == 400 and resp.json["field"] == bad.split("=")[0]


def test_compare_missing_parameter_names_it(client, auth):
    resp = client.get("/api/compare?agent=T&old=v1", headers=auth)
    assert resp.status_code == 400 and resp.json["field"] == "new"


def test_compare_of_an_agent_without_runs_is_404(client, auth):
    # the message every surface gives (exam/reports/selection.py)
    resp = client.get("/api/compare?agent=T&old=v1&new=v2", headers=auth)
    assert resp.status_code == 404
    assert resp.json["error"] == ("no stored runs match agent T: start one with exam run AGENT "
                                  "--version LABEL")


def test_a_dead_workers_run_is_resumed_by_the_next(client, auth, app, fake_agent):
    run_id = client.post("/api/runs", json={"agent": "T", "version": "v1", "repeats": 2},
                         headers=auth).json["run_id"]
    store = Store(app.config["DB"])
    # a worker on another machine claimed it, stored two cells, then died
    claimed = store.claim_run("elsewhere:4242")
    assert claimed.id == run_id
    from exam.pipeline.gate import RequestGate
    from exam.pipeline.registry import load_registry
    from exam.pipeline.runner import job_for, run_cell

    job = job_for(store, run_id, load_registry(app.config["AGENTS"]).get("T"))
    run_cell(store, job, "T-01", 1, RequestGate(1))
    run_cell(store, job, "T-02", 1, RequestGate(1))
    before = len(fake_agent.requests)
    # while its lease holds, nobody takes the run over; once it ran out, any worker does
    assert work_once(store, app.config["AGENTS"]) is None
    with sqlite3.connect(app.config["DB"]) as db:
        db.execute("UPDATE runs SET lease_until=? WHERE id=?", (time.time() - 1, run_id))
    assert work_once(store, app.config["AGENTS"]) == run_id
    assert len(fake_agent.requests) - before == 4  # only the missing cells
    run = client.get(f"/api/runs/{run_id}", headers=auth).json
    assert run["status"] == "done" and run["progress"]["done"] == 6


def test_openapi_matches_the_routes(app, client, auth):
    documented = {(m.upper(), p) for p, ops in spec()["paths"].items() for m in ops}
    served = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/"):
            continue
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
        served |= {(m, path) for m in rule.methods - {"HEAD", "OPTIONS"}}
    assert documented == served
    assert client.get("/api/openapi.json", headers=auth).json["openapi"] == "3.1.0"


@pytest.mark.parametrize("limit", ["0", "abc", "5000", "-1"])
def test_bad_limit_names_the_field(client, auth, limit):
    resp = client.get(f"/api/runs?limit={limit}", headers=auth)
    assert resp.status_code == 400 and resp.json["field"] == "limit"


def test_a_running_run_names_the_worker_that_holds_it(client, auth, app):
    """Workers on several hosts: the API and `exam runs` say which one (host id:pid) holds a
    running run, so an operator knows where to look (docs/deployment.md)."""
    from click.testing import CliRunner

    from exam.cli.main import main

    run_id = client.post("/api/runs", json={"agent": "T", "version": "v1"}, headers=auth
                         ).json["run_id"]
    assert client.get(f"/api/runs/{run_id}", headers=auth).json["owner"] is None  # queued
    store = Store(app.config["DB"])
    try:
        owner = store.hold_run(run_id).owner
    finally:
        store.close()
    assert owner and ":" in owner
    assert client.get(f"/api/runs/{run_id}", headers=auth).json["owner"] == owner
    listed = CliRunner().invoke(main, ["runs", "--db", app.config["DB"]])
    assert listed.exit_code == 0 and "running" in listed.output
    assert listed.output.rstrip().endswith(f"on {owner}")
    rows = CliRunner().invoke(main, ["runs", "--format", "json", "--db", app.config["DB"]])
    assert json.loads(rows.output)[0]["owner"] == owner


def test_api_json_is_utf8_not_escapes(client, auth):
    """The API writes Chinese as the CLI prints it; a `\\u` escape helps no one reading it."""
    resp = client.post("/api/runs", json={"agent": "貨到付款", "version": "v1"}, headers=auth)
    body = resp.get_data(as_text=True)
    assert resp.status_code in (400, 404) and "貨到付款" in body and "\\u" not in body


def test_pages_say_the_language_they_are_written_in(client):
    """The interface is English; the replies inside it carry their own lang."""
    page = client.get("/login").get_data(as_text=True)
    assert '<html lang="en">' in page
