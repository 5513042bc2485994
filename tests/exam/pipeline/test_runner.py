"""The runner against a real HTTP agent on 127.0.0.1 that misbehaves on request."""

from __future__ import annotations

import json
import threading

import pytest

from exam.pipeline.runner import TAKEN_OVER, create_run, execute, job_for
from exam.store import Store
from tests.exam.helpers import agent_for, wait_for, write_bank
from tests.fakes.agent import FakeAgent


def run_one(store, tmp_path, agent_kw=None, behaviours=("ok",), repeats=1):
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, list(behaviours))
        agent = agent_for(fake.url, bank, **(agent_kw or {}))
        run_id = create_run(store, agent, "v1", repeats=repeats)
        final = execute(store, [job_for(store, run_id, agent)])
    cells = {c.case_no: c for c in store.cells([run_id])}
    return run_id, final, cells, fake

def started(store, run_id, agent):
    """``execute`` of one run on a thread of its own, with a stop event: (the thread, the
    event, the dict its final statuses land in)."""
    stop = threading.Event()
    final: dict = {}
    runner = threading.Thread(target=lambda: final.update(
        execute(store, [job_for(store, run_id, agent)], stop=stop)))
    runner.start()
    return runner, stop, final



@pytest.mark.parametrize(
    ("behaviour", "run_status", "error_part"),
    [
        ("ok", "ok", ""),
        # waiting out a real 1 s deadline: the slow tier
        pytest.param("slow", "timeout", "no reply within 1 s", marks=pytest.mark.slow),
        ("status-500", "http_error", "HTTP 500: upstream said 500"),
        ("html", "bad_reply", "not JSON: an HTML page"),
        ("html-500", "http_error", "HTTP 500: an HTML error page"),
        ("empty", "bad_reply", "empty body"),
        ("invalid-json", "bad_reply", "not JSON"),
        ("array", "ok", ""),
        ("truncated", "truncated", "flagged its reply as truncated"),
        ("no-text", "bad_reply", "no text at answer / output / text"),
        ("answer-object", "bad_reply", "no text at answer: an object (keys: text), not text"),
        ("reset", "http_error", "connection"),
        ("reset-mid-body", "http_error", "connection"),
        pytest.param("drip", "timeout", "not complete within 1 s", marks=pytest.mark.slow),
        ("n8n-404", "http_error", "is not registered. — hint: The workflow must be active"),
        ("text-plain-json", "ok", ""),
    ],
)
def test_each_reply_gets_the_right_run_status(store, tmp_path, behaviour, run_status, error_part):
    # a short timeout only where the timeout is the point; a busy machine may be slow to answer
    timeout_s = 1.0 if run_status == "timeout" else 30.0
    _, final, cells, _ = run_one(store, tmp_path, {"timeout_s": timeout_s}, [behaviour])
    cell = cells["T-01"]
    assert cell.run_status == run_status
    assert error_part in cell.error
    assert list(final.values()) == ["done"]


def test_work_order_is_posted_verbatim(store, tmp_path):
    _, _, _, fake = run_one(store, tmp_path)
    sent = json.loads(fake.requests[0]["raw"])
    assert sent == {"task_id": "T-01", "behaviour": "ok", "question": "查 A10302"}
    assert fake.requests[0]["headers"]["Content-Type"] == "application/json"


def test_500_then_ok_is_retried_and_every_attempt_recorded(store, tmp_path, pauses):
    run_id, _, cells, _ = run_one(store, tmp_path, {"retries": 1}, ["500-then-ok"])
    assert pauses == [0.5]
    cell = cells["T-01"]
    assert (cell.run_status, cell.attempts) == ("ok", 2)
    # a first attempt that failed after 6 model calls still cost them: 6 + 2 model calls
    assert (cell.model_calls, cell.tokens) == (8, 3000)
    attempts = store.attempts(run_id, "T-01", 1)
    assert [a.http_status for a in attempts] == [500, 200]
    assert "max iterations" in attempts[0].error


def test_no_retry_without_retries(store, tmp_path):
    _, _, cells, fake = run_one(store, tmp_path, {}, ["500-then-ok"])
    assert cells["T-01"].run_status == "http_error" and cells["T-01"].attempts == 1
    assert len(fake.requests) == 1


@pytest.mark.slow  # waits out a real 1 s Retry-After
def test_429_honours_retry_after(store, tmp_path):
    run_id, _, cells, fake = run_one(store, tmp_path, {"retries": 2}, ["429-retry-after"])
    assert cells["T-01"].run_status == "ok" and cells["T-01"].attempts == 2
    gap = fake.requests[1]["t"] - fake.requests[0]["t"]
    assert gap >= 0.95


def test_a_wrong_answer_is_never_retried(store, tmp_path):
    _, _, cells, fake = run_one(store, tmp_path, {"retries": 3}, ["status-400"])
    assert cells["T-01"].attempts == 1 and len(fake.requests) == 1


def test_retries_stop_at_the_limit(store, tmp_path, pauses):
    _, _, cells, fake = run_one(store, tmp_path, {"retries": 2}, ["status-503"])
    assert pauses == [0.5, 1.0]  # doubling
    assert cells["T-01"].run_status == "http_error"
    assert cells["T-01"].attempts == 3 and len(fake.requests) == 3


def test_connection_refused_is_http_error_not_a_wrong_answer(store, tmp_path):
    bank = write_bank(tmp_path, ["ok"])
    agent = agent_for("http://127.0.0.1:9/webhook", bank)
    run_id = create_run(store, agent, "v1")
    execute(store, [job_for(store, run_id, agent)])
    (cell,) = store.cells([run_id])
    assert (cell.run_status, cell.error) == (
        "http_error", "connection refused (http://127.0.0.1:9/webhook)")


def test_blocked_agent_sends_nothing_and_records_why(store, tmp_path):
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["ok", "ok"])
        agent = agent_for(fake.url, bank, blocked="environment variable T_TOKEN is not set")
        run_id = create_run(store, agent, "v1")
        execute(store, [job_for(store, run_id, agent)])
    assert fake.requests == []
    cells = store.cells([run_id])
    assert {c.run_status for c in cells} == {"blocked"}
    assert "T_TOKEN" in cells[0].error


def test_gate_bounds_concurrency_and_spaces_starts(store, tmp_path, monkeypatch):
    import threading

    import exam.pipeline.runner
    from exam.pipeline.gate import RequestGate

    gates: list[RequestGate] = []

    def recording_gate(*args):
        gates.append(RequestGate(*args))
        return gates[-1]

    monkeypatch.setattr(exam.pipeline.runner, "RequestGate", recording_gate)
    with FakeAgent(hold_after=0) as fake:  # every request waits until released
        bank = write_bank(tmp_path, ["ok"] * 12)
        agent = agent_for(fake.url, bank, concurrency=3, min_interval_s=0.05, timeout_s=120)
        run_id = create_run(store, agent, "v1")
        runner = threading.Thread(target=execute, args=(store, [job_for(store, run_id, agent)]))
        runner.start()
        fake.wait_held(3)  # the gate does allow three at once
        fake.release()
        runner.join(timeout=120)
    assert not runner.is_alive()
    assert store.get_run(run_id).status == "done"
    assert len(fake.requests) == 12
    assert fake.max_in_flight == 3  # and never a fourth
    (gate,) = gates
    starts = list(gate.starts)  # stamped by the gate itself, so scheduling jitter cannot blur it
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert len(starts) == 12
    assert min(gaps) >= 0.05 - 1e-9


def test_repeats_and_only_and_category(store, tmp_path):
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["ok", "ok", "ok"])
        agent = agent_for(fake.url, bank)
        run_id = create_run(store, agent, "v1", repeats=2, only=["T-02"])
        execute(store, [job_for(store, run_id, agent)])
    cells = store.cells([run_id])
    assert sorted((c.case_no, c.repeat) for c in cells) == [("T-02", 1), ("T-02", 2)]
    assert len(fake.requests) == 2


def test_headers_are_sent_but_never_stored(store, tmp_path):
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["echo-headers"])
        agent = agent_for(fake.url, bank, headers={"X-Exam-Token": "TOPSECRET-123"})
        run_id = create_run(store, agent, "v1")
        execute(store, [job_for(store, run_id, agent)])
    assert fake.requests[0]["headers"]["X-Exam-Token"] == "TOPSECRET-123"
    raw = (tmp_path / "exam.db").read_bytes()
    for suffix in ("-wal",):
        wal = tmp_path / f"exam.db{suffix}"
        if wal.exists():
            raw += wal.read_bytes()
    assert b"TOPSECRET-123" not in raw
    assert b"SECRET-IN-REPLY-HEADER" not in raw
    assert store.get_run(run_id).settings["header_names"] == ["X-Exam-Token"]


def test_resume_runs_only_missing_cells(store, tmp_path):
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["ok"] * 4)
        agent = agent_for(fake.url, bank)
        run_id = create_run(store, agent, "v1", repeats=2)
        job = job_for(store, run_id, agent)
        from exam.pipeline.gate import RequestGate
        from exam.pipeline.runner import run_cell

        gate = RequestGate(1)
        run_cell(store, job, "T-01", 1, gate)
        run_cell(store, job, "T-03", 2, gate)
        fake.requests.clear()
        execute(store, [job_for(store, run_id, agent)])
    assert len(fake.requests) == 6
    assert store.count_cells(run_id) == 8
    assert store.get_run(run_id).status == "done"


def test_an_unexpected_error_inside_one_cell_is_harness_trouble_and_the_run_goes_on(
        store, tmp_path, monkeypatch):
    import exam.pipeline.runner
    from exam.cli.run import _run_exit
    from exam.reports import scorecard
    from exam.reports.regrade import regrade

    real_grade = exam.pipeline.runner.grade

    def grade_with_a_bug(question, reply, **kw):
        if question.case_no == "T-02":
            raise ValueError("a bug in the harness\nwith a second line")
        return real_grade(question, reply, **kw)

    monkeypatch.setattr(exam.pipeline.runner, "grade", grade_with_a_bug)
    run_id, final, cells, fake = run_one(store, tmp_path, behaviours=["ok", "ok", "ok"])
    assert final == {run_id: "done"}
    assert [cells[c].run_status for c in ("T-01", "T-02", "T-03")] == ["ok", "harness_error", "ok"]
    bad = cells["T-02"]
    assert bad.error == ("harness error (not the agent's answer): ValueError: a bug in the harness "
                         "with a second line")
    assert (bad.attempts, bad.text) == (1, None)  # the agent was asked once; it is recorded
    assert len(store.attempts(run_id, "T-02", 1)) == 1
    assert store.get_run(run_id).error == "1 cell(s) hit a harness error (see their errors)"
    # reports count it as a reply that did not arrive: no verdict, not a pass, exit status 3
    graded = regrade(store, [store.get_run(run_id)])
    assert {c.case_no: c.verdict for c in graded.cells}["T-02"] is None
    report = scorecard.build(graded)
    (card,) = report["scorecards"]
    assert card["run_status"]["harness_error"] == 1 and card["verdicts"]["pass"] == 2
    assert _run_exit(report, final) == 3
    # resume has nothing left to do, and says done
    assert execute(store, [job_for(store, run_id, agent_for(fake.url, tmp_path / "T.json"))]) \
        == {run_id: "done"}
    assert store.count_cells(run_id) == 3


def test_a_cell_whose_reply_cannot_be_stored_keeps_its_attempt_figures(store, tmp_path,
                                                                     monkeypatch):
    real = Store.record_cell
    calls = []

    def record_cell(self, cell, attempts, grade=None, cached=None):
        calls.append(cell.run_status)
        if cell.run_status == "ok" or (cell.run_status == "harness_error" and
                                       attempts and attempts[0].body is not None):
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        return real(self, cell, attempts, grade, cached)

    monkeypatch.setattr(Store, "record_cell", record_cell)
    run_id, final, cells, _ = run_one(store, tmp_path)
    assert final == {run_id: "done"}
    assert calls == ["ok", "harness_error", "harness_error"]
    assert cells["T-01"].run_status == "harness_error"
    assert "OverflowError" in cells["T-01"].error
    (attempt,) = store.attempts(run_id, "T-01", 1)
    assert (attempt.http_status, attempt.body) == (200, None)


@pytest.mark.slow  # waits out a real 1 s deadline, twice a cell
def test_a_worker_is_never_held_by_an_agent_that_never_finishes_its_headers(store, tmp_path,
                                                                           pauses):
    import threading

    from exam.pipeline.runner import queue_run
    from exam.pipeline.worker import work_once

    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["slow-headers", "slow-headers"])
        registry = tmp_path / "agents.yaml"
        registry.write_text(json.dumps({"agents": {"T": {
            "url": fake.url, "bank": str(bank), "timeout_s": 1, "retries": 1}}}))
        run_id = queue_run(store, agent_for(fake.url, bank), "v1")
        done = threading.Event()
        worker = threading.Thread(target=lambda: (work_once(store, str(registry)), done.set()),
                                  daemon=True)
        worker.start()
        # each slow-headers agent would keep one header line coming for 30 s per attempt
        assert done.wait(25), "the worker is still held by the agent"
    run = store.get_run(run_id)
    assert run.status == "done"
    cells = store.cells([run_id])
    assert {(c.run_status, c.attempts) for c in cells} == {("timeout", 2)}


def test_a_worker_survives_an_unexpected_error_and_fails_only_that_run(store, tmp_path,
                                                                      monkeypatch):
    import exam.pipeline.worker
    from exam.pipeline.runner import queue_run

    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["ok"])
        registry = tmp_path / "agents.yaml"
        registry.write_text(json.dumps({"agents": {"T": {"url": fake.url, "bank": str(bank)}}}))
        first = queue_run(store, agent_for(fake.url, bank), "v1")
        second = queue_run(store, agent_for(fake.url, bank), "v2")

        def broken_job_for(store, run_id, agent):
            raise RuntimeError("a bug\nin two lines")

        monkeypatch.setattr(exam.pipeline.worker, "job_for", broken_job_for)
        assert exam.pipeline.worker.work_once(store, str(registry)) == first
        monkeypatch.undo()
        assert exam.pipeline.worker.work_once(store, str(registry)) == second
    assert store.get_run(first).status == "failed"
    assert store.get_run(first).error == "harness error: RuntimeError: a bug in two lines"
    assert store.get_run(second).status == "done"


def test_a_worker_taking_over_a_run_says_how_much_was_done_and_runs_the_rest(store, tmp_path,
                                                                            caplog):
    import logging

    from exam.pipeline.gate import RequestGate
    from exam.pipeline.runner import queue_run, run_cell
    from exam.pipeline.worker import work_once

    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["ok"] * 3)
        registry = tmp_path / "agents.yaml"
        registry.write_text(json.dumps({"agents": {"T": {"url": fake.url, "bank": str(bank)}}}))
        agent = agent_for(fake.url, bank)
        run_id = queue_run(store, agent, "v1")
        # a worker on another host claimed it, stored one cell and died (its lease ran out)
        dead = Store(store.path)
        assert dead.claim_run("host-a:1", stale_after_s=0.0).id == run_id
        run_cell(dead, job_for(dead, run_id, agent), "T-02", 1, RequestGate(1))
        dead.close()
        fake.requests.clear()
        with caplog.at_level(logging.INFO, logger="exam.pipeline.worker"):
            assert work_once(store, str(registry)) == run_id
    assert "resuming: 1 of 3 cells already stored, 2 to run" in caplog.text
    assert len(fake.requests) == 2
    assert store.count_cells(run_id) == 3 and store.get_run(run_id).status == "done"


def test_a_run_hands_its_pool_a_few_cells_at_a_time(store, tmp_path, monkeypatch):
    """A 10,000-cell run must not hold 10,000 queued cells: two per thread are queued ahead."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from exam.pipeline import runner

    lock, queued, most = threading.Lock(), [0], [0]

    class Counting(ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):
            with lock:
                queued[0] += 1
                most[0] = max(most[0], queued[0])

            def done(_):
                with lock:
                    queued[0] -= 1

            fut = super().submit(fn, *args, **kwargs)
            fut.add_done_callback(done)
            return fut

    monkeypatch.setattr(runner, "ThreadPoolExecutor", Counting)
    run_id, final, _, _ = run_one(store, tmp_path, {"concurrency": 2}, ["ok", "ok"], repeats=15)
    assert final == {run_id: "done"} and store.count_cells(run_id) == 30
    assert most[0] <= 2 * runner.pool_threads(2) < 30


def test_a_redirect_is_the_agents_answer_and_a_cookie_is_never_sent_back(store, tmp_path):
    """Each work order on its own: a 302 is recorded as the agent's HTTP error (never followed,
    so nothing reaches its Location), and a Set-Cookie is not sent with the next work order."""
    from http.server import BaseHTTPRequestHandler

    from tests.fakes.server import send_json, serve

    seen: list[tuple[str, str | None]] = []

    class Agent(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append((self.path, self.headers.get("Cookie")))
            if self.path == "/moved":
                self.send_response(302)
                self.send_header("Location", "/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            send_json(self, 200, {"answer": "好的"}, {"Set-Cookie": "session=abc; Path=/"})

    with serve(Agent) as url:
        bank = write_bank(tmp_path, ["ok", "ok"])
        for path in ("/moved", "/webhook"):
            agent = agent_for(url + path, bank, concurrency=1)
            run_id = create_run(store, agent, "v1" if path == "/moved" else "v2")
            execute(store, [job_for(store, run_id, agent)])
            statuses = {c.run_status for c in store.cells([run_id])}
            assert statuses == ({"http_error"} if path == "/moved" else {"ok"}), path
    assert {p for p, _ in seen} == {"/moved", "/webhook"}  # /elsewhere never asked
    assert [c for _, c in seen] == [None] * len(seen)  # the cookie never came back


def test_a_run_taken_over_mid_way_stops_here_stores_nothing_more_and_keeps_the_takers_status(
        store, tmp_path):
    """A CLI process that was asleep past its lease (or a worker that stalled) and whose run
    was taken by `exam resume` meanwhile: its next cell is refused, it stops, and it leaves
    the run's status to the process that took it (before: it set the run `failed`, which
    raised LeaseLost out of execute)."""
    bank = write_bank(tmp_path, ["ok"] * 6)
    other = Store(store.target)
    try:
        with FakeAgent(hold_after=2) as fake:
            agent = agent_for(fake.url, bank, concurrency=1)
            run_id = create_run(store, agent, "v1")
            store.hold_run(run_id, 0.0)  # nothing renews it: the lease has run out
            result = {}
            worker = threading.Thread(target=lambda: result.update(
                execute(store, [job_for(store, run_id, agent)])))
            worker.start()
            fake.wait_held(1)  # two cells answered, the third waits on the agent
            # and both stored: a spare thread sends the third request while the second cell
            # is still being stored (runner.pool_threads), which a takeover then refused
            wait_for(lambda: other.count_cells(run_id) == 2, "the two answered cells stored")
            taken = other.hold_run(run_id)  # `exam resume` elsewhere takes it over
            fake.release()
            worker.join(timeout=120)
            assert not worker.is_alive()
    finally:
        other.close()
    assert result == {run_id: TAKEN_OVER}
    run = store.get_run(run_id)
    assert (run.status, run.owner, run.lease_token) == ("running", taken.owner, taken.lease_token)
    assert store.count_cells(run_id) == 2  # the reply that came after the takeover is not kept


def test_the_next_request_starts_while_a_finished_cell_is_still_being_stored(store, tmp_path,
                                                                              monkeypatch):
    """The gate bounds requests in flight, not the pool's threads: at concurrency 1, while the
    first cell's thread is still storing it, another thread already sends the second request
    (with one thread per slot the slot stayed empty until the store returned)."""
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["ok", "ok"])
        agent = agent_for(fake.url, bank, concurrency=1)
        run_id = create_run(store, agent, "v1")
        storing, go_on = threading.Event(), threading.Event()
        record = store.record_cell

        def slow_first_record(cell, *args, **kwargs):
            if cell.case_no == "T-01":
                storing.set()
                go_on.wait(timeout=120)
            return record(cell, *args, **kwargs)

        monkeypatch.setattr(store, "record_cell", slow_first_record)
        runner = threading.Thread(target=execute, args=(store, [job_for(store, run_id, agent)]))
        runner.start()
        try:
            assert storing.wait(timeout=60)
            deadline = threading.Event()
            for _ in range(600):  # the second request arrives while T-01 is still being stored
                if len(fake.requests) == 2 or deadline.wait(0.1):
                    break
            sent_while_storing = len(fake.requests)
        finally:
            go_on.set()
            runner.join(timeout=120)
    assert sent_while_storing == 2
    assert store.get_run(run_id).status == "done"
    assert fake.max_in_flight == 1


def test_a_run_told_to_stop_sends_nothing_from_threads_waiting_for_a_slot(store, tmp_path):
    """The pool has more threads than slots; those waiting at the gate when the run is told to
    stop never send: the cells in flight finish and are stored, nothing else is asked."""
    with FakeAgent(hold_after=0) as fake:
        bank = write_bank(tmp_path, ["ok"] * 10)
        agent = agent_for(fake.url, bank, concurrency=2, timeout_s=120)
        run_id = create_run(store, agent, "v1")
        runner, stop, final = started(store, run_id, agent)
        fake.wait_held(2)
        stop.set()
        fake.release()
        runner.join(timeout=120)
    assert not runner.is_alive()
    assert len(fake.requests) == 2
    cells = store.cells([run_id])
    assert sorted(c.run_status for c in cells) == ["ok", "ok"]  # no cell stored as an error
    assert final == {run_id: "interrupted"}
    assert "8 cell(s) not run" in store.get_run(run_id).error


def test_a_thread_waiting_out_the_pace_when_the_run_is_told_to_stop_sends_nothing(
        store, tmp_path, monkeypatch):
    """A thread that has its slot but waits for ``min_interval_s`` to pass is still at the
    gate: told to stop meanwhile, it never sends, and does not wait out the interval."""
    import exam.pipeline.runner
    from exam.pipeline.gate import RequestGate

    gates: list[RequestGate] = []

    def recording_gate(*args):
        gates.append(RequestGate(*args))
        return gates[-1]

    monkeypatch.setattr(exam.pipeline.runner, "RequestGate", recording_gate)
    with FakeAgent(hold_after=0) as fake:
        bank = write_bank(tmp_path, ["ok"] * 6)
        agent = agent_for(fake.url, bank, concurrency=2, min_interval_s=60, timeout_s=120)
        run_id = create_run(store, agent, "v1")
        runner, stop, final = started(store, run_id, agent)
        fake.wait_held(1)
        (gate,) = gates
        waited = threading.Event()
        while not gate._lock.locked() and not waited.wait(0.01):
            pass  # the second slot's thread is waiting out the 60 s interval
        stop.set()
        fake.release()
        runner.join(timeout=30)
        alive = runner.is_alive()
    assert not alive  # it stopped waiting when told to stop
    assert len(fake.requests) == 1
    assert [c.run_status for c in store.cells([run_id])] == ["ok"]
    assert final == {run_id: "interrupted"}
    assert "5 cell(s) not run" in store.get_run(run_id).error


def test_a_cell_waiting_to_retry_when_the_run_is_told_to_stop_stops_waiting(store, tmp_path):
    """A cell waiting out a Retry-After (up to 60 s) when told to stop sends nothing more and
    stops waiting at once (Ctrl-C, a worker's SIGTERM); the cell is left for ``exam resume``,
    not stored from its first attempt."""
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["429-wait-60"])
        agent = agent_for(fake.url, bank, concurrency=1, retries=2)
        run_id = create_run(store, agent, "v1")
        runner, stop, final = started(store, run_id, agent)
        waited = threading.Event()
        while not fake.requests and not waited.wait(0.01):
            pass
        waited.wait(0.2)  # the 429 is read: its cell waits 60 s before trying again
        stop.set()
        runner.join(timeout=30)
        alive = runner.is_alive()
    assert not alive
    assert len(fake.requests) == 1
    assert store.cells([run_id]) == []
    assert final == {run_id: "interrupted"}
    assert "1 cell(s) not run" in store.get_run(run_id).error


# waits out real 1 s deadlines: the "slow" cells, held to the deadline twice each (3 s of the
# fast tier's longest wait)
@pytest.mark.slow
def test_every_slot_is_given_back_whatever_a_cell_ran_into(store, tmp_path, monkeypatch,
                                                           pauses):
    """Replies, retries, agent errors, harness errors raised with the slot held, a stop while
    threads wait: afterwards the gate holds exactly ``concurrency`` free slots (one leaked
    would slow every later request; one given back twice would let a fourth in flight)."""
    import exam.pipeline.runner
    import exam.pipeline.transport as transport
    from exam.pipeline.gate import RequestGate

    gates: list[RequestGate] = []

    def recording_gate(*args):
        gates.append(RequestGate(*args))
        return gates[-1]

    post_once = transport.post_once

    def post_or_raise(agent, work_order, n):
        if work_order.get("behaviour") == "reset":  # a bug in the middle of an attempt
            raise RuntimeError("boom")
        return post_once(agent, work_order, n)

    monkeypatch.setattr(exam.pipeline.runner, "RequestGate", recording_gate)
    monkeypatch.setattr(transport, "post_once", post_or_raise)
    # one harness error: a slot it leaked leaves the run going on fewer, not hanging
    # each kind twice: more cells than the 3 slots, two of them held to the deadline twice
    kinds = ["ok", "status-503", "500-then-ok", "status-400", "html", "slow"] * 2 + ["reset"]
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, kinds)
        agent = agent_for(fake.url, bank, concurrency=3, retries=1, timeout_s=1)
        run_id = create_run(store, agent, "v1")
        final = execute(store, [job_for(store, run_id, agent)])
        first = len(fake.requests)
        stop = threading.Event()
        stopped = {}
        rerun = create_run(store, agent, "v2", repeats=2)
        runner = threading.Thread(target=lambda: stopped.update(
            execute(store, [job_for(store, rerun, agent)], stop=stop)))
        runner.start()
        waited = threading.Event()  # stopped part-way: a third of the rerun's cells asked
        while len(fake.requests) < first + len(kinds) * 2 // 3 and not waited.wait(0.01):
            pass
        stop.set()
        runner.join(timeout=120)
    assert final == {run_id: "done"} and stopped == {rerun: "interrupted"}
    statuses = {c.run_status for c in store.cells([run_id])}
    assert {"ok", "http_error", "harness_error", "bad_reply", "timeout"} <= statuses
    assert len(gates) == 2
    for gate in gates:
        assert gate._slots.qsize() == 3


def test_ctrl_c_while_spare_threads_wait_at_the_gate_sends_nothing_more(store, tmp_path):
    """Ctrl-C (or a worker's SIGTERM, raised as KeyboardInterrupt in the main thread) with
    both slots busy and the pool's spare threads waiting for one: the requests in flight
    finish and are stored, nothing else is sent, no cell is stored as an error, and the run
    reads interrupted with the rest left for ``exam resume``."""
    from exam.pipeline.runner import Interrupted, missing_cells

    with FakeAgent(hold_after=1) as fake:
        bank = write_bank(tmp_path, ["ok"] * 10)
        agent = agent_for(fake.url, bank, concurrency=2, timeout_s=120)
        run_id = create_run(store, agent, "v1")
        raised = []

        def ctrl_c(_run_id, _cell):
            fake.wait_held(2)  # both slots busy: every other thread waits at the gate
            raise KeyboardInterrupt

        def run():
            try:
                execute(store, [job_for(store, run_id, agent)], progress=ctrl_c)
            except Interrupted as exc:
                raised.append(exc)

        runner = threading.Thread(target=run)
        runner.start()
        fake.wait_held(2)
        waited = threading.Event()
        while store.get_run(run_id).status != "interrupted" and not waited.wait(0.01):
            pass
        fake.release()
        runner.join(timeout=120)
    assert not runner.is_alive() and raised
    assert len(fake.requests) == 3
    assert sorted(c.run_status for c in store.cells([run_id])) == ["ok"] * 3
    run = store.get_run(run_id)
    assert (run.status, run.error) == ("interrupted", "stopped by Ctrl-C")
    assert len(missing_cells(store, run)) == 7


@pytest.mark.parametrize("trouble", ["bug", "taken over"])
def test_one_run_stopping_leaves_the_other_runs_of_the_same_call_running(store, tmp_path,
                                                                         monkeypatch, trouble):
    """`exam run A B`: a bug in A's cells (escaping the cell's own guard) fails A, and A taken
    over by another process hands A over; B runs every one of its cells either way (before:
    B was stopped with A and read interrupted)."""
    import exam.pipeline.runner as runner
    from exam.errors import LeaseLost

    real = runner.run_cell

    def run_cell(store, job, case_no, repeat, gate):
        if job.agent.name == "A" and case_no == "A-02":
            raise RuntimeError("a bug") if trouble == "bug" else LeaseLost("taken")
        return real(store, job, case_no, repeat, gate)

    monkeypatch.setattr(runner, "run_cell", run_cell)
    with FakeAgent() as fake:
        agents = [agent_for(fake.url, write_bank(tmp_path, ["ok"] * 8, name=n), concurrency=2)
                  for n in ("A", "B")]
        ids = [create_run(store, a, "v1", repeats=3) for a in agents]
        final = execute(store, [job_for(store, i, a) for i, a in zip(ids, agents, strict=True)])
    a, b = ids
    assert final[b] == "done" and store.count_cells(b) == 24
    assert final[a] == ("failed" if trouble == "bug" else TAKEN_OVER)
    assert store.count_cells(a) < 24
