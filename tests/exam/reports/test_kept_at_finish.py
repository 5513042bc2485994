"""What a run leaves kept when it finishes (exam/reports/kept.py): its graded cells with their
head and its agent's walk, so the overview's and the runs page's first view after it reads
what is kept and no cell; a failure there never costs the run."""

from __future__ import annotations

import logging

from exam.pipeline.runner import queue_run
from exam.pipeline.worker import work_once
from exam.reports import kinds
from exam.reports.inputs import SERVICE
from exam.reports.kept import keep_finished
from exam.reports.regrade import regrade
from exam.store import Store
from tests.exam.helpers import agent_for, registry_env, write_bank
from tests.exam.reports.test_grade_cache import select_runs
from tests.exam.reports.test_graded_runs import kept, small_history
from tests.exam.reports.test_overview_counts import no_cells
from tests.fakes.agent import FakeAgent


def test_a_run_kept_at_its_end_gives_a_first_view_that_reads_no_cell(tmp_path, monkeypatch):
    history = small_history(tmp_path)
    store = history.store
    run_id = history.run("A", "v3", {"A-01": "ppp", "A-02": "fh", "A-03": "pp"})
    assert keep_finished(store, run_id)
    assert set(kept(store)) == {r.id for r in select_runs(store)}
    with monkeypatch.context() as m:
        whole = no_cells(m)
        m.setattr(Store, "keep_changes", lambda *a: (_ for _ in ()).throw(
            AssertionError("the walk was made again")))
        first = kinds.build("overview", store, SERVICE)
        assert whole == []
    assert first == kinds.build("overview", store, SERVICE)
    # what is kept is what a fresh re-grade shows
    from exam.reports import overview as ov
    assert first == ov.build(regrade(store, select_runs(store), cache=False),
                             store.ship_records())


def test_a_worker_keeps_what_the_pages_read_when_a_run_is_done(tmp_path):
    store = Store(tmp_path / "exam.db")
    seen = []
    try:
        with FakeAgent() as fake:
            bank = write_bank(tmp_path, ["ok", "ok", "ok"])
            registry = registry_env(tmp_path, fake.url, bank, concurrency=1)["EXAM_AGENTS"]
            run_id = queue_run(store, agent_for(fake.url, bank), "v1")
            assert work_once(store, registry, after=lambda s, i: seen.append(
                (i, s.get_run(i).status, keep_finished(s, i)))) == run_id
        assert seen == [(run_id, "done", True)]
        assert set(kept(store)) == {run_id}
    finally:
        store.close()


def test_trouble_keeping_never_costs_the_run(tmp_path, monkeypatch, caplog):
    history = small_history(tmp_path)
    store = history.store
    run_id = max(r.id for r in select_runs(store))

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(kinds, "build", broken)
    with caplog.at_level(logging.ERROR):
        assert keep_finished(store, run_id) is False
    assert "could not be kept; the first view makes it" in caplog.text
    assert store.get_run(run_id).status == "done"


def test_the_pages_a_finished_runs_links_open_first_are_kept_for_every_process(tmp_path,
                                                                               monkeypatch):
    """Its version's scorecard (with its verdict) and the default compare, as pages and as the
    API answers them, and discrimination: a process that never built them shows them."""
    from exam.reports import answer_cache, compare, discrimination, scorecard
    from exam.web.app import create_app

    history = small_history(tmp_path)
    run_id = history.run("A", "v3", {"A-01": "ppp", "A-02": "fh", "A-03": "pp"})
    assert keep_finished(history.store, run_id)
    answer_cache.clear()  # a new process: only the store's answers

    def refuse(*args, **kwargs):
        raise AssertionError("built on the first view")

    for module in (scorecard, compare, discrimination):
        monkeypatch.setattr(module, "build", refuse)
    app = create_app({"API_TOKEN": "t-3e1f9", "DB": str(tmp_path / "exam.db"), "TESTING": True})
    client = app.test_client()
    auth = {"Authorization": "Bearer t-3e1f9"}
    try:
        for path in ("/scorecard/A/v3", "/compare?agent=A&new=v3", "/discrimination",
                     "/discrimination?agent=A", "/api/compare?agent=A&new=v3",
                     "/api/discrimination", "/api/agents/A/shipped",
                     f"/api/runs/{run_id}/scorecard"):
            resp = client.get(path, headers=auth)
            assert resp.status_code == 200, (path, resp.text[:300])
        assert "hold" in client.get("/scorecard/A/v3", headers=auth).text
    finally:
        answer_cache.clear()


def test_exam_store_keep_makes_what_the_pages_read_after_an_upgrade(tmp_path, monkeypatch):
    """An upgrade changes the code's digest: nothing kept holds. `exam store keep` makes it
    all again, so the first views after it build nothing."""
    from click.testing import CliRunner

    from exam.cli.main import main as cli
    from exam.grading import keys
    from exam.reports import answer_cache, compare, discrimination, scorecard

    history = small_history(tmp_path)
    db = str(tmp_path / "exam.db")
    history.store.close()
    monkeypatch.setattr(keys, "code_digest", lambda: "the new version")
    result = CliRunner().invoke(cli, ["store", "keep", "--db", db])
    assert result.exit_code == 0, result.output
    assert "kept what the pages read for 2 version(s) of 1 agent(s)" in result.output
    answer_cache.clear()

    def refuse(*args, **kwargs):
        raise AssertionError("built on the first view")

    for module in (scorecard, compare, discrimination):
        monkeypatch.setattr(module, "build", refuse)
    store = Store(db)
    try:
        report = kinds.build("overview", store, SERVICE)  # the walk is kept: no compare built
        assert [v["change"]["verdict"] for v in report["agents"][0]["versions"]][0] == "—"
        for version in ("v1", "v2"):
            answer_cache.page_answer(kinds.ask("scorecard", store, SERVICE, agent="A",
                                               version=version))
        answer_cache.page_answer(kinds.ask("compare", store, SERVICE, agent="A", old=None,
                                           new="v2"))
    finally:
        store.close()
        answer_cache.clear()
