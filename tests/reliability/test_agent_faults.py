"""Every kind of agent misbehaviour lands as the right run status; the run completes."""

from __future__ import annotations

from collections import Counter

from exam.pipeline.runner import create_run, execute, job_for
from exam.pipeline.transport import DEADLINE_SLACK_S
from exam.store import Store
from tests.exam.helpers import agent_for, write_bank
from tests.fakes.agent import FakeAgent

# behaviour → (run status, what the runner did)
EXPECTED = {
    "ok": "ok",
    "slow": "timeout",
    "drip": "timeout",
    "status-500": "http_error",
    "status-502": "http_error",
    "status-503": "http_error",
    "status-504": "http_error",
    "429-retry-after": "ok",
    "429-no-header": "ok",
    "reset": "http_error",
    "reset-mid-body": "http_error",
    "html": "bad_reply",
    "html-500": "http_error",
    "empty": "bad_reply",
    "invalid-json": "bad_reply",
    "huge": "bad_reply",
    "text-plain-json": "ok",
    "xml": "bad_reply",
    "no-text": "bad_reply",
    "truncated": "truncated",
    "n8n-404": "http_error",
    # compressed replies (n8n gzips every reply over 1 KB) and bodies that lie about it
    "gzip-chunked": "ok",
    "deflate": "ok",
    "gzip-lie": "bad_reply",
    "brotli": "bad_reply",
    "gzip-bomb": "bad_reply",
    # agents that never finish: the attempt's deadline holds
    "slow-headers": "timeout",
    "trickle": "timeout",
    "trickle-chunked": "timeout",
    # hostile bodies
    "nan-usage": "bad_reply",
    "infinity-usage": "bad_reply",
    "1e999-usage": "bad_reply",
    "bigint-usage": "bad_reply",
    "deep-json": "bad_reply",
    "deep-json-500": "http_error",
    "charset-idna": "bad_reply",
    "lone-surrogate": "ok",
    "long-text": "bad_reply",
}
# the slowest faults: how long one attempt took at most, against its 1 s deadline
DEADLINE_FAULTS = ("slow-headers", "trickle", "trickle-chunked")
REPEATS = 2


def test_every_fault_lands_as_the_right_run_status(tmp_path, table):
    store = Store(tmp_path / "exam.db")
    behaviours = list(EXPECTED)
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, behaviours)
        # concurrency 1: the fake's 429-then-ok script depends on the order of attempts
        agent = agent_for(fake.url, bank, timeout_s=1.0, retries=1, concurrency=1)
        run_id = create_run(store, agent, "v1", repeats=REPEATS)
        final = execute(store, [job_for(store, run_id, agent)])
    cells = store.cells([run_id])
    assert final == {run_id: "done"}
    assert len(cells) == len(behaviours) * REPEATS
    assert len({(c.case_no, c.repeat) for c in cells}) == len(cells)
    by_case = {f"T-{i + 1:02d}": b for i, b in enumerate(behaviours)}
    wrong = []
    slowest: dict[str, float] = {}
    for c in cells:
        behaviour = by_case[c.case_no]
        if c.run_status != EXPECTED[behaviour]:
            wrong.append((behaviour, c.run_status, c.error))
        attempts = store.attempts(run_id, c.case_no, c.repeat)
        assert len(attempts) == c.attempts >= 1
        slowest[behaviour] = max([slowest.get(behaviour, 0.0)] + [a.latency_ms for a in attempts])
    assert wrong == []
    statuses = Counter((by_case[c.case_no], c.run_status, c.attempts) for c in cells)
    for (behaviour, status, attempts), n in sorted(statuses.items()):
        table("agent faults", f"agent answers `{behaviour}`", n,
              f"`{status}` after {attempts} attempt(s); run completed")
    for behaviour in DEADLINE_FAULTS:
        assert slowest[behaviour] <= (1.0 + DEADLINE_SLACK_S) * 1000
        table("agent faults", f"`{behaviour}` against `timeout_s: 1`", REPEATS * 2,
              f"every attempt ended by its deadline: slowest {slowest[behaviour]:.0f} ms "
              f"(limit 1000 ms + {DEADLINE_SLACK_S * 1000:.0f} ms slack)")
    # none of the trouble was graded as a wrong answer
    from exam.reports.regrade import regrade

    graded = regrade(store, [store.get_run(run_id)])
    not_ok = [c for c in graded.cells if c.run_status != "ok"]
    assert not_ok and all(c.verdict is None for c in not_ok)


def test_connection_refused(tmp_path, table):
    store = Store(tmp_path / "exam.db")
    bank = write_bank(tmp_path, ["ok"] * 3)
    agent = agent_for("http://127.0.0.1:9/webhook", bank, retries=2, timeout_s=1.0)
    run_id = create_run(store, agent, "v1")
    assert execute(store, [job_for(store, run_id, agent)]) == {run_id: "done"}
    cells = store.cells([run_id])
    assert {(c.run_status, c.attempts, c.error) for c in cells} == {
        ("http_error", 3, "connection refused (http://127.0.0.1:9/webhook)")}
    table("agent faults", "connection refused (nothing listening)", len(cells),
          "`http_error` \"connection refused (URL)\" after 3 attempts; run completed")


def test_exam_run_on_agents_that_never_finish_ends_with_every_cell_timed_out(tmp_path, table):
    """The issue's report: `exam run` hung on an agent sending a header line a second."""
    import subprocess
    import sys
    import time

    from tests.exam.helpers import registry_env

    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["slow-headers", "trickle", "ok"])
        env = registry_env(tmp_path, fake.url, bank, timeout_s=1, retries=1)
        t0 = time.monotonic()
        # the agents would keep dribbling for 30 s per attempt; 60 s is a generous outer bound
        done = subprocess.run([sys.executable, "-m", "exam", "run", "T", "--version", "v1"],
                              env=env, capture_output=True, text=True, timeout=60)
        took = time.monotonic() - t0
    assert done.returncode == 3, done.stderr  # not answered: infrastructure trouble
    assert "Traceback" not in done.stderr
    store = Store(tmp_path / "exam.db")
    cells = {c.case_no: c for c in store.cells([1])}
    assert [(cells[c].run_status, cells[c].attempts) for c in ("T-01", "T-02", "T-03")] == [
        ("timeout", 2), ("timeout", 2), ("ok", 1)]
    for c in ("T-01", "T-02"):
        assert cells[c].latency_ms <= 2 * (1.0 + DEADLINE_SLACK_S) * 1000
    table("agent faults", "`exam run` on agents sending a header line every 0.2 s, or a body "
          "byte every 0.95 s, forever (`timeout_s: 1`, `retries: 1`)", 1,
          f"finished in {took:.1f} s, exit 3; both cells `timeout` after 2 attempts "
          f"(≤ 2 × (1 s + slack) each)")


def test_a_bug_inside_one_cell_is_harness_error_and_the_run_completes(tmp_path, table,
                                                                     monkeypatch):
    import exam.pipeline.runner

    def broken_grade(question, reply, **kw):
        raise RuntimeError("a bug in a grader")

    monkeypatch.setattr(exam.pipeline.runner, "grade", broken_grade)
    store = Store(tmp_path / "exam.db")
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["ok"] * 4)
        agent = agent_for(fake.url, bank)
        run_id = create_run(store, agent, "v1")
        assert execute(store, [job_for(store, run_id, agent)]) == {run_id: "done"}
    cells = store.cells([run_id])
    assert {c.run_status for c in cells} == {"harness_error"} and len(cells) == 4
    table("agent faults", "an unexpected error inside a cell (a grader raising)", len(cells),
          "each cell stored as `harness_error` with the error in one line, its attempts kept; "
          "counted as not answered, never a verdict; run completed", "nothing")
