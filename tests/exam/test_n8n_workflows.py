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
