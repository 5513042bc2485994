"""Human review: decisions stored against what was judged and re-applied on every re-grade."""

from __future__ import annotations

import csv
import json
import re

import pytest
from click.testing import CliRunner

from exam import review
from exam.cli.main import main
from exam.reports import scorecard
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs

CASES = [("Q-01", "c", "major"), ("Q-02", "c", "major")]


def cards(history):
    report = scorecard.build(regrade(history.store, select_runs(history.store)))
    return {c["version"]: c for c in report["scorecards"]}


def queue(history, **kw):
    return review.queue(regrade(history.store, select_runs(history.store)), **kw)


def cli(history, *args, input=None):
    return CliRunner().invoke(main, ["review", *args, "--db", str(history.tmp / "exam.db")],
                              input=input, catch_exceptions=False)


def test_one_decision_is_reused_across_versions_with_the_same_reply(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "hh", "Q-02": "p"})
    history.run("A", "v2", {"Q-01": "h", "Q-02": "p"})
    (item,) = queue(history)
    assert item.case_no == "Q-01" and len(item.cells) == 3 and item.versions == ["v1", "v2"]
    review.decide(history.store, item, "pass", "Mei", "a disclaimer, not a claim")
    c = cards(history)
    assert c["v1"]["verdicts"]["pass"] == 3 and c["v2"]["verdicts"]["pass"] == 2
    assert c["v1"]["review_queue"] == 0 and c["v1"]["reviewed"] == 2
    cell = next(x for x in c["v2"]["cases"] if x["case_no"] == "Q-01")["cells"][0]
    assert cell["reviewed"] is True
    assert "reviewed by Mei: pass (a disclaimer, not a claim)" in cell["checks"][1]["evidence"]
    assert queue(history) == []


def test_a_new_run_with_the_same_reply_does_not_come_back(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "h"})
    review.decide(history.store, queue(history)[0], "fail", "Mei", "claims it shipped")
    history.run("A", "v2", {"Q-01": "hhh"})  # the exam is run again after a change
    assert queue(history) == []
    assert cards(history)["v2"]["verdicts"]["fail"] == 3


def test_decision_is_dropped_when_the_question_changes(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "h"})
    review.decide(history.store, queue(history)[0], "pass", "Mei")
    assert queue(history) == []
    path = history.tmp / "A.json"
    data = json.loads(path.read_text())
    data["questions"][0]["expect_forbidden"] = ["已出貨|已寄出"]
    path.write_text(json.dumps(data, ensure_ascii=False))
    (item,) = queue(history)
    assert item.case_no == "Q-01"
    assert cards(history)["v1"]["verdicts"]["needs_human"] == 1


def test_decision_is_dropped_when_the_rule_changes(history, monkeypatch):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "h"})
    review.decide(history.store, queue(history)[0], "pass", "Mei")
    monkeypatch.setitem(review.RULE_VERSIONS, "forbidden", 99)
    assert len(queue(history)) == 1


def test_a_fail_needs_a_reason(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "h"})
    with pytest.raises(review.ExamError, match="a fail needs a reason"):
        review.decide(history.store, queue(history)[0], "fail", "Mei", " ")


def test_interactive_review(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "h", "Q-02": "h"})
    out = cli(history, "--reviewer", "Mei", input="f\nclaims it shipped\ns\n").output
    assert "[1/2] A Q-01 (needs_human) · versions v1" in out
    assert "? forbidden[0]: double_negation" in out and "«已出貨»" in out
    assert "1 decided; 1 still in the queue" in out
    assert [i.case_no for i in queue(history)] == ["Q-02"]


def test_blind_mode_hides_version_labels_and_shuffles(history):
    history.bank("A", [(f"Q-{i:02d}", "c", "major") for i in range(1, 13)])
    history.run("A", "secret-v7", {f"Q-{i:02d}": "h" for i in range(1, 13)})
    out = cli(history, "--blind", "--reviewer", "Mei", input="q\n").output
    assert "secret-v7" not in out and "versions" not in out
    order = re.compile(r"\[\d+/12\] A (Q-\d\d) \(")
    shown = [tuple(order.findall(cli(history, "--blind", "--reviewer", "Mei",
                                     input="s\n" * 12).output)) for _ in range(2)]
    listed = tuple(f"Q-{i:02d}" for i in range(1, 13))
    assert all(sorted(s) == list(listed) for s in shown)  # every item, once
    # two whole orders of 12: both equal to the listed order, or to each other, by chance
    # about once in 479 million runs
    assert shown[0] != listed or shown[1] != listed
    assert shown[0] != shown[1]
    path = history.tmp / "blind.csv"
    cli(history, "--blind", "--export", str(path))
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {r["version"] for r in rows} == {""}


def test_export_import_round_trip(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "h", "Q-02": "hp"})
    path = history.tmp / "batch.csv"
    assert "2 item(s) written" in cli(history, "--export", str(path)).output
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["case_no"] for r in rows] == ["Q-01", "Q-02"]
    assert rows[0]["reply"].startswith("答案：") and "已出貨" in rows[0]["evidence"]
    rows[0].update(decision="pass", reviewer="Lin", reason="")
    rows[1].update(decision="fail", reviewer="Lin", reason="asserts shipping")
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=review.EXPORT_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    assert "2 decision(s) stored, 0 row(s) left undecided" in cli(
        history, "--import", str(path)).output
    assert queue(history) == []
    c = cards(history)["v1"]
    assert c["verdicts"] == {"pass": 2, "needs_human": 0, "fail": 1, "not_graded": 0}


def test_import_rejects_a_bad_decision(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "h"})
    path = history.tmp / "batch.csv"
    cli(history, "--export", str(path))
    text = path.read_text(encoding="utf-8").replace(",1,,,", ",1,maybe,,")
    path.write_text(text, encoding="utf-8")
    result = cli(history, "--import", str(path))
    assert result.exit_code == 2
    assert "line 2: decision: expected pass, fail or skip, found 'maybe'" in result.output


def test_spot_check_sample_overrides_a_whole_verdict(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "p", "Q-02": "f"})
    items = queue(history, sample=5)
    assert {i.verdict for i in items} == {"pass", "fail"} and all(i.spot_check for i in items)
    passed = next(i for i in items if i.verdict == "pass")
    review.decide(history.store, passed, "fail", "Mei", "right words, wrong order")
    assert cards(history)["v1"]["verdicts"]["fail"] == 2


def test_dashboard_review_page(history):
    from exam.web.app import create_app

    history.bank("A", CASES)
    history.run("A", "v7", {"Q-01": "hh"})
    app = create_app({"LOCAL_DEV": True, "DB": str(history.tmp / "exam.db"), "TESTING": True})
    client = app.test_client()
    page = client.get("/review").get_data(as_text=True)
    assert "same reply in 2 cells" in page and "<mark>已出貨</mark>" in page and "v7" in page
    blind = client.get("/review?blind=1").get_data(as_text=True)
    # a random CSRF token holds "v7" now and then (about one page in 50): not the version
    assert "v7" not in re.sub(r'name="csrf_token" value="[^"]*"', "", blind)
    key = queue(history)[0].key
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    resp = client.post("/review", data={"key": key, "decision": "pass", "reviewer": "Mei",
                                        "csrf_token": token})
    assert resp.status_code == 302
    assert queue(history) == []


def test_a_reviewer_name_is_bounded_and_a_long_one_changes_nothing(history):
    """A 5,000-character name was stored with every decision and kept in the dashboard's
    session cookie, which browsers then dropped (the name and the message with it)."""
    from exam.web.app import create_app

    history.bank("A", CASES)
    history.run("A", "v7", {"Q-01": "hh"})
    (item,) = queue(history)
    with pytest.raises(review.ExamError, match="reviewer: a name of at most 80 characters, found 5000"):
        review.decide(history.store, item, "pass", "名" * 5000)
    app = create_app({"LOCAL_DEV": True, "DB": str(history.tmp / "exam.db"), "TESTING": True})
    client = app.test_client()
    token = re.search(r'name="csrf_token" value="([^"]+)"',
                      client.get("/review").get_data(as_text=True)).group(1)
    resp = client.post("/review", data={"key": item.key, "decision": "pass",
                                        "reviewer": "名" * 5000, "csrf_token": token},
                       follow_redirects=True)
    assert "reviewer: a name of at most 80 characters" in resp.get_data(as_text=True)
    assert len(queue(history)) == 1  # nothing decided
    with client.session_transaction() as session:
        assert "reviewer" not in session
    client.post("/review", data={"key": item.key, "decision": "pass", "reviewer": "Mei",
                                 "csrf_token": token})
    assert queue(history) == []


def test_a_decision_on_the_dashboard_keeps_the_agents_pages_again_behind_it(history,
                                                                           monkeypatch):
    """The decision changes the agent's walk and its newest version's answers: made again in
    the background right away, so the next overview and scorecard read what is kept and walk
    nothing; a keep asked again while one waits is one keep."""
    from exam.reports import answer_cache, baseline, kept
    from exam.web.app import create_app

    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "pp", "Q-02": "pp"})
    history.run("A", "v2", {"Q-01": "hh", "Q-02": "pp"})
    app = create_app({"LOCAL_DEV": True, "DB": str(history.tmp / "exam.db"), "TESTING": True})
    client = app.test_client()
    page = client.get("/review").get_data(as_text=True)
    client.get("/")
    (item,) = queue(history)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    resp = client.post("/review", data={"key": item.key, "decision": "pass", "reviewer": "Mei",
                                        "csrf_token": token})
    assert resp.status_code == 302
    kept.kept_behind()
    answer_cache.clear()  # this process's answers: the store's are what another reads

    def refuse(*args, **kwargs):
        raise AssertionError("walked again on the first view after the decision")

    monkeypatch.setattr(baseline, "walk", refuse)
    overview = client.get("/").get_data(as_text=True)
    assert 'data-verdict="ship"' in overview
    assert client.get("/scorecard/A/v2").status_code == 200

    # asked twice while the thread is busy: one keep follows
    done = []
    monkeypatch.setattr(kept, "keep_decided", lambda store, agent: done.append(agent) or True)
    gate = kept._behind.submit(lambda: None)
    gate.result()
    import threading

    held = threading.Event()
    kept._behind.submit(held.wait, 30)
    first = kept.keep_later(str(history.tmp / "exam.db"), "A")
    again = kept.keep_later(str(history.tmp / "exam.db"), "A")
    held.set()
    kept.kept_behind()
    assert first is not None and again is None and done == ["A"]


def test_exam_review_keeps_the_decided_agents_pages_before_it_ends(history, monkeypatch):
    """The CLI's decisions, like the dashboard's: the decided agent's walk is made again as the
    session ends, so the dashboard's next view walks nothing."""
    from exam.reports import baseline, kinds
    from exam.reports.inputs import SERVICE

    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "pp", "Q-02": "pp"})
    history.run("A", "v2", {"Q-01": "hh", "Q-02": "pp"})
    kinds.build("overview", history.store, SERVICE)  # kept before the decision
    out = cli(history, "--reviewer", "Mei", input="p\n\n")
    assert out.exit_code == 0 and "1 decided" in out.output

    def refuse(*args, **kwargs):
        raise AssertionError("walked again on the first view after the decision")

    monkeypatch.setattr(baseline, "walk", refuse)
    report = kinds.build("overview", history.store, SERVICE)
    assert report["agents"][0]["versions"][-1]["change"]["verdict"] == "ship"
