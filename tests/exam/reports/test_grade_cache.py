"""The grade cache: reports read stored grades and grade only what is new or invalidated.

Correctness first: on seeded random stores, the cached grades equal fresh ones (``cache=False``)
after bank edits, bank option changes, rule-version bumps with a changed rule, and review
decisions, with and without the graded runs kept on top of it (tests/exam/reports/
test_graded_runs.py tests those on their own); the parallel path reads and fills the same cache
and still equals the serial one.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
from dataclasses import fields, replace
from pathlib import Path

import pytest

from exam import review
from exam.bank import load_bank
from exam.grading import keys as grade_keys
from exam.grading.keys import question_key, reply_key, rules_key
from exam.reports import graded_runs
from exam.reports import regrade as regrade_mod
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs
from exam.store import Store
from graders import RULE_VERSIONS, Reply, Step
from graders import checks as grader_checks
from tests.exam.conftest import History


def random_history(tmp_path, seed: int) -> History:
    """Agents, versions, repeats; passes, fails, needs_human, timeouts; usage figures that
    sometimes break a budget (the question's or the agent's); repeated identical replies."""
    rng = random.Random(seed)
    history = History(tmp_path)
    for agent in ("A", "B")[: rng.randint(1, 2)]:
        cases = [(f"{agent}-{i:02d}", rng.choice(["c1", "c2"]), rng.choice(["critical", "major"]))
                 for i in range(1, rng.randint(5, 10))]
        path = Path(history.bank(agent, cases))
        bank = json.loads(path.read_text(encoding="utf-8"))
        for q in bank["questions"]:
            if rng.random() < 0.3:
                q["budget"] = {"tokens": rng.choice([900, 1500])}
        path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
        for version in ("v1", "v2", "v3")[: rng.randint(1, 3)]:
            repeats = rng.randint(1, 4)
            figures = {c: {"tokens": rng.choice([800, 1000, 2000]),
                           "latency_ms": rng.choice([200.0, 200.5, 9000.0])}
                       for c, *_ in cases if rng.random() < 0.5}
            texts = {c: rng.choice(["", "您好，", "查詢結果："]) for c, *_ in cases}
            budget = rng.choice([{}, {"latency_ms": 5000}, {"tokens": 1200}])
            history.run(agent, version, {c: "".join(rng.choices("pppffhht", k=repeats))
                                         for c, *_ in cases},
                        figures=figures, texts=texts, budget=budget)
    return history


def edit_banks(history: History, rng: random.Random) -> None:
    """The bank moves on: a rubric changes, a question goes, a budget moves, an ungraded
    field changes (no re-grade needed), and sometimes a bank option (fold_script)."""
    for path in map(Path, history.banks.values()):
        bank = json.loads(path.read_text(encoding="utf-8"))
        qs = bank["questions"]
        qs[0]["expect_facts"] = ["備貨"]
        qs[1]["expect_forbidden"] = ["已出貨", "沒有"]
        qs[-1]["budget"] = {"tokens": rng.choice([500, 5000])}
        qs[-2]["notes"] = "reworded"
        if len(qs) > 3:
            del qs[2]
        if rng.random() < 0.5:
            bank["options"] = {"fold_script": True}
        path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")


def assert_same(cached, fresh) -> None:
    assert cached.cells == fresh.cells
    assert cached.removed == fresh.removed
    assert cached.missing_banks == fresh.missing_banks
    assert cached.bank_digests() == fresh.bank_digests()


def count_grades(monkeypatch) -> list[int]:
    calls = [0]
    original = regrade_mod.grade

    def counting(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(regrade_mod, "grade", counting)
    return calls


def cache_rows(store: Store) -> int:
    return sum(store.grade_cache_counts().values())


def without_kept_runs(monkeypatch) -> None:
    """Only the grade cache: no graded run is kept, so none is read."""
    monkeypatch.setattr(graded_runs, "keep", lambda *args: None)


@pytest.mark.parametrize("kept", [True, False], ids=["kept-runs", "grade-cache-only"])
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_cached_grades_equal_fresh_ones_through_edits_bumps_and_reviews(tmp_path, monkeypatch,
                                                                        seed, kept):
    if not kept:
        without_kept_runs(monkeypatch)
    rng = random.Random(seed * 101)
    history = random_history(tmp_path, seed)
    store, runs = history.store, select_runs(history.store)
    ok_cells = sum(1 for c in store.cells([r.id for r in runs]) if c.run_status == "ok")

    cold = regrade(store, runs)  # fills the cache
    assert_same(cold, regrade(store, runs, cache=False))
    assert 0 < cache_rows(store) <= ok_cells  # identical replies share a row
    calls = count_grades(monkeypatch)
    assert_same(regrade(store, runs), cold)
    assert calls[0] == 0  # everything came from the cache

    # bank edits: only the questions whose rubric (or options) changed are graded again
    edit_banks(history, rng)
    edited = regrade(store, runs)
    assert calls[0] > 0
    assert_same(edited, regrade(store, runs, cache=False))
    assert any(c.changed for c in edited.cells) and edited.removed
    calls[0] = 0
    assert_same(regrade(store, runs), edited)
    assert calls[0] == 0

    # a rule changes, and its version is bumped with it: every cached grade is stale
    original = grader_checks.check_forbidden

    def stricter(*args, **kwargs):
        result = original(*args, **kwargs)
        if result.outcome == "needs_human":
            return replace(result, outcome="fail", evidence="a negation is a claim now")
        return result

    before = RULE_VERSIONS["forbidden"]
    monkeypatch.setattr(grader_checks, "check_forbidden", stricter)
    monkeypatch.setitem(RULE_VERSIONS, "forbidden", 99)
    bumped = regrade(store, runs)
    assert calls[0] > 0
    assert_same(bumped, regrade(store, runs, cache=False))
    if any(c.verdict == "needs_human" for c in edited.cells):
        assert [c.verdict for c in bumped.cells] != [c.verdict for c in edited.cells]

    # a person's decisions are applied on top of cached grades, exactly as on fresh ones
    for item in review.queue(bumped)[:2]:
        review.decide(store, item, rng.choice(["pass", "fail"]), "Mei", "read it")
    calls[0] = 0
    reviewed = regrade(store, runs)
    assert calls[0] == 0  # a decision changes no cached grade
    assert_same(reviewed, regrade(store, runs, cache=False))
    # the cache holds grades before review: none of its rows says what a person decided
    assert all(c.reviewed is False for c in regrade_mod._graded(
        store, {r.id: r for r in runs},
        {p: b.by_case() for p, b in reviewed.banks.items()}, store.cells([r.id for r in runs]))[0])

    # the rule version drops back (a rollback): the older rows are read again, still equal
    monkeypatch.setattr(grader_checks, "check_forbidden", original)
    monkeypatch.setitem(RULE_VERSIONS, "forbidden", before)
    calls[0] = 0
    back = regrade(store, runs)
    assert calls[0] == 0
    assert_same(back, regrade(store, runs, cache=False))
    assert calls[0] == sum(1 for c in reviewed.cells if c.run_status == "ok")  # the fresh one


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_parallel_path_reads_and_fills_the_cache_and_equals_the_serial_one(
        tmp_path, monkeypatch, seed, forced_parallel):
    without_kept_runs(monkeypatch)
    history = random_history(tmp_path, seed)
    store, runs = history.store, select_runs(history.store)
    for item in review.queue(regrade(store, runs, cache=False))[:1]:
        review.decide(store, item, "pass", "Mei", "a disclaimer")
    fresh = regrade(store, runs, cache=False)
    assert cache_rows(store) == 0

    took_parallel = forced_parallel
    cold = regrade(store, runs, parallel=True)  # the child processes fill the cache
    filled = cache_rows(store)
    assert filled > 0
    # with every grade cached there is nothing to share out: this process reads them, a few
    # rowids at a time
    monkeypatch.setattr(regrade_mod, "CHUNK_CELLS", 7)
    served = regrade(store, runs, parallel=True)
    assert took_parallel == [True]
    # the child processes read the cache too (when a sample says much is left to grade)
    monkeypatch.setattr(regrade_mod, "_mostly_cached", lambda *a: False)
    warm = regrade(store, runs, parallel=True)
    assert took_parallel == [True, True]
    assert cache_rows(store) == filled
    for got in (cold, served, warm):
        assert [replace(c, text=None) for c in got.cells] == \
            [replace(c, text=None) for c in fresh.cells]
    # the serial path reads the rows the children wrote, and grades nothing
    calls = count_grades(monkeypatch)
    assert_same(regrade(store, runs), fresh)
    assert calls[0] == 0

    # the children really read the cache: a row changed behind their back shows up
    with sqlite3.connect(store.path) as con:
        con.execute("UPDATE grade_cache SET verdict='fail', checks='[]'")
    poisoned = regrade(store, runs, parallel=True)
    assert {c.verdict for c in poisoned.cells if c.run_status == "ok" and not c.reviewed} \
        == {"fail"}


def test_a_new_run_on_a_cached_store_takes_the_parallel_path_again(tmp_path, monkeypatch):
    without_kept_runs(monkeypatch)
    history = random_history(tmp_path, 4)
    store = history.store
    monkeypatch.setattr(regrade_mod, "PARALLEL_MIN", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    regrade(store, select_runs(store), parallel=True)
    by_id = {r.id: r for r in select_runs(store)}
    items = {p: load_bank(p).by_case() for p in history.banks.values()}
    assert regrade_mod._mostly_cached(store, by_id, items)
    agent = next(iter(history.banks))
    cases = list(items[history.banks[agent]])
    for version in ("v8", "v9"):  # most of the store is new now, and nothing of it is cached
        history.run(agent, version, {c: "pf" * 4 for c in cases},
                    texts={c: f"{version}：" for c in cases})
    runs = select_runs(store)
    by_id = {r.id: r for r in runs}
    assert not regrade_mod._mostly_cached(store, by_id, items)
    assert [replace(c, text=None) for c in regrade(store, runs, parallel=True).cells] == \
        [replace(c, text=None) for c in regrade(store, runs, cache=False).cells]


def test_every_field_of_a_reply_and_the_agent_budget_are_in_its_key():
    base = Reply(text="備貨中", status="ok", body={"a": [1]}, steps=(Step("search", {"q": 1}),),
                 attempts=1, model_calls=2, tokens=1000, latency_ms=200.0, run_status="ok",
                 tokens_estimated=False)
    other = {"text": "已出貨", "status": "error", "body": {"a": [2]},
             "steps": (Step("search", {"q": 2}),), "attempts": 2, "model_calls": 3,
             "tokens": 1001, "latency_ms": 200.5, "run_status": "timeout",
             "tokens_estimated": True}
    assert set(other) == {f.name for f in fields(Reply)}  # a new Reply field needs a line here
    key = reply_key(base, {})
    keys = {reply_key(replace(base, **{name: value}), {}) for name, value in other.items()}
    assert key not in keys and len(keys) == len(other)
    assert reply_key(replace(base, steps=None), {}) != reply_key(replace(base, steps=()), {})
    assert reply_key(base, {"tokens": 500}) != key
    assert reply_key(base, {}) == key  # and it is stable


def test_the_question_key_covers_the_rubric_and_the_bank_options(tmp_path):
    path = tmp_path / "Q.json"

    def key_of(**change):
        q = {"case_no": "Q-01", "input": {"q": "?"}, "expect_facts": ["備貨中"],
             "category": "c", "severity": "major", "notes": ""}
        bank = {"agent": "Q", "questions": [{**q, **change.get("q", {})}],
                **({"options": change["options"]} if "options" in change else {})}
        path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
        return question_key(load_bank(path).items[0])

    base = key_of()
    assert key_of(q={"notes": "reworded", "category": "d", "severity": "minor"}) == base
    assert key_of(q={"expect_facts": ["備貨"]}) != base
    assert key_of(q={"budget": {"tokens": 10}}) != base
    assert key_of(options={"fold_script": False}) != base


def test_two_processes_fill_the_cache_at_once_and_it_keeps_one_row_per_key(tmp_path):
    db = tmp_path / "exam.db"
    Store(db).close()
    rules = rules_key()
    rows = [(f"r{i}", "q", "pass", "[]") for i in range(300)]
    start = threading.Barrier(2)
    results: list[bool] = []

    def fill(order):
        store = Store(db)
        try:
            start.wait()
            results.append(store.cache_grades(rules, rows[::order]))
        finally:
            store.close()

    threads = [threading.Thread(target=fill, args=(o,)) for o in (1, -1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True, True]
    store = Store(db)
    try:
        assert store.grade_cache_counts() == {rules: 300}
        assert store.cached_grades(rules, [("r7", "q"), ("r7", "other")]) == {
            ("r7", "q"): ("pass", "[]")}
    finally:
        store.close()


def test_prune_drops_the_rows_of_other_rules_only(tmp_path, monkeypatch):
    without_kept_runs(monkeypatch)
    history = random_history(tmp_path, 1)
    store, runs = history.store, select_runs(history.store)
    regrade(store, runs)
    old_rules, old_rows = rules_key(), cache_rows(store)
    monkeypatch.setitem(RULE_VERSIONS, "fact", 99)
    regrade(store, runs)
    assert set(store.grade_cache_counts()) == {old_rules, rules_key()}
    assert store.prune_grade_cache(rules_key()) == old_rows
    assert set(store.grade_cache_counts()) == {rules_key()}
    calls = count_grades(monkeypatch)
    regrade(store, runs)
    assert calls[0] == 0


def test_exam_store_prune_keeps_todays_rules(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from exam.cli.main import main

    history = random_history(tmp_path, 2)
    store, runs = history.store, select_runs(history.store)
    with monkeypatch.context() as m:
        m.setitem(RULE_VERSIONS, "fact", 99)
        regrade(store, runs)  # rows under rules that are not today's
        old = cache_rows(store)
    regrade(store, runs)
    today = store.grade_cache_counts()[rules_key()]
    result = CliRunner().invoke(main, ["store", "prune", "--db", store.path],
                                catch_exceptions=False)
    assert result.exit_code == 0
    assert result.output == (f"dropped {old} cached grade(s) of older grader rules; "
                             f"kept {today} of today's\n")
    assert store.grade_cache_counts() == {rules_key(): today}


def test_a_store_that_cannot_be_written_still_gets_right_grades(tmp_path):
    history = random_history(tmp_path, 3)
    store, runs = history.store, select_runs(history.store)
    fresh = regrade(store, runs, cache=False)
    raw = store._conn.connection.dbapi_connection  # the SQLite connection under the store
    raw.execute("PRAGMA query_only=ON")  # SQLite refuses every write, as on a read-only file
    try:
        assert_same(regrade(store, runs), fresh)
    finally:
        raw.execute("PRAGMA query_only=OFF")
    assert cache_rows(store) == 0  # nothing kept, nothing wrong


def test_a_run_adds_the_grades_its_reports_read_and_they_equal_fresh_ones(store_url, tmp_path,
                                                                          monkeypatch):
    """The runner grades each reply as the store keeps it and adds that grade to the cache in
    the cell's own transaction: the scorecard that ends the run, and the reports after it, grade
    nothing, and read what grading afresh gives (a body field, steps, the agent's budget, a
    failing reply, a timeout and a reply that is not one all included)."""
    from exam.pipeline.runner import create_run, execute, job_for
    from tests.exam.helpers import agent_for, write_bank
    from tests.fakes.agent import FakeAgent

    bank = write_bank(tmp_path, ["ok", "gzip-chunked", "deflate", "slow", "html"],
                      fields={"answer": {"mode": "must_include", "keywords": ["備貨中"]}})
    data = json.loads(bank.read_text(encoding="utf-8"))
    data["questions"][2]["expect_forbidden"] = ["預計"]  # the agent's reply says it: a fail
    bank.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    store = Store(store_url)
    try:
        with FakeAgent() as fake:
            agent = agent_for(fake.url, bank, timeout_s=2.0, budget={"tokens": 1500})
            run_id = create_run(store, agent, "v1", repeats=2)
            assert execute(store, [job_for(store, run_id, agent)]) == {run_id: "done"}
        runs = store.list_runs()
        statuses = {c.run_status for c in store.cells([run_id])}
        assert {"ok", "timeout", "bad_reply"} <= statuses
        ok = sum(c.run_status == "ok" for c in store.cells([run_id]))
        # a row per ok reply, but two replies equal to the 0.1 ms of their latency (part of a
        # reply's key: a latency budget grades it) share one; each of the 3 ok questions adds
        # at least one. (>= 6 failed now and then: two repeats answered in the same 0.1 ms)
        assert 3 <= cache_rows(store) <= ok
        calls = count_grades(monkeypatch)
        read = regrade(store, runs)
        assert calls[0] == 0  # every grade came from the cache the run filled
        fresh = regrade(store, runs, cache=False)
        assert calls[0] == 6  # afresh: each ok reply (3 questions × 2 repeats) is graded
        assert_same(read, fresh)
        verdicts = {(c.case_no, c.verdict) for c in fresh.cells}
        assert ("T-01", "pass") in verdicts and ("T-03", "fail") in verdicts
        assert ("T-02", "pass") in verdicts  # the body field read from the stored attempt
    finally:
        store.close()


def test_cache_grades_keeps_every_character_and_the_first_row_of_a_key(store_url):
    """On both backends (PostgreSQL COPYs the rows in): checks JSON holding what a COPY must
    escape (tabs, backslashes, quotes, newlines as JSON writes them, emoji, CJK, \\N), read
    back as written; a key added again keeps its first row; the rows of two calls add up."""
    odd = json.dumps([["fact[0]", "fail", ["不提供\t貨到付款"], [], 'a\\b "q" \\N 🍎\n\r\x00']],
                     ensure_ascii=False)
    store = Store(store_url)
    try:
        rules = rules_key()
        first = [(f"r{i:03d}", f"q{i % 7}", "fail" if i % 3 else "pass", odd if i % 2 else "[]")
                 for i in range(250)]
        assert store.cache_grades(rules, first[::-1])
        again = [(r, q, "pass", "[\"changed\"]") for r, q, _, _ in first[:10]]
        more = [(f"s{i}", "q", "needs_human", odd) for i in range(5)]
        assert store.cache_grades(rules, again + more)
        got = store.cached_grades(rules, [(r, q) for r, q, *_ in first + more])
        assert got == {(r, q): (v, c) for r, q, v, c in first + more}
        assert store.grade_cache_counts() == {rules: 255}
    finally:
        store.close()


@pytest.mark.parametrize("kept", [True, False], ids=["kept-runs", "grade-cache-only"])
def test_a_rubric_reordered_is_graded_in_its_new_order(tmp_path, monkeypatch, kept):
    """The grader reads a question's fields and budget in the bank's order (its checks come
    in that order); the question's digest sorts them. Reordered, the cached grades still
    equal fresh ones, check for check."""
    if not kept:
        without_kept_runs(monkeypatch)
    history = History(tmp_path)
    path = Path(history.bank("A", [("A-01", "c", "major")]))
    bank = json.loads(path.read_text(encoding="utf-8"))
    q = bank["questions"][0]
    q["fields"] = {"answer": {"mode": "must_include", "keywords": ["備貨中"]},
                   "status": {"mode": "exact_set", "values": ["ok"]}}
    q["budget"] = {"tokens": 500, "latency_ms": 100}
    path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    history.run("A", "v1", {"A-01": "pf"})
    store, runs = history.store, select_runs(history.store)
    regrade(store, runs)  # fills the cache (and keeps the run)
    for key in ("fields", "budget"):
        q[key] = dict(reversed(q[key].items()))
    path.write_text(json.dumps(bank, ensure_ascii=False), encoding="utf-8")
    cached, fresh = regrade(store, runs), regrade(store, runs, cache=False)
    assert [c.name for c in fresh.cells[0].checks][2:] == [
        "field.status", "field.answer", "budget.latency_ms", "budget.tokens"]
    assert_same(cached, fresh)


def test_the_unicode_tables_the_grader_normalises_with_are_part_of_the_rules(monkeypatch):
    """NFKC and casefold come from Python's Unicode database (a newer Python maps more
    characters) and script folding from OpenCC's tables: grades cached under one are not
    today's under another."""
    import unicodedata

    before = rules_key()
    monkeypatch.setattr(unicodedata, "unidata_version", "99.0.0")
    assert rules_key() != before
    monkeypatch.undo()
    monkeypatch.setattr(grade_keys, "_fold_tables", lambda: "opencc 9.9")
    assert rules_key() != before
