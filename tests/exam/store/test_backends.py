"""The same store behaviour on SQLite and PostgreSQL: each test runs on both backends."""

from __future__ import annotations

import functools
import threading
import time

import pytest

from exam.db.schema import SCHEMA_VERSION
from exam.errors import StoreError
from exam.store import HEAD_PROBE, AttemptRow, CellRow, Store
from tests.backends import marked_newer

PLAN = [("Q-01", "d1"), ("Q-02", "d2"), ("Q-10", "d3")]


def cell(run_id: int, case_no: str, repeat: int = 1, status: str = "ok",
         text: str | None = "答案：備貨中") -> CellRow:
    return CellRow(run_id, case_no, repeat, "d", status, "" if status == "ok" else "no reply",
                   text, "ok", False, [{"tool": "search", "args": {"q": "A10302"}}], 1, 2, 1000,
                   210.5, 1764400000.25, tokens_estimated=True, usage_note="n8n execution 7")


def attempt(n: int = 1, body: str | None = '{"answer": "答案：備貨中"}') -> AttemptRow:
    return AttemptRow(n, 1764400000.0 + n, 200, 210.5, "", "application/json", body,
                      len(body or ""), False)


def new_run(store: Store, **kw) -> int:
    return store.create_run(agent="T", version=kw.pop("version", "v1"), bank_path="bank/T.json",
                            bank_digest="b" * 64, repeats=2, plan=PLAN,
                            settings={"header_names": ["X-Exam-Token"]}, **kw)


def test_a_new_store_is_at_todays_schema(store):
    assert store.schema_version() == SCHEMA_VERSION
    assert store.integrity_check() == "ok"


def test_runs_and_cells_read_back_as_written(store):
    run_id = new_run(store)
    other = new_run(store, version="v2", status="queued", source="api")
    assert store.record_cell(cell(run_id, "Q-10"), [attempt(1), attempt(2)],
                             ("1.0.0", "pass", [{"name": "fact[0]", "outcome": "pass"}]))
    assert store.record_cell(cell(run_id, "Q-02", text="零\x00寬"), [attempt(1, body="\x00")])
    assert store.record_cell(cell(run_id, "Q-01", 2, status="timeout", text=None), [])
    assert not store.record_cell(cell(run_id, "Q-10"), [attempt(1)])  # there already

    run = store.get_run(run_id)
    assert (run.agent, run.version, run.plan, run.repeats, run.total_cells, run.status) == (
        "T", "v1", tuple(PLAN), 2, 6, "running")
    assert run.settings == {"header_names": ["X-Exam-Token"]}
    assert [r.id for r in store.list_runs()] == [other, run_id]
    assert [r.id for r in store.list_runs("T", "v2")] == [other]
    assert [r.id for r in store.list_runs(limit=1)] == [other]
    got = store.cells([run_id])
    assert [(c.case_no, c.repeat) for c in got] == [("Q-01", 2), ("Q-02", 1), ("Q-10", 1)]
    assert got[2] == cell(run_id, "Q-10")  # every field, floats and flags included
    # PostgreSQL text cannot hold NUL: it keeps U+FFFD in its place, SQLite keeps the NUL
    assert got[1].text in ("零\x00寬", "零\ufffd寬")
    assert store.attempts(run_id, "Q-10", 1) == [attempt(1), attempt(2)]
    assert store.done_cells(run_id) == {("Q-01", 2), ("Q-02", 1), ("Q-10", 1)}
    assert store.count_cells(run_id) == 3 and store.count_cells(run_id, "timeout") == 1
    assert store.status_counts(run_id) == {"ok": 2, "timeout": 1}
    n, lo, hi = store.cell_rowids([run_id])
    assert (n, hi - lo) == (3, 2)
    assert [c.case_no for c in store.cells([run_id], (lo, lo + 2))] == ["Q-02", "Q-10"]


def test_attempts_read_back_as_written_whatever_they_hold(store):
    """PostgreSQL COPYs a batch's attempts in: its text format's own marks (\\N for none,
    backslashes, tabs, line ends) in a body or error must come back as they were sent."""
    run_id = new_run(store)
    odd = [AttemptRow(1, 1764400001.5, None, 30000.0, "timeout\tafter \\N\n30 s", None, None,
                      None, False),
           AttemptRow(2, 1764400002.0, 502, 0.25, "", "text/plain; charset=utf-8",
                      "\\N", 2, False),
           AttemptRow(3, 1764400003.0, 200, 12.0, "", "application/json",
                      '{"answer": "a\\tb\tc\r\nd\\\\e 答"}', 9_000_000, True)]
    assert store.record_cell(cell(run_id, "Q-01"), odd)
    assert store.attempts(run_id, "Q-01", 1) == odd


def test_retried_cells_are_kept_apart_and_run_again(store):
    run_id = new_run(store)
    store.record_cell(cell(run_id, "Q-01", status="timeout", text=None), [attempt(1)])
    store.record_cell(cell(run_id, "Q-02"), [attempt(1)])
    assert store.retire_failed_cells(run_id) == 1
    assert store.done_cells(run_id) == {("Q-02", 1)}
    (earlier,) = store.earlier_cells(run_id)
    assert (earlier["case_no"], earlier["run_status"]) == ("Q-01", "timeout")
    assert earlier["retried_at"] is not None
    assert store.record_cell(cell(run_id, "Q-01"), [attempt(1)])  # the live cell, once more


def test_run_status_and_exclusion(store):
    run_id = new_run(store)
    store.set_run_status(run_id, "done", "2 cell(s) hit a harness error")
    run = store.get_run(run_id)
    assert (run.status, run.error, run.shown_status) == ("done", "2 cell(s) hit a harness error",
                                                         "done")
    store.set_excluded(run_id, "the agent was down")
    assert store.get_run(run_id).excluded_reason == "the agent was down"
    store.set_excluded(run_id, None)
    assert store.get_run(run_id).excluded_reason is None
    with pytest.raises(StoreError, match="no run 999"):
        store.get_run(999)


def test_cached_grades(store):
    rows = [(f"r{i}", "q", "pass" if i % 2 else "fail", "[]") for i in range(1200)]
    assert store.cache_grades("rules-1", rows)
    assert store.cache_grades("rules-1", [("r0", "q", "pass", "[]")])  # kept, not replaced
    assert store.cache_grades("rules-0", [("r0", "q", "pass", "[]")])
    found = store.cached_grades("rules-1", [(f"r{i}", "q") for i in range(1300)])
    assert len(found) == 1200 and found[("r0", "q")] == ("fail", "[]")
    assert store.grade_cache_counts() == {"rules-0": 1, "rules-1": 1200}
    assert store.prune_grade_cache("rules-1") == 1
    assert store.grade_cache_counts() == {"rules-1": 1200}


def test_notifications(store):
    a = store.add_notification(batch="b1", channel="line", target="Cgroup", run_ids=[1, 2],
                               retry_key="k1", payload=[{"type": "text", "text": "T v1 ✓"}])
    b = store.add_notification(batch="b1", channel="line", target="Cgroup", run_ids=[3],
                               retry_key="k2", payload=[])
    store.update_notification(a, "failed", 2, "HTTP 500")
    store.update_notification(a, "delivered", 1)
    (na,) = store.notifications(status="delivered")
    assert (na["id"], na["attempts"], na["run_ids"], na["payload"]) == (
        a, 3, [1, 2], [{"type": "text", "text": "T v1 ✓"}])
    assert na["delivered_at"] is not None
    assert [n["id"] for n in store.notifications(batch="b1")] == [a, b]
    assert [n["id"] for n in store.notifications(ids=[b])] == [b]
    with pytest.raises(StoreError):  # one retry key, one push
        store.add_notification(batch="b2", channel="line", target="C", run_ids=[],
                               retry_key="k1", payload=[])


def test_adjudications_replace_the_earlier_decision(store):
    judged = dict(reply_digest="d" * 64, check_name="forbidden[0]", question_digest="q",
                  rule_version="1", agent="T", case_no="Q-01")
    store.add_adjudication(decision="fail", reason="", reviewer="Mei", **judged)
    store.add_adjudication(**{**judged, "check_name": "*"}, decision="pass", reason="",
                           reviewer="Mei")
    store.add_adjudication(decision="pass", reason="a disclaimer", reviewer="Ken", **judged)
    got = store.adjudications()
    assert [(a["check_name"], a["decision"], a["reviewer"]) for a in got] == [
        ("*", "pass", "Mei"), ("forbidden[0]", "pass", "Ken")]


def test_rebalance_snapshots(store):
    first = store.add_rebalance_snapshot("T", None, {"roles": {"Q-01": "guard"}})
    second = store.add_rebalance_snapshot("T", "2026-09-01", {"roles": {}})
    store.add_rebalance_snapshot("U", None, {})
    got = store.rebalance_snapshots("T")
    assert [(s["id"], s["since"], s["snapshot"]) for s in got] == [
        (first, None, {"roles": {"Q-01": "guard"}}), (second, "2026-09-01", {"roles": {}})]


def at_once(calls: list) -> list:
    """Run each call on its own thread, released together; their results in order."""
    start, out = threading.Barrier(len(calls)), [None] * len(calls)

    def go(i: int) -> None:
        start.wait()
        out[i] = calls[i]()

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_a_line_event_is_handled_once_across_connections(store_target):
    """Four service instances (four connections) receive the same redelivered event at once."""
    stores = [Store(store_target) for _ in range(4)]
    try:
        for n in range(10):
            seen = at_once([functools.partial(s.record_line_events,
                                              [(f"01EVENT{n}", "Message", "{}")], 60)
                            for s in stores])
            assert sorted(map(len, seen)) == [0, 0, 0, 1], n
        stores[0].add_group("Cgroup")
        stores[1].add_group("Cgroup")  # a second join event changes nothing
    finally:
        for s in stores:
            s.close()


def test_a_store_newer_than_this_code_is_refused(store_target, store):
    with marked_newer(store_target) as newer:
        with pytest.raises(StoreError, match=f"schema version {newer} is newer"):
            Store(store_target)


def test_a_claim_reads_the_schema_it_claims_under(store_target, store):
    """A worker opened the store and checked its schema; a migration lands before its next
    claim: the claim itself sees the newer schema and takes nothing (the old code never
    runs what a newer instance queued), and once the store is this code's again it claims."""
    from exam.errors import SchemaTooNew

    run_id = new_run(store, status="queued")
    with marked_newer(store_target) as newer:
        with pytest.raises(SchemaTooNew, match=f"schema version {newer} is newer"):
            store.claim_run("worker-a", 30)
        assert store.get_run(run_id).status == "queued"
    assert store.claim_run("worker-a", 30).id == run_id


def test_timestamps_keep_their_precision(store):
    run_id = new_run(store)
    before = time.time()
    store.set_run_status(run_id, "done")
    assert before <= store.get_run(run_id).finished_at <= time.time()  # 64-bit, sub-second


def test_a_urls_password_never_appears_in_a_message():
    with pytest.raises(StoreError) as caught:
        Store("postgresql://exam:s3cret-pw@127.0.0.1:1/exam")
    assert "s3cret-pw" not in str(caught.value)
    assert str(caught.value).startswith("postgresql://exam:***@127.0.0.1:1/exam: cannot open")


@pytest.mark.parametrize(("target", "message"), [
    # an unescaped '@': read as user:pass@host, the password's tail would be the host (and shown)
    ("postgresql://exam:s3cret@pw@127.0.0.1:1/exam",
     "postgresql://exam:***@127.0.0.1:1/exam: an '@' in the user name or password must be "
     "written %40"),
    ("postgresql://exam:s3cret-pw@127.0.0.1:port/exam",
     "postgresql://exam:***@127.0.0.1:port/exam: not a usable PostgreSQL URL"),
    # one slash short: not a SQLite file named "postgresql:/exam:s3cret-pw@…"
    ("postgresql:/exam:s3cret-pw@127.0.0.1/exam",
     "postgresql:/exam:***@127.0.0.1/exam: not a SQLite path nor a PostgreSQL URL"),
    ("mysql://exam:s3cret-pw@127.0.0.1/exam",
     "mysql://exam:***@127.0.0.1/exam: not a SQLite path nor a PostgreSQL URL"),
])
def test_a_malformed_url_is_one_message_without_its_password(tmp_path, monkeypatch, target,
                                                              message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError) as caught:
        Store(target)
    assert str(caught.value).startswith(message)
    assert "s3cret" not in str(caught.value) and "pw@" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # nothing created on the way


def test_a_line_event_is_handled_only_by_the_instance_holding_it(store_target):
    """An instance's hold that ran out and was claimed by another is no longer its own."""
    first, other = Store(store_target), Store(store_target)
    try:
        held = first.record_line_events([("01HOLD", "Message", "{}")], 0)["01HOLD"]
        ((_, _, theirs),) = other.claim_unhandled_line_events(60)
        assert first.hold_line_event("01HOLD", held, 60) is None  # taken over: not handled
        renewed = other.hold_line_event("01HOLD", theirs, 60)
        assert renewed is not None
        other.line_event_handled("01HOLD")
        assert other.hold_line_event("01HOLD", renewed, 60) is None  # handled: nothing to do
    finally:
        first.close()
        other.close()


def test_line_events_left_unhandled_are_claimed_by_one_instance_each(store_target):
    """Four instances look for events left by a dead one at once: each event goes to one."""
    stores = [Store(store_target) for _ in range(4)]
    try:
        ids = [f"01LEFT{n}" for n in range(12)]
        assert set(stores[0].record_line_events([(i, "Message", "{}") for i in ids], 0)) == set(ids)
        taken = at_once([functools.partial(s.claim_unhandled_line_events, 60, 5) for s in stores])
        claimed = [i for found in taken for i, _, _ in found]
        assert sorted(claimed) == sorted(ids)  # all taken, none twice
        assert all(s.claim_unhandled_line_events(60) == [] for s in stores)  # held now
        stores[0].line_event_handled(ids[0])
        assert stores[1].line_event_state(ids[0]) == "handled"
        assert stores[1].line_event_state(ids[1]) == "pending"
    finally:
        for s in stores:
            s.close()


def test_the_look_for_events_left_unhandled_reads_only_those(store_target):
    """Every service process looks every few seconds, and the table keeps every event ever
    received: the look's own query is planned on the partial index of unhandled events."""
    from sqlalchemy import event

    store = Store(store_target)
    seen: list[tuple[str, object]] = []
    try:
        store.record_line_events([(f"01OLD{n}", "Message", None) for n in range(200)], 0)
        for n in range(200):
            store.line_event_handled(f"01OLD{n}")
        store.record_line_events([("01LEFT", "Message", "{}")], 0)

        def capture(conn, cursor, statement, parameters, context, executemany):
            if "FROM line_events" in statement and "handled_at IS NULL" in statement:
                seen.append((statement, parameters))

        event.listen(store._engine, "before_cursor_execute", capture)
        assert [i for i, _, _ in store.claim_unhandled_line_events(60)] == ["01LEFT"]
        event.remove(store._engine, "before_cursor_execute", capture)
        ((statement, parameters),) = seen
        with store._engine.connect() as conn:
            if store.backend == "postgresql":
                conn.exec_driver_sql("ANALYZE line_events")
                conn.exec_driver_sql("SET enable_seqscan = off")  # a tiny table: ask, don't guess
                plan = conn.exec_driver_sql("EXPLAIN " + statement, parameters).fetchall()
            else:
                plan = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).fetchall()
        assert "line_events_unhandled" in " ".join(str(row) for row in plan), plan
    finally:
        store.close()


DAY = 86400.0


def line_rows(store: Store) -> dict[str, dict]:
    """Every recorded LINE event's row, by id, as the table holds it."""
    from sqlalchemy import select

    from exam.db.schema import line_events

    return {r.webhook_event_id: dict(r._mapping) for r in store._rows(select(line_events))}


def line_events_at(store: Store, **times: tuple[float | None, float | None]) -> None:
    """Events recorded (``{id: (received_at, handled_at)}``, None: not handled) as if at
    those times."""
    from sqlalchemy import update

    from exam.db.schema import line_events

    store.record_line_events([(i, "MessageEvent", '{"type": "message"}') for i in times], 60)
    with store.tx() as db:
        for event_id, (received, handled) in times.items():
            db.execute(update(line_events).where(line_events.c.webhook_event_id == event_id)
                       .values(received_at=received, handled_at=handled))


def test_a_handled_line_event_keeps_its_id_and_times_not_its_json(store):
    """The JSON (people's words, user ids) is only for handling an event again."""
    text = '{"type": "message", "message": {"text": "exam run W1 v3"}, "source": {"userId": "U1"}}'
    store.record_line_events([("01KEEP", "MessageEvent", text), ("01OPEN", "MessageEvent", text)],
                             60)
    received = line_rows(store)["01KEEP"]["received_at"]
    store.line_event_handled("01KEEP")
    row = line_rows(store)["01KEEP"]
    assert row["event"] is None
    assert row["type"] == "MessageEvent" and row["received_at"] == received
    assert row["handled_at"] is not None
    assert line_rows(store)["01OPEN"]["event"] == text  # not handled yet: kept to handle again
    assert store.line_event_state("01KEEP") == "handled"
    assert store.record_line_events([("01KEEP", "MessageEvent", text)], 60) == {}  # still a dup


def test_pruning_deletes_only_the_events_handled_before_the_cutoff(store):
    now = time.time()
    line_events_at(store, **{"01OLDDONE": (now - 41 * DAY, now - 40 * DAY),
                             "01EDGE": (now - 31 * DAY, now - 30 * DAY),  # at the cutoff: kept
                             "01NEWDONE": (now - 2 * DAY, now - DAY),
                             "01OLDOPEN": (now - 400 * DAY, None),  # never handled: never deleted
                             "01NEWOPEN": (now, None)})
    assert store.prune_line_events(now - 30 * DAY) == 1
    assert sorted(line_rows(store)) == ["01EDGE", "01NEWDONE", "01NEWOPEN", "01OLDOPEN"]
    assert store.prune_line_events(now - 30 * DAY) == 0
    assert store.prune_line_events(now + DAY) == 2  # every handled one
    assert sorted(line_rows(store)) == ["01NEWOPEN", "01OLDOPEN"]


def test_a_redelivery_of_a_pruned_id_is_recorded_as_new(store):
    """The accepted trade-off (docs/line.md): LINE redelivers within hours, ids are kept for
    days; an id delivered again after it was deleted would be handled again."""
    store.record_line_events([("01GONE", "MessageEvent", "{}")], 60)
    store.line_event_handled("01GONE")
    assert store.prune_line_events(time.time() + 1) == 1
    assert store.line_event_state("01GONE") is None
    assert set(store.record_line_events([("01GONE", "MessageEvent", "{}")], 60)) == {"01GONE"}
    assert store.line_event_state("01GONE") == "pending"


def test_an_event_with_nothing_to_handle_again_is_marked_handled_once_its_claim_ran_out(store):
    """A chat line is recorded without its JSON (nothing to answer again); if its instance died
    before marking it, the next look marks it handled rather than leave it unhandled for ever
    (where pruning, which never deletes an unhandled event, would keep it too)."""
    store.record_line_events([("01CHAT", "MessageEvent", None), ("01HELD", "MessageEvent", None),
                              ("01CMD", "MessageEvent", '{"type": "message"}')], 0)
    store.record_line_events([("01HELD2", "MessageEvent", None)], 600)  # still held: untouched
    claimed = store.claim_unhandled_line_events(60)
    assert [event_id for event_id, _, _ in claimed] == ["01CMD"]
    assert store.line_event_state("01CHAT") == store.line_event_state("01HELD") == "handled"
    assert store.line_event_state("01HELD2") == "pending"
    assert store.line_event_state("01CMD") == "pending"  # claimed: its handler answers it


@pytest.mark.parametrize("head_chars", [0, 40, HEAD_PROBE - 1, HEAD_PROBE, HEAD_PROBE + 5000])
def test_a_kept_runs_head_is_its_first_line_however_long(store, head_chars):
    """Heads are read from the first HEAD_PROBE characters (PostgreSQL then decompresses no
    more of the kept text); a longer head, or a text without a line break, is read whole."""
    runs = [new_run(store, version=f"v{i}") for i in range(3)]
    head = "{" + "題" * max(0, head_chars - 2) + "}" if head_chars else ""
    texts = {runs[0]: head + "\n" + "答" * 70_000 + "\n[]",  # a head, then its cells
             runs[1]: head,  # no line break at all
             runs[2]: head + "\n"}
    for run_id, text in texts.items():
        assert store.keep_graded_run(run_id, "rules", f"k{run_id}", text)
    keys = {run_id: f"k{run_id}" for run_id in runs}
    assert store.graded_run_heads(keys) == {run_id: head for run_id in runs}
    assert store.graded_run_heads({**keys, runs[0]: "another key"}) == {
        runs[1]: head, runs[2]: head}


@pytest.mark.parametrize("target", [
    "postgresql://exam@127.0.0.1:1/exam?password=s3cret-pw",
    "postgresql://exam@127.0.0.1:1/exam?sslmode=disable&password=s3cret-pw",
    "postgresql://127.0.0.1:1/exam?user=exam&pass%77ord=s3cret-pw",  # the key percent-encoded
    "postgresql://exam@127.0.0.1:1/exam?sslpassword=s3cret-pw&password=s3cret%2Dpw",
    "postgresql://exam@127.0.0.1:port/exam?password=s3cret-pw",  # malformed as well
])
def test_a_password_in_the_query_never_appears_in_a_message(target):
    """``?password=`` works as well as userinfo (libpq reads it): masked the same way."""
    with pytest.raises(StoreError) as caught:
        Store(target)
    assert "s3cret" not in str(caught.value)
    assert "=***" in str(caught.value)


def test_a_query_password_is_masked_where_settings_are_shown():
    from exam.db.engine import shown

    assert shown("postgresql://exam@db/exam?sslmode=require&password=s3cret-pw&x") == (
        "postgresql://exam@db/exam?sslmode=require&password=***&x")
