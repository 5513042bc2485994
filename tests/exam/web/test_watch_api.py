"""`POST /api/watch`: a watch of the shipped version started and taken step by step by a
caller that executes nothing (n8n's Schedule workflow), its rounds executed by a worker, its
hold pushed once to a notification channel."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from click.testing import CliRunner

from exam import notify
from exam.cli.main import main
from exam.errors import ExamError
from exam.pipeline.worker import work_once
from exam.store import Store
from exam.web.app import create_app
from tests.exam.decide.test_watch import FAIL, Scripted
from tests.exam.helpers import registry_env, write_bank

TOKEN = "watch-token-7d1e"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Recorder:
    """A channel that keeps what it was sent (RECORDER_ROOM must be set)."""

    name: str = "recorder"
    label: str = "Recorder"
    help: str = "Keep each summary (RECORDER_ROOM says where)."
    sent: list = field(default_factory=list)

    def settings(self, env, *, sending=True):
        if sending and not env.get("RECORDER_ROOM"):
            raise ExamError("RECORDER_ROOM not set")
        return {"room": env.get("RECORDER_ROOM", "")}

    def target(self, settings):
        return settings["room"]

    def payloads(self, summaries, settings):
        return [s.as_dict() for s in summaries]

    def preview(self, payloads, out_path):
        return [], payloads

    def send(self, settings, target, payload, retry_key, sleep=None, made=None):
        self.sent.append(payload)
        return 1


@pytest.fixture
def recorder(monkeypatch):
    monkeypatch.setenv("RECORDER_ROOM", "ops")
    channel = notify.register(Recorder())
    yield channel
    notify.unregister("recorder")


@pytest.fixture
def shipped(tmp_path):
    """Agent T (two questions) run 5 times as v1, the shipped version; then its T-01 fails."""
    agent = Scripted()
    env = registry_env(tmp_path, agent.url, write_bank(tmp_path, ["ok", "ok"]))
    assert CliRunner().invoke(main, ["run", "T", "-v", "v1", "-n", "5"], env=env).exit_code == 0
    agent.script = {"T-01": [FAIL]}
    app = create_app({"API_TOKEN": TOKEN, "DB": env["EXAM_DB"], "AGENTS": env["EXAM_AGENTS"],
                      "TESTING": True})
    try:
        yield app.test_client(), env, agent
    finally:
        agent.close()


def test_a_watch_goes_round_by_round_to_its_hold_and_pushes_it_once(shipped, recorder):
    client, env, agent = shipped
    r = client.post("/api/watch", headers=AUTH, json={
        "agent": "T", "notify": "recorder", "max_repeats": 8, "budget": 20})
    assert r.status_code == 202, r.json
    watch_id = r.json["watch_id"]
    assert r.json["status"] == "running" and r.json["version"] == "v1"
    # nothing executed yet: asked again, it is still running and queues nothing more
    again = client.post("/api/watch", headers=AUTH, json={"watch": watch_id})
    assert again.status_code == 202 and again.json["run_ids"] == [watch_id]
    store = Store(env["EXAM_DB"])
    try:
        for _ in range(10):
            while work_once(store, env["EXAM_AGENTS"]) is not None:
                pass
            r = client.post("/api/watch", headers=AUTH, json={"watch": watch_id})
            if r.status_code == 200:
                break
            assert r.status_code == 202 and r.json["status"] == "running"
    finally:
        store.close()
    assert r.status_code == 200 and r.json["verdict"] == "hold", r.json
    assert r.json["drift"] == ["T-01"] and r.json["exit_code"] == 1
    assert agent.calls["T-01"] == 5 + 8 and agent.calls["T-02"] == 5 + 1
    assert r.json["watch"]["calls"]["total"] == 2 + 7
    assert [n["status"] for n in r.json["notified"]] == ["delivered"]
    (pushed,) = recorder.sent
    assert pushed["verdict"] == "hold" and pushed["regressions"] == ["T-01"]
    assert pushed["version"] == "v1" and pushed["previous"] == "v1 as it shipped (runs 1)"
    # asked again once done: the same verdict, nothing pushed twice
    last = client.post("/api/watch", headers=AUTH, json={"watch": watch_id})
    assert last.json["verdict"] == "hold"
    assert [n["outcome"] for n in last.json["notified"]] == ["already sent"]
    assert len(recorder.sent) == 1


@pytest.mark.parametrize("body, field, words", [
    ({"watch": 999}, "watch", "no watch 999"),
    ({"watch": 1}, "watch", "run 1 is not the first round of a watch"),
    ({"watch": "1"}, "watch", "expected the watch_id"),
    ({"watch": 1, "agent": "T"}, "agent", "give only"),
    ({"agent": "nobody"}, "agent", "agents: T"),
    ({"agent": "T", "repeats": 0}, "repeats", "from 1 to 20"),
    ({"agent": "T", "notify": "pigeon-post"}, "notify", "expected a notification channel"),
    ({"agent": "T", "notify": "recorder"}, "notify", "RECORDER_ROOM not set"),
    ({"agent": "T", "notify_on": "sometimes"}, "notify_on", "not_ship, always"),
    ({"agent": "T", "url": "http://evil.example/"}, "url", "unknown field"),
])
def test_bad_watch_requests_are_400_naming_the_field(shipped, monkeypatch, body, field, words):
    notify.register(Recorder())
    monkeypatch.delenv("RECORDER_ROOM", raising=False)
    try:
        client, _, agent = shipped
        r = client.post("/api/watch", headers=AUTH, json=body)
    finally:
        notify.unregister("recorder")
    assert r.status_code == 400 and r.json["field"] == field and words in r.json["error"], r.json
    assert agent.calls["T-01"] == 5  # nothing was asked
