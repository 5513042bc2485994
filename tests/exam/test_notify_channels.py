"""Notification channels are registered: a channel made up here is offered by `exam notify`
and `exam run --notify`, delivers, and is recorded, with no change to exam/ (exam/notify).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from click.testing import CliRunner

from exam import channels, notify
from exam.cli.main import main
from exam.errors import ExamError
from exam.store import Store
from tests.conftest import ROOT
from tests.exam.cli.test_run import setup
from tests.fakes.agent import FakeAgent


@dataclass
class Pigeon:
    """Carries one summary line per bird to a loft; ``fail`` birds get lost."""

    name: str = "pigeon"
    label: str = "Pigeon"
    help: str = "Send each scorecard by pigeon (PIGEON_LOFT says where)."
    sent: list[tuple[str, object, str]] = field(default_factory=list)
    fail: int = 0

    def settings(self, env, *, sending=True):
        if sending and not env.get("PIGEON_LOFT"):
            raise ExamError("PIGEON_LOFT not set")
        return {"loft": env.get("PIGEON_LOFT", "")}

    def target(self, settings):
        return settings["loft"]

    def payloads(self, summaries, settings):
        from exam.notify.summary import summary_text

        return [{"text": summary_text(s), "pass_rate": s.pass_rate} for s in summaries]

    def preview(self, payloads, out_path):
        return [f"bird {i}: {p['text'].splitlines()[0]}" for i, p in enumerate(payloads, 1)], \
            payloads

    def send(self, settings, target, payload, retry_key, sleep=None, made=None):
        if self.fail:
            self.fail -= 1
            raise notify.DeliveryError("the bird got lost")
        self.sent.append((target, payload, retry_key))
        return 1


@pytest.fixture
def pigeon():
    bird = notify.register(Pigeon())
    yield bird
    notify.unregister("pigeon")


def exam(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env)


def test_a_registered_channel_is_offered_by_the_cli(pigeon):
    assert "pigeon" in notify.names() and "line" in notify.names()
    listed = exam("notify", "--help")
    assert listed.exit_code == 0 and "pigeon" in listed.output and "line" in listed.output
    assert "PIGEON_LOFT" in exam("notify", "pigeon", "--help").output
    wrong = exam("run", "T", "--version", "v1", "--notify", "owl")
    assert wrong.exit_code == 2 and "'line'" in wrong.output and "'pigeon'" in wrong.output


def test_exam_notify_delivers_on_the_channel_and_records_it(pigeon, regressed):
    history, run_id = regressed
    result = exam("notify", "pigeon", "--run", str(run_id), "--db", history.store.path,
                  env={"PIGEON_LOFT": "roof-3"})
    assert result.exit_code == 0, result.output
    assert "Pigeon notification 1: delivered in 1 attempt(s)" in result.output
    ((loft, payload, key),) = pigeon.sent
    assert loft == "roof-3"
    assert payload["text"].startswith("W1 v2: pass 3 · needs_human 0 · fail 3")
    assert "vs v1: 1 regression(s), 1 fix(es): Q-01" in payload["text"]
    assert payload["pass_rate"] == 0.5
    (n,) = history.store.notifications()
    assert (n["channel"], n["target"], n["status"], n["run_ids"], n["retry_key"], n["payload"]) \
        == ("pigeon", "roof-3", "delivered", [run_id], key, payload)


def test_a_failed_send_is_recorded_and_resent_with_its_key(pigeon, regressed):
    history, run_id = regressed
    pigeon.fail = 1
    env = {"PIGEON_LOFT": "roof-3"}
    failed = exam("notify", "pigeon", "--run", str(run_id), "--db", history.store.path, env=env)
    assert failed.exit_code == 1
    assert "the bird got lost" in failed.output
    assert "resend with: exam notify pigeon --resend 1" in failed.output
    assert history.store.notifications()[0]["status"] == "failed"
    again = exam("notify", "pigeon", "--resend", "1", "--db", history.store.path, env=env)
    assert again.exit_code == 0, again.output
    (n,) = history.store.notifications()
    assert n["status"] == "delivered" and pigeon.sent[0][2] == n["retry_key"]
    # a LINE notification is not resent on another channel
    wrong = exam("notify", "line", "--resend", "1", "--db", history.store.path,
                 env={"LINE_CHANNEL_ACCESS_TOKEN": "t", "LINE_GROUP_ID": "C1"})
    assert wrong.exit_code == 2
    assert "notification 1 was made for pigeon: resend it with exam notify pigeon --resend 1" \
        in wrong.output


def test_missing_channel_settings_are_bad_input(pigeon, regressed):
    history, run_id = regressed
    result = exam("notify", "pigeon", "--run", str(run_id), "--db", history.store.path, env={})
    assert result.exit_code == 2 and "PIGEON_LOFT not set" in result.output
    assert history.store.notifications() == [] and pigeon.sent == []


def test_a_dry_run_sends_nothing_and_writes_the_preview(pigeon, regressed, tmp_path):
    history, run_id = regressed
    out = tmp_path / "preview.json"
    result = exam("notify", "pigeon", "--run", str(run_id), "--dry-run", "--out", str(out),
                  "--db", history.store.path, env={})
    assert result.exit_code == 0, result.output
    assert "bird 1: W1 v2: pass 3 · needs_human 0 · fail 3" in result.output
    assert json.loads(out.read_text())[0]["text"].startswith("W1 v2")
    assert pigeon.sent == [] and history.store.notifications() == []


def test_exam_run_notify_delivers_on_the_channel(pigeon, tmp_path):
    with FakeAgent() as fake:
        env = {**setup(tmp_path, fake.url, ["ok", "ok"]), "PIGEON_LOFT": "roof-9"}
        result = exam("run", "T", "--version", "v1", "--notify", "pigeon", env=env)
    assert result.exit_code == 0, result.output
    ((loft, payload, _),) = pigeon.sent
    assert loft == "roof-9" and payload["text"].startswith("T v1: pass 2 · needs_human 0 · fail 0")
    store = Store(tmp_path / "exam.db")
    (n,) = store.notifications()
    store.close()
    assert (n["channel"], n["status"], n["run_ids"]) == ("pigeon", "delivered", [1])


def test_exam_run_checks_the_channels_settings_before_calling_any_agent(pigeon, tmp_path):
    with FakeAgent() as fake:
        env = setup(tmp_path, fake.url, ["ok"])
        result = exam("run", "T", "--version", "v1", "--notify", "pigeon", env=env)
        assert result.exit_code == 2 and "PIGEON_LOFT not set" in result.output
        assert fake.requests == []  # no work order was sent
    assert pigeon.sent == []


@dataclass
class NoSleep(Pigeon):
    name: str = "nosleep"

    def send(self, settings, target, payload, retry_key):  # no sleep=: deliver passes it
        return 1


@dataclass
class NoMade(Pigeon):
    name: str = "nomade"

    def send(self, settings, target, payload, retry_key, sleep=None):  # deliver passes made=
        return 1


@dataclass
class NoDryRun(Pigeon):
    name: str = "nodryrun"

    def settings(self, env):  # no sending=: a dry run passes it
        return {}


@dataclass
class NoPreview(Pigeon):
    name: str = "nopreview"
    preview = None


@pytest.mark.parametrize("channel,message", [
    (NoSleep(), "channel 'nosleep': send must be callable as send(settings, target, payload, "
                "retry_key, sleep=None, made=None) (the Channel protocol): got an unexpected "
                "keyword argument 'sleep'"),
    (NoMade(), "channel 'nomade': send must be callable as send(settings, target, payload, "
               "retry_key, sleep=None, made=None) (the Channel protocol): got an unexpected "
               "keyword argument 'made'"),
    (NoDryRun(), "channel 'nodryrun': settings must be callable as settings(env, *, "
                 "sending=True) (the Channel protocol): got an unexpected keyword argument "
                 "'sending'"),
    (NoPreview(), "channel 'nopreview': preview must be callable as preview(payloads, out_path)"),
])
def test_a_channel_that_does_not_keep_the_protocol_is_refused_when_registered(channel, message):
    with pytest.raises(TypeError) as refused:
        notify.register(channel)
    assert str(refused.value).startswith(message)
    assert channel.name not in notify.names()


@pytest.mark.parametrize("name", sorted(channels.BUILT_IN))
def test_each_channel_declared_with_its_secrets_is_the_channel_found_there(name):
    """exam/channels.py says where each shipped channel is: importing it gives a channel of
    that name, and its secrets are settings the code reads (a declared secret read nowhere
    would be a typo, and the setting really read would go unredacted)."""
    assert notify.get(name).name == name
    code = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "exam").rglob("*.py")
                   if p.name != "channels.py")
    entry = channels.BUILT_IN[name]
    for setting in (*entry.secrets, *entry.secret_urls):
        assert f'"{setting}"' in code, f"{name} declares {setting}, which no code reads"


def test_a_summary_is_data_with_a_json_form(regressed):
    from exam.notify.summary import summaries_for

    history, run_id = regressed
    (s,) = summaries_for(history.store, [run_id])
    assert (s.agent, s.version, s.previous, s.verdict) == ("W1", "v2", "v1", "hold")
    assert (s.counts, s.pass_rate, s.regressions, s.fixes) == (
        {"pass": 3, "needs_human": 0, "fail": 3}, 0.5, ("Q-01",), ("Q-02",))
    as_json = json.loads(json.dumps(s.as_dict()))
    assert list(as_json) == ["agent", "version", "pass", "needs_human", "fail", "pass_rate",
                             "not_answered", "cost", "critical", "previous", "verdict",
                             "verdict_reason", "regressions", "fixes", "review_queue",
                             "review_replies", "baseline", "still_failing", "excluded"]
    assert as_json["pass"] == 3 and as_json["regressions"] == ["Q-01"]
    assert as_json["critical"] == ["Q-01"] and as_json["cost"]["tokens"]["p50"] == s.cost[
        "tokens"]["p50"]
