"""`exam watch`: the shipped version asked again under its own label, against the demo agents
(exam/demo) and a scripted agent on 127.0.0.1, through the CLI and the API."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler

import pytest
import yaml
from click.testing import CliRunner

import exam.demo.agents as demo_agents
from exam.cli.main import main
from exam.demo.main import BANK_DIR, DemoServer
from exam.store import Store
from tests.exam.helpers import registry_env, write_bank
from tests.fakes.server import send_json, serve

PASS, FAIL = "答案：備貨中", "答案：已出貨"


class Scripted:
    """Answers each task_id from a script, its last answer again once the script ends; counts
    the calls each task got."""

    def __init__(self):
        self.script: dict[str, list[str]] = {}
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                task = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["task_id"]
                with owner.lock:
                    n = owner.calls[task]
                    owner.calls[task] += 1
                    answers = owner.script.get(task, [PASS])
                    text = answers[min(n, len(answers) - 1)]
                send_json(self, 200, {"answer": text})

        self.served = serve(Handler).start()
        self.url = self.served.url + "/hook"

    def close(self):
        self.served.close()


@pytest.fixture
def demo(tmp_path):
    """The demo's W2 (v2) on 127.0.0.1 with its 20 questions run 3 times: the version that
    shipped (the first version ships). Yields the environment `exam` runs with."""
    with DemoServer(latency_scale=0.0) as server:
        registry = tmp_path / "agents.yaml"
        registry.write_text(yaml.safe_dump({"agents": {"W2": {
            "url": server.url("W2", "v2"), "bank": str(BANK_DIR / "W2.json"), "timeout_s": 20,
            "concurrency": 4}}}), encoding="utf-8")
        env = {**os.environ, "EXAM_DB": str(tmp_path / "exam.db"),
               "EXAM_AGENTS": str(registry)}
        shipped = exam(env, "run", "W2", "--version", "v2", "--repeats", "3")
        assert shipped.exit_code == 1, shipped.output  # W2-20, the flaky one, fails 1 in 3
        yield env


def exam(env, *args):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def watch(env, *args):
    """`exam watch W2 --format json`: (exit code, report, what it said on stderr)."""
    r = exam(env, "watch", "W2", "--format", "json", *args)
    return r.exit_code, json.loads(r.stdout), r.stderr


def test_a_behaviour_changed_underneath_is_a_hold_naming_the_changed_question(
        demo, monkeypatch):
    # the FAQ changed under W2 v2 (same label): shipping costs nothing now, said as a fact
    faq = list(demo_agents.FAQ)
    faq[0] = (("運費",), (), "全館免運，運費 0 元。", "ok")
    monkeypatch.setattr(demo_agents, "FAQ", faq)
    code, report, said = watch(demo)
    assert code == 1 and report["verdict"] == "hold"
    w = report["watch"]
    assert w["drift"] == ["W2-01"] and [r["case_no"] for r in report["regressions"]] == ["W2-01"]
    # only the changed question was asked again; every call is said
    assert w["asked_again"] == ["W2-01"]
    assert w["calls"]["first"] == 20 and w["calls"]["total"] == 20 + w["calls"]["settle"]
    later = w["rounds"][1:]
    assert later and all(r["questions"] == ["W2-01"] for r in later)
    assert w["calls"]["settle"] == sum(r["repeats"] for r in later) <= w["calls"]["budget"]
    assert report["baseline"]["label"] == "v2 as it shipped (runs 1)"
    assert "watch 2: run 3: W2-01 × 3 (done)" in said
    text = exam(demo, "watch", "W2")
    assert text.exit_code == 1
    assert "DRIFT: W2-01 answer worse than when v2 shipped" in text.stdout
    assert "VERDICT: HOLD vs v2 as it shipped (runs 1)" in text.stdout


def test_with_nothing_changed_six_watches_give_no_false_hold(demo):
    """The demo agent is deterministic (W2-20 answers wrong every third time, a count) and a
    watch's rounds never join the baseline: six watches, two whole cycles of W2-20, are every
    state twenty would see."""
    words = Counter()
    for _ in range(6):
        code, report, _ = watch(demo)
        words[report["verdict"]] += 1
        w = report["watch"]
        assert report["verdict"] != "hold" and not w["drift"], report["decision"]["reason"]
        if report["verdict"] == "undecided":
            # W2-20 answers wrong one time in three (2/3 when it shipped): a wrong answer is
            # worse, and 3 repeats at ship time cannot show a drop: said, and nothing spent
            assert [u["case_no"] for u in report["decision"]["undecided"]] == ["W2-20"]
            assert [x["case_no"] for x in w["cannot_show"]] == ["W2-20"]
            assert code == 4
        else:
            assert report["verdict"] == "ship" and code == 0
        assert w["calls"] == {**w["calls"], "first": 20, "settle": 0, "total": 20}
    # W2-20's every third answer is wrong (a count in the demo agent): 2 of the 6 watches
    assert words == {"ship": 4, "undecided": 2}, words


def test_watch_rounds_are_never_counted_as_the_versions_own_runs(demo, monkeypatch):
    faq = list(demo_agents.FAQ)
    faq[0] = (("運費",), (), "全館免運，運費 0 元。", "ok")
    monkeypatch.setattr(demo_agents, "FAQ", faq)
    code, report, _ = watch(demo)
    assert code == 1
    card = json.loads(exam(demo, "report", "scorecard", "--agent", "W2", "--format",
                           "json").stdout)["scorecards"]
    assert [(c["version"], c["run_ids"]) for c in card] == [("v2", [1])]
    assert "W2: shipped v2 (the first version)" in exam(demo, "ship", "W2").output
    listed = {r["id"]: r["watch_of"] for r in json.loads(exam(demo, "runs", "--format",
                                                              "json").stdout)}
    rounds = report["watch"]["run_ids"]
    assert listed == {1: None, **{i: {"watch": rounds[0], "round": n}
                                  for n, i in enumerate(rounds, 1)}}
    assert f"round 1 of watch {rounds[0]} (exam watch): not counted in v2's reports" in \
        exam(demo, "runs").output
    # the API and the dashboard's runs page say so too
    from exam.web.app import create_app

    app = create_app({"API_TOKEN": "tok", "DB": demo["EXAM_DB"], "AGENTS": demo["EXAM_AGENTS"],
                      "TESTING": True})
    client, auth = app.test_client(), {"Authorization": "Bearer tok"}
    assert client.get(f"/api/runs/{rounds[-1]}", headers=auth).json["watch_of"] == {
        "watch": rounds[0], "round": len(rounds)}
    assert client.get("/api/runs/1", headers=auth).json["watch_of"] is None
    page = client.get("/runs", headers=auth).get_data(as_text=True)
    assert page.count(f'data-watch="{rounds[0]}"') == len(rounds)


def test_a_question_its_runs_at_ship_time_cannot_settle_is_not_asked_again(tmp_path):
    agent = Scripted()
    try:
        env = registry_env(tmp_path, agent.url, write_bank(tmp_path, ["ok", "ok"]))
        agent.script = {"T-01": [PASS, FAIL, FAIL]}  # 1/3 when it shipped
        assert exam(env, "run", "T", "-v", "v1", "-n", "3").exit_code == 1
        agent.script, agent.calls = {"T-01": [FAIL]}, Counter()
        code, report, _ = watch_t(env)
        assert code == 4 and report["verdict"] == "undecided"
        assert report["watch"]["cannot_show"] == [{"case_no": "T-01", "old": "1/3",
                                                   "new": "0/1"}]
        assert agent.calls == {"T-01": 1, "T-02": 1}  # nothing asked again
    finally:
        agent.close()


def watch_t(env, *args):
    r = exam(env, "watch", "T", "--format", "json", *args)
    return r.exit_code, json.loads(r.stdout), r.stderr


def test_a_spent_budget_ends_the_watch_undecided_at_its_last_look(tmp_path):
    agent = Scripted()
    try:
        env = registry_env(tmp_path, agent.url, write_bank(tmp_path, ["ok", "ok"]))
        assert exam(env, "run", "T", "-v", "v1", "-n", "5").exit_code == 0
        agent.script = {"T-01": [FAIL]}
        code, report, _ = watch_t(env, "--budget", "0")
        assert code == 4 and report["watch"]["calls"]["settle"] == 0
        assert report["watch"]["asked_again"] == [] and report["watch"]["next"] is None
        # the last look was read at its final level, not an interim one
        t = next(t for t in report["decision"]["tests"] if t["case_no"] == "T-01")
        assert t["level"] > 0.01 * 0.05
        agent.calls = Counter()
        code, report, _ = watch_t(env, "--budget", "6", "--max-repeats", "7")
        assert code == 1 and report["watch"]["drift"] == ["T-01"], report["decision"]["reason"]
        assert agent.calls["T-01"] == 7 and agent.calls["T-02"] == 1
        assert report["watch"]["calls"]["settle"] == 6
    finally:
        agent.close()


@pytest.mark.parametrize("setup, message", [
    ("nothing", "no counted run of T: nothing has shipped to watch"),
    ("moved", "T v1 was examined at http://127.0.0.1:9/elsewhere; the registry now sends"),
])
def test_what_cannot_be_watched_is_one_line(tmp_path, setup, message):
    agent = Scripted()
    try:
        bank = write_bank(tmp_path, ["ok"])
        if setup == "moved":
            old = registry_env(tmp_path, "http://127.0.0.1:9/elsewhere", bank)
            Store(old["EXAM_DB"]).close()
            # the run was made at another URL: recorded as such by a run that reached nothing
            assert exam(old, "run", "T", "-v", "v1").exit_code == 3
        env = registry_env(tmp_path, agent.url, bank)
        r = exam(env, "watch", "T")
        assert r.exit_code == 2 and message in r.output, r.output
        assert "Traceback" not in r.output
    finally:
        agent.close()


def test_a_ship_decisions_reason_reaches_the_terminal_escaped(tmp_path):
    agent = Scripted()
    try:
        env = registry_env(tmp_path, agent.url, write_bank(tmp_path, ["ok"]))
        assert exam(env, "run", "T", "-v", "v1").exit_code == 0
        assert exam(env, "ship", "T", "v1", "--reason", "ok\x1b[2J\x1b]0;pwned\x07").exit_code == 0
        r = exam(env, "watch", "T")
        assert r.exit_code == 0 and "\x1b" not in r.stdout and "\x07" not in r.stdout
        assert "shipped by hand" in r.stdout and "ok\\x1b[2J" in r.stdout
    finally:
        agent.close()
