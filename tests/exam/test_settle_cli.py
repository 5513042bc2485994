"""`exam compare --settle` end to end: real runs of the new version against an agent on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler

from click.testing import CliRunner

from exam.cli.main import main
from tests.exam.helpers import registry_env, write_bank
from tests.fakes.server import send_json, serve

PASS, FAIL = "答案：備貨中", "答案：已出貨"


class Scripted:
    """Answers each task_id from a script (then repeats the script's last answer)."""

    def __init__(self):
        self.script: dict[str, list[str]] = {}
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()
        self.on_call = None  # called before each answer (a test's look at the store)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if owner.on_call is not None:
                    owner.on_call()
                task = body["task_id"]
                with owner.lock:
                    n = owner.calls.get(task, 0)
                    owner.calls[task] = n + 1
                    answers = owner.script.get(task, [PASS])
                    text = answers[min(n, len(answers) - 1)]
                send_json(self, 200, {"answer": text})

        self.served = serve(Handler).start()
        self.url = self.served.url + "/hook"

    def close(self):
        self.served.close()


def test_settle_reruns_the_unsettled_questions_until_it_holds(tmp_path):
    agent = Scripted()
    try:
        bank = write_bank(tmp_path, ["ok", "ok", "ok"], expect_forbidden=["已出貨"])
        env = registry_env(tmp_path, agent.url, bank)
        run = CliRunner().invoke
        assert run(main, ["run", "T", "-v", "v1", "-n", "10"], env=env).exit_code == 0
        agent.script = {"T-01": [FAIL, PASS, PASS, FAIL]}  # the new version: 2/3, then failing
        agent.calls.clear()
        first = run(main, ["run", "T", "-v", "v2", "-n", "3"], env=env)
        assert first.exit_code == 1
        undecided = run(main, ["compare", "T", "v1", "v2"], env=env)
        assert undecided.exit_code == 4 and "VERDICT: UNDECIDED" in undecided.output
        # an undecided verdict says how to decide it, as pending says `exam review`
        assert "next: exam compare T v1 v2 --settle" in undecided.stderr
        settled = run(main, ["compare", "T", "v1", "v2", "--settle", "--format", "json"],
                      env=env)
        assert settled.exit_code == 1, settled.output
        report = json.loads(settled.stdout)
        assert report["verdict"] == "hold" and report["regressions"][0]["case_no"] == "T-01"
        s = report["settle"]
        # T-02 and T-03 (10/10 → 3/3) cannot yet rule out a 20-point drop: asked again too
        extra = sum(n - 3 for n in agent.calls.values())
        assert s["questions"] == ["T-01", "T-02", "T-03"] and s["sides"] == 1
        assert s["calls_spent"] == extra and agent.calls["T-01"] > 3
        assert s["calls_saved"] == s["calls_whole_bank"] - extra
        assert f"{extra} agent call(s) spent" in settled.stderr
        # v1 cannot be asked again: what its repeats allow is said before the first call
        said = settled.stderr
        assert "v1 cannot be asked again" in said
        assert said.index("v1 cannot be asked again") < said.index("settle: run")
    finally:
        agent.close()


def test_settle_asks_the_old_version_again_when_its_url_is_given(tmp_path):
    old, new = Scripted(), Scripted()
    try:
        bank = write_bank(tmp_path, ["ok", "ok", "ok"], expect_forbidden=["已出貨"])
        run = CliRunner().invoke
        env = registry_env(tmp_path, old.url, bank)
        assert run(main, ["run", "T", "-v", "v1", "-n", "3"], env=env).exit_code == 0
        env = registry_env(tmp_path, new.url, bank)  # the registry now points at v2
        new.script = {"T-01": [FAIL, PASS, FAIL]}  # then failing
        assert run(main, ["run", "T", "-v", "v2", "-n", "3"], env=env).exit_code == 1
        assert run(main, ["compare", "T", "v1", "v2"], env=env).exit_code == 4
        settled = run(main, ["compare", "T", "v1", "v2", "--settle", "--old-url", old.url,
                             "--format", "json"], env=env)
        assert settled.exit_code == 1, settled.output
        report = json.loads(settled.stdout)
        assert report["verdict"] == "hold" and report["regressions"][0]["case_no"] == "T-01"
        s = report["settle"]
        assert s["sides"] == 2 and "cannot be asked again" not in settled.stderr
        old_extra = sum(n - 3 for n in old.calls.values())
        new_extra = sum(n - 3 for n in new.calls.values())
        assert old_extra == new_extra > 0 and s["calls_spent"] == old_extra + new_extra
        assert "(v1): T-01" in settled.stderr  # OLD's settle runs, recorded as v1
        # OLD's new repeats are part of its baseline now
        held = report["decision"]["hold"][0]
        assert held["old"] == f"{old.calls['T-01']}/{old.calls['T-01']}"
        bad = run(main, ["compare", "T", "v1", "v2", "--settle", "--old-url",
                         "http://user:pw@127.0.0.1:9/x"], env=env)
        assert bad.exit_code == 2 and "pw" not in bad.output
    finally:
        old.close()
        new.close()


def test_a_settle_run_is_held_by_a_lease_as_exam_run_is(tmp_path):
    # without one, a settle process that died read `running` from every other host for good:
    # `exam resume` there refused it and every compare of the version stayed incomplete
    from exam.store import Store

    agent = Scripted()
    leases: list[float | None] = []
    try:
        bank = write_bank(tmp_path, ["ok", "ok", "ok"], expect_forbidden=["已出貨"])
        env = registry_env(tmp_path, agent.url, bank)
        run = CliRunner().invoke
        assert run(main, ["run", "T", "-v", "v1", "-n", "10"], env=env).exit_code == 0
        agent.script = {"T-01": [FAIL, PASS, PASS, FAIL]}
        assert run(main, ["run", "T", "-v", "v2", "-n", "3"], env=env).exit_code == 1
        store = Store(env["EXAM_DB"])
        before = max(r.id for r in store.list_runs())

        def look():  # the store as another host reads it while the settle run sends
            newest = max(store.list_runs(), key=lambda r: r.id)
            if newest.id > before:
                leases.append(newest.lease_until)

        agent.on_call = look
        settled = run(main, ["compare", "T", "v1", "v2", "--settle"], env=env)
        assert settled.exit_code == 1, settled.output
        store.close()
    finally:
        agent.close()
    assert leases and all(until is not None for until in leases)


def test_settle_rounds_are_runs_of_the_new_version_listed_under_their_comparison(tmp_path):
    from exam.web.app import create_app

    agent = Scripted()
    try:
        bank = write_bank(tmp_path, ["ok", "ok", "ok"], expect_forbidden=["已出貨"])
        env = registry_env(tmp_path, agent.url, bank)
        run = CliRunner().invoke
        assert run(main, ["run", "T", "-v", "v1", "-n", "10"], env=env).exit_code == 0
        # a third of its answers fail: neither held nor cleared at once, so settle spends
        agent.script = {"T-01": [FAIL, PASS, PASS] + [PASS, FAIL, PASS] * 10}
        run(main, ["run", "T", "-v", "v2", "-n", "3"], env=env)
        settled = json.loads(run(main, ["compare", "T", "v1", "v2", "--settle", "--budget", "9",
                                        "--format", "json"], env=env).stdout)
        rounds = [i for i in settled["new_run_ids"] if i > 2]
        assert rounds, settled["new_run_ids"]  # its rounds count in v2's verdict
        listed = json.loads(run(main, ["runs", "--format", "json"], env=env).stdout)
        assert {r["id"] for r in listed if r["settle_of"]} == set(rounds)
        assert all(r["settle_of"] == {"old": "v1", "new": "v2"} for r in listed
                   if r["settle_of"])
        text = run(main, ["runs"], env=env).stdout.splitlines()
        said = [line for line in text if "settle round(s)" in line]
        assert len(said) == 1 and f"{len(rounds)} settle round(s) of exam compare T v1 v2" \
            in said[0]
        assert len(text) == 1 + 2 + 1  # the head, runs 1 and 2, one line for the rounds
        app = create_app({"API_TOKEN": "t", "DB": env["EXAM_DB"], "TESTING": True})
        with app.test_client() as client:
            page = client.get("/runs", headers={"Authorization": "Bearer t"}).text
            api = client.get("/api/runs", headers={"Authorization": "Bearer t"}).json["runs"]
        assert {r["run_id"] for r in api if r["settle_of"]} == set(rounds)
        assert page.count('data-settle="v1→v2"') == 1
        assert page.count("<tr") == 1 + 2 + 1
    finally:
        agent.close()
