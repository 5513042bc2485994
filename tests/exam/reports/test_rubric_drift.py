"""A rubric changed since the baseline ran: cases the verdict tests in test_verdict.py leave."""

from __future__ import annotations

import json
from pathlib import Path

from exam.db.schema import run_banks
from exam.reports import compare
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs

CASES = [("Q-01", "c", "major"), ("Q-02", "c", "major")]


def _edit(path, change):
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    change(data)
    Path(path).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _budget(tokens):
    def change(data):
        data["questions"][0]["budget"] = {"tokens": tokens}
    return change


def _compare(history):
    return compare.build(regrade(history.store, select_runs(history.store)), "A", "v1", "v2")


def _forget_bank(history, run_id):
    """The run as a store from before schema 12 has it: no bank kept with it."""
    with history.store.tx() as db:
        db.execute(run_banks.delete().where(run_banks.c.run_id == run_id))


def test_an_undecided_question_the_loosening_does_not_touch_stays_undecided(history):
    # v2 stays within the old budget (1,000 tokens against 1,500): the old budget reads the
    # question as today's does, 3/3 → 2/3, undecided either way; nothing rests on the
    # loosening, so the verdict is undecided (more repeats), not pending (a person)
    _edit(history.bank("A", CASES), _budget(1500))
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})
    _edit(history.banks["A"], _budget(6000))
    history.run("A", "v2", {"Q-01": "ppf", "Q-02": "ppp"})
    r = _compare(history)
    d = r["decision"]
    assert r["verdict"] == "undecided", d["reason"]
    assert d["pending"]["rubric_loosened"] == []
    assert "Q-01 budget.tokens 1500 → 6000 (looser)" in d["reason"]


def test_an_agent_budget_loosened_since_a_run_from_before_schema_12_is_not_silent(history):
    # the agent's budget is kept with every run's settings, schema 12 or not: v1 was made
    # under 1,500 tokens, v2 under 6,000 and needs 5,000; the questions did not change
    # (their cells' digests are today's), so the loosening is known and read as it is
    # for a run that kept its bank
    history.bank("A", CASES[:1])
    v1 = history.run("A", "v1", {"Q-01": "ppp"}, budget={"tokens": 1500})
    history.run("A", "v2", {"Q-01": "ppp"}, figures={"Q-01": {"tokens": 5000}},
                budget={"tokens": 6000})
    _forget_bank(history, v1)
    r = _compare(history)
    assert r["verdict"] == "pending", r["decision"]["reason"]
    assert "agent budget.tokens 1500 → 6000 (looser)" in r["decision"]["reason"]


def test_fold_script_switched_since_old_ran_is_named(history):
    # a bank-wide option the graders read (folding, on by default, turned off): every
    # question reads differently since v1 ran
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})
    _edit(history.banks["A"], lambda d: d.update(options={"fold_script": False}))
    history.run("A", "v2", {"Q-01": "ppp", "Q-02": "ppp"})
    d = _compare(history)["decision"]
    assert [e["case_no"] for e in d["rubric_changed"]] == ["Q-01", "Q-02"], d["reason"]
    assert "Q-01, Q-02: options.fold_script true → false (changed)" in d["reason"]


def test_one_change_to_every_question_is_said_once(history):
    # the registry's budget raised applies to every question: the verdict line says it once,
    # with the questions it touches, not once per question (200 questions: 200 times)
    cases = [(f"Q-{i:02d}", "c", "major") for i in range(1, 9)]
    history.bank("A", cases)
    history.run("A", "v1", {c: "ppp" for c, _, _ in cases}, budget={"tokens": 1500})
    history.run("A", "v2", {c: "ppp" for c, _, _ in cases}, budget={"tokens": 6000})
    d = _compare(history)["decision"]
    assert len(d["rubric_changed"]) == 8
    assert d["reason"].count("agent budget.tokens 1500 → 6000 (looser)") == 1, d["reason"]
    assert ("rubric changed since v1 ran: Q-01, Q-02, Q-03, Q-04, Q-05 and 3 more: agent "
            "budget.tokens 1500 → 6000 (looser)") in d["reason"]


def _loosen_words(data):
    # today's rubric asks only for "答案" and forbids nothing: the old one asked for 備貨中
    # and forbade 已出貨
    q = data["questions"][0]
    q["expect_facts"], q["expect_forbidden"] = ["答案"], []


def _add_fact(data):
    data["questions"][0]["expect_facts"] = ["備貨中", "預計"]  # stricter: v1 never said 預計


def _changed(history, change, v2):
    """v1 3/3 on one question, the bank then edited by ``change``, v2 answering ``v2``."""
    history.bank("A", CASES[:1])
    history.run("A", "v1", {"Q-01": "ppp"})
    _edit(history.banks["A"], change)
    history.run("A", "v2", {"Q-01": v2})
    return _compare(history)


def test_a_fact_and_a_forbidden_phrase_loosened_with_the_change_are_read_under_the_old_rubric(
        history):
    # v2 says 已出貨 three times out of three, which v1's rubric forbade; the same change
    # dropped the phrase from the bank, so today's rubric passes both versions. Graded again
    # under the question v1 was made with, v2 is 0/3 against 3/3: the ship rests on the
    # loosening, and a person decides
    r = _changed(history, _loosen_words, "fff")
    d = r["decision"]
    assert r["verdict"] == "pending", d["reason"]
    assert d["pending"]["rubric_loosened"] == ["Q-01"]
    (entry,) = d["rubric_changed"]
    assert entry["under_old_rubric"] == {"new": "0/3", "old": "3/3", "word": "hold"}
    assert "expect_forbidden" in d["reason"] and "pending: the ship rests on" in d["reason"]


def test_a_loosened_rubric_the_new_version_still_meets_ships_and_says_so(history):
    # the same loosening, and v2 still answers as v1's rubric asked: no false alarm
    r = _changed(history, _loosen_words, "ppp")
    d = r["decision"]
    assert r["verdict"] == "ship", d["reason"]
    assert d["rubric_changed"][0]["under_old_rubric"]["new"] == "3/3"
    assert "rubric changed since v1 ran: Q-01" in d["reason"]


def test_an_old_question_that_no_longer_parses_is_named_not_read_as_a_grade(history):
    # a bank kept by an older agent-exam whose question today's parser refuses: the change is
    # named, and why it was not graded again; nothing is made up for it
    history.bank("A", CASES[:1])
    v1 = history.run("A", "v1", {"Q-01": "ppp"})
    with history.store.tx() as db:
        row = db.execute(run_banks.select().where(run_banks.c.run_id == v1)).one()
        kept = json.loads(row.questions)
        kept["questions"]["Q-01"]["expect_facts"] = "備貨中"  # not a list: refused today
        db.execute(run_banks.update().where(run_banks.c.run_id == v1)
                   .values(questions=json.dumps(kept, ensure_ascii=False)))
    history.run("A", "v2", {"Q-01": "ppp"})
    d = _compare(history)["decision"]
    (entry,) = d["rubric_changed"]
    assert "expect_facts" in entry["not_regraded"]
    assert "under_old_rubric" not in entry


def test_a_tightened_rubric_that_hides_a_regression_is_pending_and_says_changed(history):
    # a fact added (stricter) that v1 never said: today's rubric fails both versions (0/3 →
    # 0/3, a ship), while v2 now says 已出貨, which v1's rubric forbade: under v1's rubric v2
    # is 0/3 against 3/3. The ship rests on the change; it was not a loosening, and the line
    # says "changed"
    r = _changed(history, _add_fact, "fff")
    d = r["decision"]
    assert r["verdict"] == "pending", d["reason"]
    assert d["pending"]["rubric_loosened"] == ["Q-01"]
    assert "loosened" not in d["reason"]
    assert "the ship rests on a rubric changed since v1 ran" in d["reason"]
    assert "Q-01 expect_facts" in d["reason"] and "(stricter)" in d["reason"]


def test_a_tightened_rubric_the_new_version_still_meets_ships(history):
    # the same fact added, and v2 answers as v1 did: no false alarm from a stricter rubric
    r = _changed(history, _add_fact, "ppp")
    assert r["verdict"] == "ship", r["decision"]["reason"]
    assert r["decision"]["pending"]["rubric_loosened"] == []


def test_a_question_whose_input_changed_is_not_graded_again_under_the_old_one(history):
    # the question was rewritten: a new input, and the facts and forbidden phrases for it. v2's
    # replies answer the new input; graded under v1's question (another question's facts) they
    # failed 0/3 against 3/3 and the verdict was pending on a loosening that is not one
    history.bank("A", CASES[:1])
    history.run("A", "v1", {"Q-01": "ppp"})

    def rewrite(data):
        q = data["questions"][0]
        q["input"], q["expect_facts"], q["expect_forbidden"] = {"question": "訂單?"}, ["答案"], []
    _edit(history.banks["A"], rewrite)
    history.run("A", "v2", {"Q-01": "fff"})
    r = _compare(history)
    d = r["decision"]
    assert r["verdict"] == "ship", d["reason"]
    (entry,) = d["rubric_changed"]
    assert "under_old_rubric" not in entry
    assert "input changed" in entry["not_regraded"]
    assert "input {" in d["reason"]


def test_new_replies_the_old_rubric_leaves_to_a_person_are_pending(history):
    # v2 double-negates 已出貨 (並非沒有已出貨的紀錄), which v1's rubric forbade; the same change
    # dropped the phrase, so today's rubric passes it. Under v1's rubric the replies need a
    # person: 0/0 answered read "same" and the change shipped
    history.bank("A", CASES[:1])
    history.run("A", "v1", {"Q-01": "ppp"})
    _edit(history.banks["A"], lambda d: d["questions"][0].update(expect_forbidden=[]))
    history.run("A", "v2", {"Q-01": "hhh"})
    r = _compare(history)
    d = r["decision"]
    assert r["verdict"] == "pending", d["reason"]
    assert d["pending"]["rubric_loosened"] == ["Q-01"]
    (entry,) = d["rubric_changed"]
    assert entry["under_old_rubric"]["word"] == "pending"
    assert "v2 is 0/0, 3 left to a person (v1 3/3: pending)" in d["reason"]


def test_a_reply_a_person_decided_under_todays_rubric_is_not_asked_again(history):
    # the fact got an alternative (looser), the forbidden phrase did not change: v2's
    # ambiguous replies are ambiguous under either rubric, and a person passed them under
    # today's; v1's rubric leaves the same check to a person, already decided
    from exam import review

    history.bank("A", CASES[:1])
    history.run("A", "v1", {"Q-01": "ppp"})
    _edit(history.banks["A"], lambda d: d["questions"][0].update(expect_facts=["備貨中|有貨"]))
    history.run("A", "v2", {"Q-01": "hhh"})
    assert _compare(history)["verdict"] == "pending"
    (item,) = review.queue(regrade(history.store, select_runs(history.store)), "A", "v2")
    review.decide(history.store, item, "pass", "tester")
    r = _compare(history)
    assert r["verdict"] == "ship", r["decision"]["reason"]
    assert r["decision"]["rubric_changed"][0]["under_old_rubric"]["new"] == "3/3"


def test_a_pending_for_review_also_names_the_ship_resting_on_a_loosening(history):
    # Q-02 waits for a person today, Q-01 rests on a forbidden phrase dropped: the line said
    # only "run exam review", and after the review the verdict was still pending
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp"})
    _edit(history.banks["A"], _loosen_words)
    history.run("A", "v2", {"Q-01": "fff", "Q-02": "hhh"})
    r = _compare(history)
    d = r["decision"]
    assert r["verdict"] == "pending", d["reason"]
    assert d["pending"]["rubric_loosened"] == ["Q-01"]
    assert "exam review" in d["reason"]
    assert "also the ship rests on a rubric changed since v1 ran: Q-01" in d["reason"], \
        d["reason"]
