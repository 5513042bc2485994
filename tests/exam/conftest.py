"""Stored replies made to order: a store whose cells pass or fail exactly as a test needs."""

from __future__ import annotations

import json
import time

import pytest

from exam.bank import load_bank
from exam.pipeline.registry import Agent
from exam.pipeline.runner import create_run
from exam.records import AttemptRow, CellRow
from exam.store import Store
from tests.fakes.line_api import FakeLineApi

PASS, FAIL = "答案：備貨中", "答案：已出貨"
# a double negation of the forbidden 已出貨: the grader cannot tell, so needs_human
HUMAN = "答案：備貨中，並非沒有已出貨的紀錄"


class History:
    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.store = Store(tmp_path / "exam.db")
        self.banks: dict[str, str] = {}

    def bank(self, agent: str, cases: list[tuple[str, str, str]]) -> str:
        """cases: (case_no, category, severity). Each expects 備貨中 and forbids 已出貨."""
        questions = [{"case_no": c, "category": cat, "severity": sev,
                      "input": {"question": f"{c}?"}, "expect_facts": ["備貨中"],
                      "expect_forbidden": ["已出貨"]} for c, cat, sev in cases]
        path = self.tmp / f"{agent}.json"
        path.write_text(json.dumps({"agent": agent, "questions": questions}, ensure_ascii=False),
                        encoding="utf-8")
        self.banks[agent] = str(path)
        return str(path)

    def run(self, agent: str, version: str, outcomes: dict[str, str], *,
            figures: dict[str, dict] | None = None, texts: dict[str, str] | None = None,
            errors: dict[str, str] | None = None, budget: dict[str, float] | None = None) -> int:
        """outcomes: case_no → p/f/h/t (pass, fail, needs_human, timeout), one per repeat;
        ``texts`` puts something before a reply's text, ``errors`` replaces a timeout's error;
        ``budget`` is the agent's (the run keeps it in its settings)."""
        repeats = max(len(v) for v in outcomes.values())
        a = Agent(name=agent, url="http://127.0.0.1:9/x", bank=self.banks[agent],
                  budget=budget or {})
        run_id = create_run(self.store, a, version, repeats=repeats, only=list(outcomes))
        digests = {i.case_no: i.digest for i in load_bank(self.banks[agent]).items}
        for case_no, letters in outcomes.items():
            for r, letter in enumerate(letters, 1):
                f = {"attempts": 1, "model_calls": 2, "tokens": 1000, "latency_ms": 200.0,
                     **(figures or {}).get(case_no, {})}
                status = "timeout" if letter == "t" else "ok"
                text = {"p": PASS, "f": FAIL, "h": HUMAN}.get(letter)
                if text is not None and texts and case_no in texts:
                    text = texts[case_no] + text
                body = None if text is None else json.dumps({"answer": text}, ensure_ascii=False)
                cell = CellRow(run_id, case_no, r, digests[case_no], status,
                               (errors or {}).get(case_no, "no reply within 60 s")
                               if letter == "t" else "", text, None, False,
                               None, f["attempts"], f["model_calls"], f["tokens"],
                               f["latency_ms"], time.time())
                self.store.record_cell(cell, [AttemptRow(1, time.time(), 200, 1.0, "",
                                                         "application/json", body, 10, False)])
        self.store.set_run_status(run_id, "done")
        return run_id


@pytest.fixture
def store(tmp_path):
    """An empty store of its own for the test."""
    s = Store(tmp_path / "exam.db")
    yield s
    s.close()


@pytest.fixture
def history(tmp_path):
    h = History(tmp_path)
    yield h
    h.store.close()


@pytest.fixture
def regressed(history):
    """W1 run as v1, then v2: Q-01 (critical) regresses, Q-02 is fixed; (history, v2's run id).
    What a notification about a change is tested on."""
    history.bank("W1", [("Q-01", "c", "critical"), ("Q-02", "c", "major")])
    history.run("W1", "v1", {"Q-01": "ppp", "Q-02": "fff"})
    return history, history.run("W1", "v2", {"Q-01": "fff", "Q-02": "ppp"})


@pytest.fixture
def fake_line():
    """A fake LINE Messaging API on 127.0.0.1 (the real SDK is pointed at it)."""
    with FakeLineApi() as fake:
        yield fake


@pytest.fixture(scope="module")
def notifications_made_together():
    """Every notification the module's tests add is made at one moment (its ``created_at``;
    delivered_at too), the module's first use of it, so that a send's share links, made as of
    the notification, are the same in every test of the module. A send redacts its links from
    a failure's message, and the pattern for a new link costs a second of CPU to compile
    (exam/redact.py keeps it for the same secrets): the same links, compiled once a module.
    Nothing these tests check depends on two notifications being made at different times."""
    from types import SimpleNamespace

    import exam.store.notifications as kept

    moment = time.time()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(kept, "time", SimpleNamespace(time=lambda: moment))
        yield moment
