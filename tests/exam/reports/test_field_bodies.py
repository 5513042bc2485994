"""Field checks read the body of each cell's last attempt: re-grading reads those bodies one
query per chunk of cells, not one per cell, with the grades unchanged. On both backends."""

from __future__ import annotations

import json
import math
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import event

from exam.bank import load_bank
from exam.grading import stored
from exam.pipeline.registry import Agent
from exam.pipeline.runner import create_run
from exam.records import AttemptRow, CellRow
from exam.reports import compare, graded_runs
from exam.reports import regrade as regrade_mod
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs
from exam.store import Store
from graders import grade

CHUNK = 20  # cells per query, small so a small store spans several chunks
REPEATS = 3 * CHUNK + 7
PASS, FAIL = {"answer": "答案：備貨中"}, {"answer": "答案：已出貨"}


def attempt(n: int, body, cut: bool = False) -> AttemptRow:
    text = body if isinstance(body, str) or body is None else json.dumps(body, ensure_ascii=False)
    return AttemptRow(n, time.time(), 200, 1.0, "", "application/json", text, 10, cut)


def variants(r: int) -> tuple[str, list[AttemptRow]]:
    """Each way a last attempt can read: (run status, attempts). The earlier attempt of a
    retried cell says the opposite, so reading any but the last shows."""
    match r % 6:
        case 0:
            return "ok", [attempt(1, PASS)]
        case 1:
            return "ok", [attempt(1, PASS), attempt(2, FAIL)]
        case 2:
            return "ok", [attempt(1, FAIL), attempt(2, PASS), attempt(3, PASS)]
        case 3:
            return "ok", [attempt(1, PASS), attempt(2, '{"answer": "答案：備', cut=True)]
        case 4:
            return "ok", [attempt(1, PASS), attempt(2, "<html>busy</html>")]
        case _:
            return "timeout", [attempt(1, None)]


def bank(tmp_path: Path, keywords: list[str]) -> str:
    path = tmp_path / "F.json"
    questions = [
        {"case_no": "F-01", "input": {"q": "A10302?"},
         "fields": {"answer": {"mode": "must_include", "keywords": keywords}}},
        {"case_no": "F-02", "input": {"q": "?"}, "expect_facts": ["備貨中"]},  # no fields
    ]
    path.write_text(json.dumps({"agent": "F", "questions": questions}, ensure_ascii=False),
                    encoding="utf-8")
    return str(path)


def record_run(store: Store, bank_path: str, version: str) -> int:
    agent = Agent(name="F", url="http://127.0.0.1:9/x", bank=bank_path)
    run_id = create_run(store, agent, version, repeats=REPEATS)
    digests = {i.case_no: i.digest for i in load_bank(bank_path).items}
    for case_no in digests:
        for r in range(1, REPEATS + 1):
            status, attempts = variants(r)
            text = None if status != "ok" else "答案：備貨中"
            store.record_cell(CellRow(run_id, case_no, r, digests[case_no], status,
                                      "" if status == "ok" else "no reply", text, None, False,
                                      None, len(attempts), 1, 100, 10.0, time.time()), attempts)
    store.set_run_status(run_id, "done")
    return run_id


@contextmanager
def attempt_reads(store: Store):
    """The statements that read the attempts table while inside."""
    seen: list[str] = []

    def spy(conn, cursor, statement, params, context, executemany):
        if "FROM attempts" in statement:
            seen.append(statement)

    event.listen(store._engine, "before_cursor_execute", spy)
    try:
        yield seen
    finally:
        event.remove(store._engine, "before_cursor_execute", spy)


def one_at_a_time(store: Store, cells) -> dict:
    """Each cell's verdict graded from its body read on its own (the reference)."""
    runs = {r.id: r for r in store.list_runs()}
    out = {}
    for c in cells:
        run = runs[c.run_id]
        item = {i.case_no: i for i in load_bank(run.bank_path).items}[c.case_no]
        raw = stored.last_json(store.attempts(c.run_id, c.case_no, c.repeat))
        out[(c.run_id, c.case_no, c.repeat)] = (
            grade(item.question, stored.cell_reply(run, c, raw, item)).verdict
            if c.run_status == "ok" else None)
    return out


@pytest.fixture
def chunked(monkeypatch):
    monkeypatch.setattr(stored, "BODY_CHUNK", CHUNK, raising=False)
    monkeypatch.setattr(graded_runs, "keep", lambda *args: None)  # every report re-grades


@pytest.mark.parametrize("cache", [False, True], ids=["afresh", "grade-cache"])
def test_regrade_reads_the_field_bodies_a_chunk_of_cells_at_a_time(store_url, tmp_path, chunked,
                                                                   cache):
    store = Store(store_url)
    try:
        run_id = record_run(store, bank(tmp_path, ["備貨中"]), "v1")
        runs = select_runs(store)
        if cache:
            regrade(store, runs)  # fills the cache: the reply keys still need each body
        with attempt_reads(store) as reads:
            got = regrade(store, runs, cache=cache)
        field_cells = sum(1 for r in range(1, REPEATS + 1) if variants(r)[0] == "ok")
        assert 0 < len(reads) <= math.ceil(field_cells / CHUNK), len(reads)
        verdicts = {(c.run_id, c.case_no, c.repeat): c.verdict for c in got.cells}
        assert verdicts == one_at_a_time(store, store.cells([run_id]))
        f01 = [verdicts[(run_id, "F-01", r)] for r in range(1, 7)]
        assert f01 == ["fail", "pass", "fail", "fail", None, "pass"]  # each last attempt read
    finally:
        store.close()


def test_the_parallel_probe_reads_its_sample_bodies_a_chunk_at_a_time(store_url, tmp_path,
                                                                      chunked, monkeypatch):
    monkeypatch.setattr(regrade_mod, "PARALLEL_MIN", 1)
    store = Store(store_url)
    try:
        record_run(store, bank(tmp_path, ["備貨中"]), "v1")
        runs = {r.id: r for r in select_runs(store)}
        items = {r.bank_path: {i.case_no: i for i in load_bank(r.bank_path).items}
                 for r in runs.values()}
        regrade(store, list(runs.values()))
        with attempt_reads(store) as reads:
            share = regrade_mod._cached_share(store, runs, items)
        assert share == 1.0
        # 4 windows of 64 cells; each window's field cells in chunks of CHUNK
        assert 0 < len(reads) <= regrade_mod.PROBE_WINDOWS * math.ceil(
            regrade_mod.PROBE_CELLS / CHUNK), len(reads)
    finally:
        store.close()


def test_a_changed_field_rubric_grades_the_old_bodies_a_chunk_at_a_time(store_url, tmp_path,
                                                                        chunked):
    """The rubric drift reading grades OLD's and NEW's replies again under OLD's question."""
    store = Store(store_url)
    try:
        path = bank(tmp_path, ["備貨中"])
        record_run(store, path, "v1")
        bank(tmp_path, ["出貨"])  # loosened: 已出貨 passes now
        record_run(store, path, "v2")
        regraded = regrade(store, select_runs(store))
        with attempt_reads(store) as reads:
            report = compare.build(regraded, "F", "v1", "v2")
        entries = report["decision"]["rubric_changed"]
        assert [e["case_no"] for e in entries] == ["F-01"], report["decision"]["reason"]
        field_cells = 2 * sum(1 for r in range(1, REPEATS + 1) if variants(r)[0] == "ok")
        assert 0 < len(reads) <= 2 * math.ceil(field_cells / 2 / CHUNK), len(reads)  # OLD, NEW
    finally:
        store.close()
