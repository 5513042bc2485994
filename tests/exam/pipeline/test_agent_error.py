"""An agent that reports its own failure is `agent_error`: answered, not transport trouble.

The report is the shape docs/n8n.md builds with the AI Agent node's error output and a
Respond to Webhook node: ``{"agent_error": {"message": ...}, "executionId": ...}``, at any
HTTP status. Against a real HTTP agent on 127.0.0.1.
"""

from __future__ import annotations

import pytest

from exam.pipeline.runner import create_run, execute, job_for
from tests.exam.helpers import agent_for, write_bank
from tests.fakes.agent import OK_BODY, FakeAgent

FAILURE = {"agent_error": {"message": "Agent stopped due to max iterations.", "node": "AI Agent"},
           "executionId": "41"}


class FailingAgent(FakeAgent):
    def respond(self, h, behaviour: str, n: int) -> None:
        if behaviour == "agent-error-500":
            self.json(h, FAILURE, status=500)
        elif behaviour == "agent-error-200":
            self.json(h, {**FAILURE, "agent_error": "the model provider said 429"})
        elif behaviour == "error-field-500":  # a proxy's or n8n's own error: not the agent's word
            self.json(h, {"error": "bad gateway"}, status=500)
        elif behaviour == "answer-and-error":
            self.json(h, {**OK_BODY, "agent_error": {"message": "one tool timed out"}})
        else:
            super().respond(h, behaviour, n)


def run(store, tmp_path, behaviours, **agent_kw):
    with FailingAgent() as fake:
        bank = write_bank(tmp_path, behaviours)
        agent = agent_for(fake.url, bank, **agent_kw)
        run_id = create_run(store, agent, "v1")
        execute(store, [job_for(store, run_id, agent)])
    cells = [c for c in store.cells([run_id])]
    return cells, fake


@pytest.mark.parametrize(("behaviour", "run_status", "error"), [
    ("agent-error-500", "agent_error",
     "HTTP 500: the agent reported its own failure: Agent stopped due to max iterations."),
    ("agent-error-200", "agent_error",
     "the agent reported its own failure: the model provider said 429"),
    ("error-field-500", "http_error", "HTTP 500: bad gateway"),
    ("answer-and-error", "ok", ""),  # it answered: graded on what it said
])
def test_an_agents_own_failure_report_is_told_apart(store, tmp_path, behaviour, run_status,
                                                     error, pauses):
    cells, _ = run(store, tmp_path, [behaviour], retries=2)
    assert (cells[0].run_status, cells[0].error) == (run_status, error)


def test_an_agent_that_reported_its_failure_is_not_retried(store, tmp_path, pauses):
    cells, fake = run(store, tmp_path, ["agent-error-500", "error-field-500"], retries=2)
    assert fake.calls["agent-error-500"] == 1 and cells[0].attempts == 1
    assert fake.calls["error-field-500"] == 3  # transport trouble is still retried


def test_the_failure_report_is_graded_as_nothing_and_counted_as_not_answered(store, tmp_path):
    from exam.reports import scorecard
    from exam.reports.regrade import regrade

    cells, _ = run(store, tmp_path, ["agent-error-500", "ok"])
    report = scorecard.build(regrade(store, store.list_runs()))
    card = report["scorecards"][0]
    assert card["run_status"]["agent_error"] == 1 and card["run_status"]["http_error"] == 0
    assert card["verdicts"]["pass"] == 1 and sum(card["verdicts"].values()) == 1
    assert "not answered: agent_error 1" in scorecard.render_text(report)
