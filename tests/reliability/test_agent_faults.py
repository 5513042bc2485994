"""Every kind of agent misbehaviour lands as the right run status; the run completes."""

from __future__ import annotations

from collections import Counter

from exam.runner import create_run, execute, job_for
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
}
REPEATS = 2


def test_every_fault_lands_as_the_right_run_status(tmp_path, table):
    store = Store(tmp_path / "exam.db")
    behaviours = list(EXPECTED)
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, behaviours)
        # concurrency 1: the fake's 429-then-ok script depends on the order of attempts
        # the fake's slow replies take 3 s: 2.5 s makes them time out every time while
        # leaving a busy machine room to answer the others
        agent = agent_for(fake.url, bank, timeout_s=2.5, retries=1, concurrency=1)
        run_id = create_run(store, agent, "v1", repeats=REPEATS)
        final = execute(store, [job_for(store, run_id, agent)])
    cells = store.cells([run_id])
    assert final == {run_id: "done"}
    assert len(cells) == len(behaviours) * REPEATS
    assert len({(c.case_no, c.repeat) for c in cells}) == len(cells)
    by_case = {f"T-{i + 1:02d}": b for i, b in enumerate(behaviours)}
    wrong = []
    for c in cells:
        behaviour = by_case[c.case_no]
        if c.run_status != EXPECTED[behaviour]:
            wrong.append((behaviour, c.run_status, c.error))
        attempts = store.attempts(run_id, c.case_no, c.repeat)
        assert len(attempts) == c.attempts >= 1
    assert wrong == []
    statuses = Counter((by_case[c.case_no], c.run_status, c.attempts) for c in cells)
    for (behaviour, status, attempts), n in sorted(statuses.items()):
        table("agent faults", f"agent answers `{behaviour}`", n,
              f"`{status}` after {attempts} attempt(s); run completed")
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
