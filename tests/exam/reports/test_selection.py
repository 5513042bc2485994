"""Run selection is written once: the CLI, the API and the dashboard read the same runs.

Each surface is asked the same question; a spy on the re-grade (where every report starts)
records which runs it read. Unknown agents and versions give one message everywhere.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from exam.cli.main import main
from exam.pipeline.registry import Agent
from exam.pipeline.runner import queue_run
from exam.reports import regrade as regrade_module
from exam.reports import tallies
from exam.reports.selection import (
    SelectionError,
    compare_runs,
    latest_pair,
    report_runs,
    select_runs,
)
from exam.web.app import create_app

TOKEN = "selection-token"


@pytest.fixture
def stored(history):
    """A: v1 twice (one excluded), v2 twice (one still running), a queued v3; B: v1."""
    history.bank("A", [("Q-01", "c", "major"), ("Q-02", "c", "major")])
    history.bank("B", [("B-01", "c", "major")])
    ids = {"v1a": history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"}),
           "v1x": history.run("A", "v1", {"Q-01": "fff", "Q-02": "fff"}),
           "v2a": history.run("A", "v2", {"Q-01": "ppp", "Q-02": "fff"}),
           "v2b": history.run("A", "v2", {"Q-01": "pp", "Q-02": "ff"}),
           "b1": history.run("B", "v1", {"B-01": "ppp"})}
    history.store.set_excluded(ids["v1x"], "the agent was down")
    history.store.set_run_status(ids["v2b"], "running")  # unfinished: what arrived counts
    agent = Agent(name="A", url="http://127.0.0.1:9/x", bank=history.banks["A"])
    ids["v3q"] = queue_run(history.store, agent, "v3")  # queued: nothing arrived yet
    return history, ids


@pytest.fixture
def read(monkeypatch):
    """Every run list handed to a report's input (the re-grade, or discrimination's counts,
    which re-grade what they cannot count), as sorted run ids."""
    seen: list[list[int]] = []
    inside = []

    def spy(real):
        def reading(store, runs, **kw):
            if not inside:  # the counts re-grading the runs they cannot count: one read
                seen.append(sorted(r.id for r in runs))
            inside.append(1)
            try:
                return real(store, runs, **kw)
            finally:
                inside.pop()
        return reading

    monkeypatch.setattr(regrade_module, "regrade", spy(regrade_module.regrade))
    monkeypatch.setattr(tallies, "tallied", spy(tallies.tallied))
    return seen


@pytest.fixture
def surfaces(stored, tmp_path):
    history, _ = stored
    db = str(history.store.path)
    app = create_app({"API_TOKEN": TOKEN, "DB": db, "AGENTS": str(tmp_path / "none.yaml"),
                      "TESTING": True})
    api = app.test_client()
    page = app.test_client()
    form = page.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    page.post("/login", data={"token": TOKEN, "csrf_token": csrf})
    return db, api, page


def cli(db: str, *args: str):
    return CliRunner().invoke(main, [*args, "--db", db, "--format", "json"])


def ids_of(runs) -> list[int]:
    return sorted(r.id for r in runs)


def test_select_runs_leaves_out_queued_and_excluded_runs_and_keeps_every_run_of_a_label(stored):
    history, ids = stored
    assert ids_of(select_runs(history.store, "A")) == [ids["v1a"], ids["v2a"], ids["v2b"]]
    assert ids_of(select_runs(history.store, "A", "v2")) == [ids["v2a"], ids["v2b"]]
    # a run asked for by id is read as asked, excluded or not
    assert [r.id for r in select_runs(history.store, run_ids=[ids["v1x"]])] == [ids["v1x"]]


def test_compare_reads_every_version_of_the_agent(stored):
    history, ids = stored
    assert ids_of(compare_runs(history.store, "A", "v1", "v2")) == [
        ids["v1a"], ids["v2a"], ids["v2b"]]
    # the dashboard's default pair: the last two versions a report reads (v3 is only queued)
    assert latest_pair(history.store, "A") == ("v1", "v2")


def test_the_three_surfaces_compare_the_same_runs(stored, surfaces, read):
    _, ids = stored
    db, api, page = surfaces
    result = cli(db, "compare", "A", "v1", "v2", "--fail-on", "never")
    assert result.exit_code == 0, result.output
    by_cli = json.loads(result.output)
    by_api = api.get("/api/compare?agent=A&old=v1&new=v2",
                     headers={"Authorization": f"Bearer {TOKEN}"})
    assert by_api.status_code == 200
    assert page.get("/compare?agent=A&old=v1&new=v2").status_code == 200
    want = sorted([ids["v1a"], ids["v2a"], ids["v2b"]])
    # each reads the runs' counts (the walk's key) and their cells (v2b is running: no walk
    # is kept, so it is walked from every version's cells, which the compare reads too)
    assert len(read) >= 3 and all(r == want for r in read), read
    assert by_cli["old_run_ids"] == by_api.json["old_run_ids"] == [ids["v1a"]]
    assert by_cli["new_run_ids"] == by_api.json["new_run_ids"] == [ids["v2a"], ids["v2b"]]


def test_the_three_surfaces_score_and_discriminate_the_same_runs(stored, surfaces, read):
    _, ids = stored
    db, api, page = surfaces
    assert cli(db, "report", "scorecard", "--agent", "A", "--version", "v2").exit_code == 0
    assert page.get("/scorecard/A/v2").status_code == 200
    # the page also says the version's verdict: the compare's runs, as the compare page reads
    assert read == [[ids["v2a"], ids["v2b"]]] * 2 + [[ids["v1a"], ids["v2a"], ids["v2b"]]] * 2
    read.clear()
    assert cli(db, "report", "discrimination", "--agent", "A").exit_code == 0
    assert api.get("/api/discrimination?agent=A",
                   headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert page.get("/discrimination?agent=A").status_code == 200
    assert read == [[ids["v1a"], ids["v2a"], ids["v2b"]]] * 3


@pytest.mark.parametrize(("agent", "old", "new", "message"), [
    ("Z", "v1", "v2", "no stored runs match agent Z: start one with exam run AGENT --version LABEL"),
    ("A", "v1", "v9", "no stored run of A version 'v9' (versions: v1, v2)"),
    ("A", "v3", "v2", "no stored run of A version 'v3' (versions: v1, v2)"),  # only queued
])
def test_an_unknown_agent_or_version_is_the_same_error_everywhere(stored, surfaces, agent, old,
                                                                   new, message):
    history, _ = stored
    db, api, page = surfaces
    with pytest.raises(SelectionError) as caught:
        compare_runs(history.store, agent, old, new)
    assert str(caught.value) == message
    result = cli(db, "compare", agent, old, new)
    assert result.exit_code == 2
    assert message in result.output
    resp = api.get(f"/api/compare?agent={agent}&old={old}&new={new}",
                   headers={"Authorization": f"Bearer {TOKEN}"})
    assert (resp.status_code, resp.json["error"]) == (404, message)
    html = page.get(f"/compare?agent={agent}&old={old}&new={new}").get_data(as_text=True)
    assert message.replace("'", "&#39;") in html


def test_an_unknown_agent_has_no_scorecard_or_discrimination_anywhere(stored, surfaces):
    history, _ = stored
    db, api, page = surfaces
    message = "no stored runs match agent Z: start one with exam run AGENT --version LABEL"
    with pytest.raises(SelectionError, match=re.escape(message)):
        report_runs(history.store, "Z")
    result = cli(db, "report", "discrimination", "--agent", "Z")
    assert result.exit_code == 2 and message in result.output
    resp = api.get("/api/discrimination?agent=Z", headers={"Authorization": f"Bearer {TOKEN}"})
    assert (resp.status_code, resp.json["error"]) == (404, message)
    assert message in page.get("/discrimination?agent=Z").get_data(as_text=True)
    assert page.get("/scorecard/Z/v1").status_code == 404
    assert cli(db, "report", "scorecard", "--agent", "Z").exit_code == 2


def test_a_run_given_back_to_the_queue_after_it_started_is_read_as_unfinished(history):
    """A worker told to stop (or whose store went away) gives its run back to the queue: what
    arrived stays in the reports, and its verdict waits for the rest, instead of the version
    vanishing from every report until a worker claims the run again."""
    import time

    from exam.records import AttemptRow, CellRow

    history.bank("A", [("Q-01", "c", "major"), ("Q-02", "c", "major")])
    history.run("A", "v1", {"Q-01": "pp", "Q-02": "pp"})
    agent = Agent(name="A", url="http://127.0.0.1:9/x", bank=history.banks["A"])
    run_id = queue_run(history.store, agent, "v2", repeats=2)
    run = history.store.claim_run("worker-1")
    assert run.id == run_id
    digest = history.store.get_run(run_id).plan[0][1]
    history.store.record_cell(CellRow(run_id, "Q-01", 1, digest, "ok", "", "備貨中", None, False,
                                      None, 1, 2, 1000, 200.0, time.time()),
                              [AttemptRow(1, time.time(), 200, 1.0, "", "application/json",
                                          '{"answer": "備貨中"}', 10, False)])
    assert history.store.release_run(run)
    assert history.store.get_run(run_id).status == "queued"
    assert run_id in ids_of(select_runs(history.store, "A", "v2"))
    assert latest_pair(history.store, "A") == ("v1", "v2")
    result = cli(str(history.store.target), "compare", "A", "v1", "v2", "--fail-on", "never")
    assert result.exit_code == 0, result.output
    decision = json.loads(result.output)["decision"]
    assert decision["word"] == "incomplete", decision
    # a run queued and never started is still left out
    never = queue_run(history.store, agent, "v3")
    assert never not in ids_of(select_runs(history.store, "A"))
