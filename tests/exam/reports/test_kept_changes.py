"""The overview's change verdicts kept in the store: read back while nothing the walk read has
changed, walked again after any change, never read under another key (exam/reports/changes.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from exam.db.schema import kept_changes
from exam.reports import baseline, changes
from exam.reports import overview as ov
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs
from exam.review import reply_digest, rule_version
from exam.store import Store
from tests.exam.conftest import HUMAN

CASES = [("Q-01", "c", "critical"), ("Q-02", "c", "major"), ("Q-03", "c", "minor")]


@pytest.fixture
def held(history):
    """v1 passes; v2 fails the critical Q-01 (hold); v3 passes again (ship against v1)."""
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "ppp"})
    history.run("A", "v2", {"Q-01": "fff", "Q-02": "ppp", "Q-03": "ppp"})
    history.run("A", "v3", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "ppp"})
    return history


def overview(store: Store) -> dict:
    runs = select_runs(store)
    return ov.build(regrade(store, runs, texts=False), store.ship_records())


def afresh(store: Store) -> dict:
    """The overview with nothing kept read: every walk made again."""
    real = Store.kept_changes
    Store.kept_changes = lambda self, agent, key: None  # type: ignore[method-assign]
    try:
        return overview(store)
    finally:
        Store.kept_changes = real  # type: ignore[method-assign]


def verdicts(report: dict) -> dict[str, str]:
    return {v["version"]: v["change"]["verdict"] for a in report["agents"] for v in a["versions"]}


class Walks:
    """Counts the walks made (each one 2 compares here)."""

    def __init__(self, monkeypatch):
        self.n = 0
        real = baseline.walk

        def counted(*args, **kwargs):
            self.n += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(baseline, "walk", counted)


def test_the_second_view_reads_the_kept_walk_and_shows_what_the_first_showed(held, monkeypatch):
    walks = Walks(monkeypatch)
    first = overview(held.store)
    assert walks.n == 1 and verdicts(first) == {"v1": "—", "v2": "hold", "v3": "ship"}
    second = overview(held.store)
    assert walks.n == 1, "the kept walk was not read"
    assert second == first == afresh(held.store)
    assert second["agents"][0]["shipped"]["version"] == "v3"


def test_the_text_kept_is_what_the_page_shows(held):
    """Read under its key: a row written under today's key is what the page shows (so the
    key, not the text, is what keeps a stale verdict off the page)."""
    report = overview(held.store)
    regraded = regrade(held.store, select_runs(held.store), texts=False)
    k = changes.key(regraded, "A", held.store.ship_records())
    kept = json.loads(held.store.kept_changes("A", k))
    assert kept["changes"]["v2"]["verdict"] == "hold"
    kept["changes"]["v2"]["verdict"] = "undecided"
    held.store.keep_changes("A", k, json.dumps(kept))
    assert verdicts(overview(held.store))["v2"] == "undecided"
    assert verdicts(report)["v2"] == "hold"


def test_a_row_kept_under_another_key_is_never_read(held):
    overview(held.store)
    held.store.keep_changes("A", "another key", json.dumps(
        {"changes": {"v2": {"previous": "v1", "verdict": "ship", "regressions": 0,
                            "fixes": 0}}, "shipped": None}))
    assert verdicts(overview(held.store))["v2"] == "hold"


def _ship_v2(history) -> None:
    history.store.add_ship_record("A", "v2", "amy", "hotfix accepted")


def _new_run(history) -> None:
    history.run("A", "v3", {"Q-01": "fff", "Q-02": "fff", "Q-03": "fff"})


def _exclude_v3(history) -> None:
    history.store.set_excluded(max(r.id for r in history.store.list_runs("A", "v3")), "bad")


def _edit_bank(history) -> None:
    path = Path(history.banks["A"])
    bank = json.loads(path.read_text(encoding="utf-8"))
    bank["questions"][0]["severity"] = "minor"  # Q-01's failure no longer critical
    path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")


@pytest.mark.parametrize("change", [_ship_v2, _new_run, _exclude_v3, _edit_bank])
def test_the_walk_is_made_again_after_each_change_it_reads(held, monkeypatch, change):
    walks = Walks(monkeypatch)
    before = overview(held.store)
    change(held)
    after = overview(held.store)
    assert walks.n == 2, "a kept walk was read after a change it depends on"
    assert after == afresh(held.store)
    assert after != before


def test_a_review_decision_walks_again(history, monkeypatch):
    """v2's Q-01 needs a person (hold: undecided or worse); a person's pass is read at once."""
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "ppp"})
    history.run("A", "v2", {"Q-01": "hhh", "Q-02": "ppp", "Q-03": "ppp"})
    walks = Walks(monkeypatch)
    before = overview(history.store)
    regraded = regrade(history.store, select_runs(history.store))
    cell = next(c for c in regraded.cells if c.version == "v2" and c.case_no == "Q-01")
    digest = next(i.digest for i in regraded.banks[history.banks["A"]].items
                  if i.case_no == "Q-01")
    for check in (c for c in cell.checks if c.outcome == "needs_human"):
        history.store.add_adjudication(
            reply_digest=reply_digest(cell.text), check_name=check.name,
            question_digest=digest, rule_version=rule_version(check.name),
            decision="pass", reason="reads right", reviewer="amy", agent="A", case_no="Q-01")
    assert cell.text.endswith(HUMAN)
    after = overview(history.store)
    assert walks.n == 2 and after == afresh(history.store)
    assert verdicts(before)["v2"] != verdicts(after)["v2"] == "ship"


def test_a_walk_over_a_run_still_running_is_not_kept(held):
    run_id = max(r.id for r in held.store.list_runs("A", "v3"))
    held.store.set_run_status(run_id, "running")
    regraded = regrade(held.store, select_runs(held.store), texts=False)
    assert changes.key(regraded, "A", []) is None
    assert verdicts(overview(held.store)) == verdicts(afresh(held.store))
    with held.store.tx() as db:
        assert db.execute(select(func.count()).select_from(kept_changes)).scalar() == 0


def _decide(store: Store, cell, digest: str, agent: str) -> None:
    for check in (c for c in cell.checks if c.outcome == "needs_human"):
        store.add_adjudication(
            reply_digest=reply_digest(cell.text), check_name=check.name,
            question_digest=digest, rule_version=rule_version(check.name),
            decision="pass", reason="reads right", reviewer="amy", agent=agent,
            case_no=cell.case_no)


def test_a_decision_walks_again_only_the_agents_whose_questions_it_was_made_on(
        history, monkeypatch, tmp_path):
    """A reviewer deciding A's replies leaves B's kept walk and answers as they are; C asks
    the very question A does (the same rubric: a decision applies to both), so C's walk is
    made again with A's, and both read the decision."""
    from exam.reports import answer_cache, kinds
    from exam.reports.inputs import SERVICE

    history.bank("A", CASES)
    history.bank("B", [("B-01", "c", "major")])
    shared = json.loads(Path(history.banks["A"]).read_text(encoding="utf-8"))
    shared["agent"] = "C"
    Path(tmp_path / "C.json").write_text(json.dumps(shared, ensure_ascii=False),
                                         encoding="utf-8")
    history.banks["C"] = str(tmp_path / "C.json")
    for agent, first in (("A", "Q-01"), ("B", "B-01"), ("C", "Q-01")):
        qs = [first] + (["Q-02", "Q-03"] if agent != "B" else [])
        history.run(agent, "v1", {q: "ppp" for q in qs})
        history.run(agent, "v2", {q: ("hhh" if q == first else "ppp") for q in qs})
    overview(history.store)  # every walk kept
    answer_cache.clear()
    b_answer = answer_cache.key(history.store, select_runs(history.store, "B"), "x")
    walked = []
    real = baseline.walk
    monkeypatch.setattr(baseline, "walk", lambda r, agent, *a, **k: (
        walked.append(agent), real(r, agent, *a, **k))[1])
    regraded = regrade(history.store, select_runs(history.store, "A"))
    cell = next(c for c in regraded.cells if c.version == "v2" and c.case_no == "Q-01")
    digest = next(i.digest for i in regraded.banks[history.banks["A"]].items
                  if i.case_no == "Q-01")
    _decide(history.store, cell, digest, "A")
    after = overview(history.store)
    assert sorted(walked) == ["A", "C"]
    assert after == afresh(history.store)
    said = {a["agent"]: a["versions"][-1]["change"]["verdict"] for a in after["agents"]}
    assert said["A"] == said["C"] == "ship" and said["B"] != "ship"
    assert answer_cache.key(history.store, select_runs(history.store, "B"), "x") == b_answer
    assert kinds.build("overview", history.store, SERVICE) == after
