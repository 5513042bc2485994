"""The shipped n8n workflows are importable: nodes connected, the API routes they call exist."""

from __future__ import annotations

import json

import pytest

from exam.web.openapi import spec
from tests.conftest import ROOT

FILES = sorted((ROOT / "webhooks" / "n8n").glob("*.json"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_workflow_is_well_formed(path):
    wf = json.loads(path.read_text(encoding="utf-8"))
    names = {n["name"] for n in wf["nodes"]}
    assert all({"name", "type", "typeVersion", "position", "parameters"} <= set(n)
               for n in wf["nodes"])
    for source, outputs in wf["connections"].items():
        assert source in names
        for branch in outputs["main"]:
            assert all(link["node"] in names for link in branch)


def test_after_change_workflow_calls_documented_routes():
    wf = json.loads((ROOT / "webhooks" / "n8n" / "run-exam-after-change.json").read_text())
    text = json.dumps(wf)
    for route in ("/api/runs", "/api/compare"):
        assert route in text and route in spec()["paths"]
    assert "$json.verdict" in text and "regressions.length" not in text


def test_after_change_workflow_compares_with_the_shipped_version_and_records_a_ship():
    wf = json.loads((ROOT / "webhooks" / "n8n" / "run-exam-after-change.json").read_text())
    nodes = {n["name"]: n for n in wf["nodes"]}
    old = next(p for p in nodes["Compare versions"]["parameters"]["queryParameters"]["parameters"]
               if p["name"] == "old")
    assert "|| ''" in old["value"]  # no old in the body: the API's last shipped version
    record = nodes[wf["connections"]["Change is safe"]["main"][0][0]["node"]]
    assert record["parameters"]["method"] == "POST"
    assert record["parameters"]["url"].endswith("/ship")
    assert "/api/agents/{agent}/ship" in spec()["paths"]
    assert "body.new" in record["parameters"]["jsonBody"]
    # only the safe branch records a ship
    blocked = wf["connections"]["Verdict is ship?"]["main"][1][0]["node"]
    assert blocked not in wf["connections"]


def _nodes(name: str) -> tuple[dict, dict]:
    wf = json.loads((ROOT / "webhooks" / "n8n" / name).read_text(encoding="utf-8"))
    return wf, {n["name"]: n for n in wf["nodes"]}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_workflow_runs_on_a_stock_n8n_without_environment_variables(path):
    """n8n 2.x refuses ``$env`` in expressions unless N8N_BLOCK_ENV_ACCESS_IN_NODE=false: where
    agent-exam answers is a Settings node's field, filled in once, read by every HTTP node."""
    text = path.read_text(encoding="utf-8")
    assert "$env" not in text and "process.env" not in text
    wf, nodes = _nodes(path.name)
    calls = [n for n in wf["nodes"] if n["type"] == "n8n-nodes-base.httpRequest"]
    for node in calls:
        assert node["parameters"]["url"].startswith(
            "={{ $('Settings').first().json.exam_url"), node["name"]
        # the token goes only where the Settings node says, never where a caller's body says
        assert "body" not in node["parameters"]["url"].split("}}")[0], node["name"]
    if calls:
        fields = [a["name"] for a in nodes["Settings"]["parameters"]["assignments"]["assignments"]]
        assert fields[0] == "exam_url"
        assert nodes["Settings"]["type"] == "n8n-nodes-base.set"


def test_watch_workflow_is_scheduled_and_steps_the_watch_until_done():
    wf, nodes = _nodes("watch-shipped-version.json")
    (trigger,) = [n for n in wf["nodes"] if n["type"] == "n8n-nodes-base.scheduleTrigger"]
    assert wf["connections"][trigger["name"]]["main"][0][0]["node"] == "Settings"
    assert "/api/watch" in spec()["paths"]
    assert all(nodes[n]["parameters"]["url"].endswith("/api/watch")
               for n in ("Start watch", "Watch step"))
    assert "watch_id" in nodes["Watch step"]["parameters"]["jsonBody"]
    done, again = wf["connections"]["Done?"]["main"]
    assert again[0]["node"] == "Wait" and done[0]["node"] == "No drift?"
    # only ship is "as shipped": hold, incomplete, undecided and pending stop in red
    gate = nodes["No drift?"]["parameters"]["conditions"]["conditions"][0]
    assert (gate["leftValue"], gate["rightValue"]) == ("={{ $json.verdict }}", "ship")
    fine, stop = wf["connections"]["No drift?"]["main"]
    assert nodes[stop[0]["node"]]["type"] == "n8n-nodes-base.stopAndError"
    assert nodes[fine[0]["node"]]["type"] == "n8n-nodes-base.noOp"


def test_capture_workflow_files_the_body_it_was_sent_behind_header_auth():
    wf, nodes = _nodes("capture-bad-answer.json")
    hook = nodes["Bad answer"]["parameters"]
    assert hook["authentication"] == "headerAuth" and hook["responseMode"] == "responseNode"
    assert nodes["File the question"]["parameters"]["url"].endswith("/api/capture")
    assert "/api/capture" in spec()["paths"]
    answer = nodes[wf["connections"]["File the question"]["main"][0][0]["node"]]
    assert answer["parameters"]["options"]["responseCode"] == "={{ $json.statusCode }}"
