"""``exam store copy`` into PostgreSQL, which cannot keep a NUL: a reply's NUL becomes U+FFFD
there, and every review decision still applies to the cells it applied to on SQLite."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from exam import review
from exam.cli.main import main
from exam.errors import StoreError
from exam.reports import compare, scorecard
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs
from exam.store import Store
from exam.store import copy as copy_mod
from exam.store.copy import copy_store
from tests.exam.conftest import History
from tests.exam.store.conftest import empty_postgres

# replies as an agent may send them: NUL, a genuine U+FFFD, CR LF, bidi overrides, line and
# paragraph separators, an astral character, combining marks, a long CJK text
ODD = {
    "A-01": "備註\x00",
    "A-02": "\x00\x00前\x00後\x00",
    "A-03": "已有\ufffd替代字元",
    "A-04": "行\r\n\u202e反向\u202c\u2028\u2029🦉e\u0301",
    "A-05": "長" * 3000 + "\x00",
}


def decided_history(tmp_path) -> History:
    """A SQLite store: v1 passes everything; v2's replies (odd texts) need a person, who
    decides A-01 fail and the rest pass; v2's A-06 (a plain pass) is spot-checked as a fail."""
    history = History(tmp_path)
    cases = [(c, "c", "major") for c in (*ODD, "A-06")]
    history.bank("A", cases)
    history.run("A", "v1", {c: "pp" for c, _, _ in cases})
    history.run("A", "v2", {**{c: "hh" for c in ODD}, "A-06": "p"}, texts={**ODD, "A-06": "\x00"})
    items = review.queue(regrade(history.store, select_runs(history.store)), sample=20, seed=1)
    for item in items:
        if item.spot_check and (item.case_no, item.versions) != ("A-06", ["v2"]):
            continue
        fail = item.case_no in ("A-01", "A-06")
        review.decide(history.store, item, "fail" if fail else "pass", "Mei",
                      "claims it shipped" if fail else "")
    return history


def reports(target: str) -> dict:
    s = Store(target)
    try:
        regraded = regrade(s, select_runs(s))
        return {"scorecard": scorecard.build(regraded),
                "compare": compare.build(regraded, "A", "v1", "v2"),
                "queue": [i.key for i in review.queue(regraded)]}
    finally:
        s.close()


def as_postgresql_keeps_it(report: dict) -> dict:
    """A SQLite report read with each NUL as U+FFFD (the one change the copy makes to a text):
    reply digests are made again from the texts as PostgreSQL keeps them."""
    text = json.dumps(report, ensure_ascii=False).replace("\\u0000", "\ufffd")
    out = json.loads(text)
    out["queue"] = sorted(out["queue"])
    return out


def test_every_decision_applies_to_the_same_cells_after_a_copy_to_postgresql(
        tmp_path, postgres_url):
    history = decided_history(tmp_path)
    before = reports(history.store.path)
    history.store.close()
    card = next(c for c in before["scorecard"]["scorecards"] if c["version"] == "v2")
    assert card["review_queue"] == 0 and card["reviewed"] == 11  # 5 questions twice, A-06 once
    assert card["verdicts"]["fail"] == 3  # A-01 twice and A-06, as decided
    url = empty_postgres(postgres_url)
    copy_store(history.store.path, url)
    after = reports(url)
    assert after["queue"] == []  # no decided reply comes back undecided
    assert after["compare"]["verdict"] == before["compare"]["verdict"]
    assert after == as_postgresql_keeps_it(before)


def test_the_copy_says_what_it_changed_on_the_way_to_postgresql(tmp_path, postgres_url):
    history = decided_history(tmp_path)
    history.store.close()
    url = empty_postgres(postgres_url)
    result = CliRunner().invoke(main, ["store", "copy", history.store.path, url])
    assert result.exit_code == 0, result.output
    notes = [line for line in result.output.splitlines() if "U+FFFD" in line]
    # v2's texts with NUL: A-01, A-02, A-05 twice, A-06 once (A-03, A-04 hold none)
    assert "cells: 7 text(s) held NUL, stored as U+FFFD" in notes
    # A-05's fact and forbidden (A-05's 3,000-character clause is past what a hit
    # reads, so its fact needs a person too since grader 2.3), A-06
    assert any(line.startswith("adjudications: 5 review decision(s) re-keyed") for line in notes)
    assert "every count and digest equal" in result.output.splitlines()[-1]


def test_a_decision_left_on_the_sqlite_digest_fails_the_copys_verification(
        tmp_path, postgres_url, monkeypatch):
    """The verification matches each decision to the cells it applies to on both sides, from
    the texts each side keeps: a copy that forgot to re-key one is refused, not reported equal."""
    history = decided_history(tmp_path)
    history.store.close()
    monkeypatch.setattr(copy_mod, "_rekeyed", lambda row, digests: row, raising=False)
    with pytest.raises(StoreError, match=r"adjudications: 5 review decision\(s\) no longer "
                                         r"apply to the cells they applied to"):
        copy_store(history.store.path, empty_postgres(postgres_url))


def test_two_decisions_that_postgresql_would_make_one_refuse_the_copy(tmp_path, postgres_url):
    """Replies that differ only by NUL against U+FFFD are one text on PostgreSQL: decided
    differently on SQLite, one of the two decisions would be lost."""
    history = History(tmp_path)
    history.bank("A", [("A-01", "c", "major")])
    history.run("A", "v1", {"A-01": "h"}, texts={"A-01": "x\x00"})
    history.run("A", "v2", {"A-01": "h"}, texts={"A-01": "x\ufffd"})
    for item, decision in zip(review.queue(regrade(history.store, select_runs(history.store))),
                              ("pass", "fail"), strict=True):
        review.decide(history.store, item, decision, "Mei", "no")
    history.store.close()
    with pytest.raises(StoreError, match=r"A A-01: two review decisions of forbidden\[0\] become one "
                                         r"on PostgreSQL"):
        copy_store(history.store.path, empty_postgres(postgres_url))


def test_a_decision_on_a_text_only_an_earlier_cell_holds_is_rekeyed_too(tmp_path, postgres_url):
    """A cell retried (`exam resume --retry-failed`) keeps its first text in earlier_cells:
    a decision keyed by that text's digest is re-keyed like any other (the copy writes the
    decisions after every table of texts)."""
    from exam.review import reply_digest
    from tests.exam.store.test_backends import cell, new_run

    path = str(tmp_path / "src.db")
    s = Store(path)
    try:
        run_id = new_run(s)
        s.record_cell(cell(run_id, "Q-01", status="http_error", text="半\x00截"), [])
        s.retire_failed_cells(run_id)  # the text now only in earlier_cells
        s.record_cell(cell(run_id, "Q-01"), [])
        s.add_adjudication(reply_digest=reply_digest("半\x00截"), check_name="*",
                           question_digest="q", rule_version="1", decision="fail", reason="",
                           reviewer="Mei", agent="T", case_no="Q-01")
        s.set_run_status(run_id, "done")
    finally:
        s.close()
    url = empty_postgres(postgres_url)
    tables = copy_store(path, url)
    assert next(t for t in tables if t.table == "adjudications").rekeyed == 1
    dst = Store(url)
    try:
        with dst.tx() as db:
            from sqlalchemy import text

            (digest,) = db.execute(text("SELECT reply_digest FROM adjudications")).one()
        assert digest == reply_digest("半\ufffd截")
    finally:
        dst.close()
