"""The API's report answers are kept per process (exam.reports.answer_cache); a kept answer is the
answer. After every kind of change a report can see, the answer given equals the one the
route builds with nothing kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exam import review
from exam.reports import answer_cache
from exam.reports.regrade import regrade
from exam.web.app import create_app
from graders import RULE_VERSIONS
from tests.exam.conftest import HUMAN, History
from tests.exam.reports.test_graded_runs import add_cell, small_history

TOKEN = "memo-token-81c2"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROUTES = ("/api/runs/1/scorecard", "/api/runs/2/scorecard", "/api/compare?agent=A&old=v1&new=v2",
          "/api/discrimination?agent=A", "/api/discrimination")


@pytest.fixture
def site(tmp_path):
    answer_cache.clear()
    history = small_history(tmp_path)
    app = create_app({"API_TOKEN": TOKEN, "DB": str(tmp_path / "exam.db"), "TESTING": True})
    yield history, app.test_client()
    answer_cache.clear()
    history.store.close()


def answers(client) -> dict[str, tuple[int, bytes]]:
    return {route: (resp.status_code, resp.data)
            for route in ROUTES for resp in [client.get(route, headers=AUTH)]}


def built_afresh(client) -> dict[str, tuple[int, bytes]]:
    answer_cache.clear()
    return answers(client)


def test_a_kept_answer_is_served_and_equals_a_built_one(site, monkeypatch):
    history, client = site
    first = answers(client)
    assert {status for status, _ in first.values()} == {200}
    built = []
    monkeypatch.setattr("exam.reports.scorecard.build",
                        lambda *a, **k: built.append(1) or pytest.fail("built again"))
    assert answers(client) == first  # every answer kept: nothing built
    assert built == []
    body = json.loads(first["/api/runs/1/scorecard"][1])
    assert body["scorecards"][0]["agent"] == "A"  # the JSON jsonify writes


def test_every_change_a_report_can_see_gives_the_answer_built_afresh(site, monkeypatch):
    history, client = site
    store = history.store
    seen = [answers(client)]
    assert {status for status, _ in seen[0].values()} == {200}

    def changed(*routes: str) -> None:
        """The answers now (with what was kept before the change) are those built afresh,
        and the routes named did change."""
        now = answers(client)
        assert now == built_afresh(client)
        for route in routes:
            assert now[route] != seen[-1][route], route
        seen.append(now)

    def some_changed() -> None:
        changed()
        assert seen[-1] != seen[-2]

    # the bank moves on: a rubric, then a category, then a bank-wide option
    path = Path(history.banks["A"])
    bank = json.loads(path.read_text(encoding="utf-8"))
    bank["questions"][0]["expect_facts"] = ["備貨"]
    path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    changed(*ROUTES)
    bank["questions"][1]["category"] = "renamed"
    path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    changed("/api/runs/1/scorecard", "/api/runs/2/scorecard")
    bank["options"] = {"fold_script": False}
    path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    changed()

    # a rule's version is bumped (the answers may read the same; they are built again)
    monkeypatch.setitem(RULE_VERSIONS, "forbidden", 99)
    changed()

    # a person decides on a needs_human reply, then on another
    runs = store.list_runs()
    items = review.queue(regrade(store, runs))
    assert len(items) >= 2
    review.decide(store, items[0], "pass", "Mei", "read it")
    some_changed()
    review.decide(store, items[1], "fail", "Mei", "says the opposite")
    some_changed()

    # a finished run's failed cells are retried: moved aside, then answered again
    first = min(r.id for r in runs)
    assert store.retire_failed_cells(first) >= 1
    changed("/api/runs/1/scorecard")
    add_cell(store, first, "A-02", 2, HUMAN)
    changed("/api/runs/1/scorecard")

    # a run is excluded: it leaves discrimination, and there is nothing left to compare
    store.set_excluded(first, "the agent was down")
    changed("/api/discrimination?agent=A", "/api/compare?agent=A&old=v1&new=v2")
    assert seen[-1]["/api/compare?agent=A&old=v1&new=v2"][0] == 404


def test_a_run_that_may_still_change_is_never_kept(tmp_path):
    answer_cache.clear()
    history = History(tmp_path)
    history.bank("A", [("A-01", "c1", "critical")])
    run_id = history.run("A", "v1", {"A-01": "p"})
    history.store.set_run_status(run_id, "running")
    app = create_app({"API_TOKEN": TOKEN, "DB": str(tmp_path / "exam.db"), "TESTING": True})
    client = app.test_client()
    assert client.get(f"/api/runs/{run_id}/scorecard", headers=AUTH).status_code == 200
    assert answer_cache.key(history.store, [history.store.get_run(run_id)], "scorecard") is None
    assert len(answer_cache._kept) == 0
    add_cell(history.store, run_id, "A-01", 2, HUMAN)
    card = client.get(f"/api/runs/{run_id}/scorecard", headers=AUTH).json["scorecards"][0]
    assert card["verdicts"] == {"pass": 1, "needs_human": 1, "fail": 0, "not_graded": 0}
    history.store.close()


def test_threads_asking_at_once_wait_for_the_one_making_it(site, monkeypatch):
    """Eight requests for a report nobody has made yet make it once, and all get it."""
    import threading

    from exam.reports import scorecard

    history, client = site
    real, made, started = scorecard.build, [], threading.Event()
    release = threading.Event()

    def slow_build(*args, **kwargs):
        made.append(1)
        started.set()
        assert release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(scorecard, "build", slow_build)
    keyed, all_keyed, real_key = [], threading.Event(), answer_cache.key

    def counted_key(*args, **kwargs):
        k = real_key(*args, **kwargs)
        keyed.append(1)
        if len(keyed) == 8:
            all_keyed.set()
        return k

    monkeypatch.setattr(answer_cache, "key", counted_key)
    out: list[bytes] = []
    app = client.application

    def ask() -> None:
        out.append(app.test_client().get("/api/runs/1/scorecard", headers=AUTH).data)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    # all eight have their key while the first is still making the report: without waiting
    # for it, each would make its own
    assert started.wait(30) and all_keyed.wait(30)
    release.set()
    for t in threads:
        t.join(30)
    assert len(out) == 8 and len(set(out)) == 1
    assert json.loads(out[0])["scorecards"][0]["agent"] == "A"
    assert len(made) == 1


def test_a_report_that_fails_to_be_made_is_made_again_next_time(site, monkeypatch):
    from exam.reports import scorecard

    history, client = site
    real = scorecard.build
    monkeypatch.setattr(scorecard, "build", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        client.application.test_client().get("/api/runs/1/scorecard", headers=AUTH)
    assert answer_cache._making == {} and len(answer_cache._kept) == 0
    monkeypatch.setattr(scorecard, "build", real)
    assert client.get("/api/runs/1/scorecard", headers=AUTH).status_code == 200


def test_an_answer_made_while_its_bank_changed_is_not_kept_under_the_old_key(site, monkeypatch):
    """The bank is edited after the key was read but before the report read it, then put
    back: the answer made from the edited bank must not be served for the original one."""
    from exam.reports import regrade as regrading

    history, client = site
    route = "/api/runs/1/scorecard"
    path = Path(history.banks["A"])
    original = path.read_text(encoding="utf-8")
    edited = json.loads(original)
    edited["questions"][0]["expect_facts"] = ["備貨"]
    real = regrading.regrade

    def edited_meanwhile(*args, **kwargs):  # the key is read; then the bank changes
        path.write_text(json.dumps(edited, ensure_ascii=False), encoding="utf-8")
        return real(*args, **kwargs)

    monkeypatch.setattr(regrading, "regrade", edited_meanwhile)
    made_from_edit = client.get(route, headers=AUTH).data
    monkeypatch.setattr(regrading, "regrade", real)
    path.write_text(original, encoding="utf-8")  # put back
    now = client.get(route, headers=AUTH).data
    answer_cache.clear()
    afresh = client.get(route, headers=AUTH).data
    assert made_from_edit != afresh  # the edit shows in the answer
    assert now == afresh


def test_what_is_kept_is_bounded_in_characters_too(site, monkeypatch):
    """Many large answers: the oldest used go first once the total would pass the bound."""
    history, client = site
    monkeypatch.setattr(answer_cache, "KEPT_TOTAL_CHARS", 1)  # at most the newest one
    answers(client)
    assert len(answer_cache._kept) == 1
    monkeypatch.setattr(answer_cache, "KEPT_TOTAL_CHARS", 10**9)
    answers(client)
    assert len(answer_cache._kept) == len(ROUTES)


def test_the_decisions_mark_changes_with_every_kind_of_change_to_them(store_url):
    """The mark the kept answers check stands for every decision: adding one, replacing one
    (the latest, which SQLite gives the same id again, and an earlier one) changes it."""
    from exam.store import Store

    store = Store(store_url)
    try:
        def decide(reply: str, decision: str) -> None:
            store.add_adjudication(reply_digest=reply, check_name="forbidden[0]",
                                   question_digest="q", rule_version="1", decision=decision,
                                   reason="", reviewer="amy", agent="W2", case_no="W2-01")

        def elsewhere(reply: str) -> None:  # a decision on another question
            store.add_adjudication(reply_digest=reply, check_name="forbidden[0]",
                                   question_digest="other", rule_version="1", decision="pass",
                                   reason="", reviewer="amy", agent="W3", case_no="W3-01")

        seen = [store.adjudications_mark()]
        of_q = [store.adjudications_mark(["q", "unasked"])]
        for step in (lambda: (decide("r1", "pass"), decide("r2", "pass")),
                     lambda: decide("r2", "fail"),  # the latest replaced: same count (and id)
                     lambda: decide("r1", "fail"),  # an earlier one replaced
                     lambda: decide("r3", "pass")):
            step()
            seen.append(store.adjudications_mark())
            of_q.append(store.adjudications_mark(["q", "unasked"]))
            elsewhere(f"e{len(seen)}")  # changes the whole mark, not the question's
            assert store.adjudications_mark(["q", "unasked"]) == of_q[-1]
            assert store.adjudications_mark() != seen[-1]
        assert len(set(seen)) == len(seen), seen
        assert len(set(of_q)) == len(of_q), of_q
        assert store.adjudications_mark([]) == store.adjudications_mark(["unasked"])
        assert [a["decision"] for a in store.adjudications()
                if a["question_digest"] == "q"] == ["fail", "fail", "pass"]
    finally:
        store.close()


def test_the_decisions_mark_changes_when_the_latest_is_replaced_at_the_same_time(store_url,
                                                                                 monkeypatch):
    """Two hosts whose clocks read the same (a clock that stands still here): the latest
    decision replaced by another keeps the count, the id (SQLite) and every time, and its
    answer (a pass become a fail, another reason) must still change the mark."""
    import exam.store.review as store_mod
    from exam.store import Store

    monkeypatch.setattr(store_mod.time, "time", lambda: 1_700_000_000.25)
    store = Store(store_url)
    try:
        def decide(decision: str, reason: str) -> None:
            store.add_adjudication(reply_digest="r1", check_name="forbidden[0]",
                                   question_digest="q", rule_version="1", decision=decision,
                                   reason=reason, reviewer="amy", agent="W2", case_no="W2-01")

        seen = []
        for decision, reason in (("pass", ""), ("fail", "claims a refund"),
                                 ("fail", "claims a refund twice")):
            decide(decision, reason)
            seen.append(store.adjudications_mark())
        assert len(set(seen)) == len(seen), seen
    finally:
        store.close()
