"""One verdict per pair of versions: the new version is every counted run of it, wherever the
verdict is read (exam run --against, exam notify --run N, exam compare, the API, the
dashboard's compare and overview pages, the n8n after-change workflow)."""

from __future__ import annotations

import json
import os
import re

import yaml
from click.testing import CliRunner

from exam.cli.main import main
from exam.web.app import create_app
from tests.conftest import ROOT
from tests.exam.conftest import PASS
from tests.fakes.server import QuietHandler, send_json, serve

CASES = [("Q-01", "c", "major"), ("Q-02", "c", "major"), ("Q-03", "c", "major")]
TOKEN = "admin-token"


class Passing(QuietHandler):
    """An agent that now answers every question right."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        send_json(self, 200, {"answer": PASS})


def _env(history, url):
    registry = history.tmp / "agents.yaml"
    registry.write_text(yaml.safe_dump({"agents": {"A": {
        "url": url, "bank": history.banks["A"], "timeout_s": 5}}}))
    return {**os.environ, "EXAM_DB": str(history.tmp / "exam.db"),
            "EXAM_AGENTS": str(registry)}


def _n8n_word(client, body):
    """The after-change workflow's compare and branch, read from its file: the query it sends
    (the body's old missing, as a deploy step sends it) and the If node's condition."""
    wf = json.loads((ROOT / "webhooks" / "n8n" / "run-exam-after-change.json").read_text())
    node = next(n for n in wf["nodes"] if n["name"] == "Compare versions")
    query = {}
    for p in node["parameters"]["queryParameters"]["parameters"]:
        field = re.search(r"body\.(\w+)", p["value"]).group(1)
        query[p["name"]] = body.get(field) or ""  # `|| ''`: a missing old is sent empty
    answer = client.get("/api/compare", query_string=query,
                        headers={"Authorization": f"Bearer {TOKEN}"}).json
    gate = next(n for n in wf["nodes"] if n["name"] == "Verdict is ship?")
    cond = gate["parameters"]["conditions"]["conditions"][0]
    branch = 0 if answer["verdict"] == cond["rightValue"] else 1
    taken = wf["connections"][gate["name"]]["main"][branch][0]["node"]
    return answer["verdict"], taken


def test_the_same_pair_gives_the_same_word_everywhere(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "ppp"})
    history.run("A", "v2", {"Q-01": "fff", "Q-02": "ppp", "Q-03": "ppp"})
    words = {}
    with serve(Passing) as url:
        env = _env(history, url)
        # the second run of v2 passes everything: read alone it would ship
        ran = CliRunner().invoke(main, ["run", "A", "-v", "v2", "-n", "3", "--against", "v1",
                                        "--format", "json"], env=env)
    report = json.loads(ran.stdout)  # JSON alone on stdout
    words["run --against"] = report["verdict"]
    assert report["new_run_ids"] == [2, 3], report["new_run_ids"]
    run_id = report["new_run_ids"][-1]
    cli = CliRunner()
    words["compare OLD NEW"] = json.loads(cli.invoke(
        main, ["compare", "A", "v1", "v2", "--format", "json"], env=env).stdout)["verdict"]
    words["compare NEW"] = json.loads(cli.invoke(
        main, ["compare", "A", "v2", "--format", "json"], env=env).stdout)["verdict"]
    out = history.tmp / "line.json"
    preview = cli.invoke(main, ["notify", "line", "--run", str(run_id), "--dry-run",
                                "--out", str(out)], env=env)
    assert preview.exit_code == 0, preview.output
    said = re.findall(r"verdict: (\w+) vs v1, last shipped", out.read_text())
    assert said, out.read_text()
    words["notify line --run N"] = said[0].lower()
    app = create_app({"API_TOKEN": TOKEN, "DB": str(history.tmp / "exam.db"),
                      "AGENTS": env["EXAM_AGENTS"], "TESTING": True})
    with app.test_client() as client:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        words["API"] = client.get("/api/compare?agent=A&old=v1&new=v2", headers=auth).json[
            "verdict"]
        page = client.get("/compare?agent=A", headers=auth).text
        words["dashboard compare"] = re.search(r'id="verdict" data-verdict="(\w+)"', page)[1]
        assert 'data-baseline="v1"' in page and "vs v1, last shipped" in page
        overview = client.get("/", headers=auth).text
        row = overview.split('data-version="v2"', 1)[1].split("</tr>", 1)[0]
        words["dashboard overview"] = re.search(r'data-verdict="(\w+)"', row)[1]
        words["n8n"], taken = _n8n_word(client, {"agent": "A", "new": "v2"})
    assert len(set(words.values())) == 1, words
    # and it is the word of every run together: v1 3/3 against v2 3/6 on Q-01 is no ship
    assert words["API"] != "ship" and taken == "Block the change"


def test_run_against_json_is_json_alone(history):
    history.bank("A", CASES)
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "ppp"})
    with serve(Passing) as url:
        ran = CliRunner().invoke(main, ["run", "A", "-v", "v2", "-n", "3", "--against",
                                        "shipped", "--format", "json"], env=_env(history, url))
    assert ran.exit_code == 0, ran.output
    report = json.loads(ran.stdout)
    assert report["verdict"] == "ship" and report["baseline"]["label"] == "v1, last shipped"
