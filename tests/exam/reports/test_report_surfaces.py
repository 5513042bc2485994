"""A report is built in one place, the registry, and every surface asks it.

A report kind made up here (its module's worth: build, renderings, a template kept in code,
``register``) reaches the CLI, the API, the OpenAPI document, the dashboard (a page and its
menu link) and the HTML file with no other module changed. And every surface's report of
every shipped kind comes through its kind's ``build``, with the surface's grade source.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter

import pytest
from click.testing import CliRunner

from exam.cli.main import main
from exam.reports import kinds
from exam.reports.formats import render
from exam.reports.inputs import LOCAL
from exam.web.app import create_app
from graders import GRADER_VERSION

TOKEN = "surfaces-token-8c2e"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def stored(history):
    history.bank("A", [("Q-01", "billing", "critical"), ("Q-02", "ship<ping>", "major")])
    history.bank("B", [("B-01", "c", "major")])
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "pfp"})
    history.run("A", "v2", {"Q-01": "pfp", "Q-02": "hpp"})
    history.run("B", "v1", {"B-01": "ppt"})
    return history


def _app(history):
    app = create_app({"API_TOKEN": TOKEN, "DB": str(history.store.path), "TESTING": True})
    page = app.test_client()
    form = page.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    page.post("/login", data={"token": TOKEN, "csrf_token": csrf})
    return app, app.test_client(), page


def _cli(history, *args: str):
    return CliRunner().invoke(main, [*args, "--db", str(history.store.path)])


# -- a new report kind, registered here -------------------------------------------------

def verdicts(inputs: kinds.Inputs, args: kinds.Args) -> kinds.Report:
    regraded = inputs.cells()
    counted = Counter((c.agent, c.verdict or c.run_status) for c in regraded.cells)
    return {"grader_version": GRADER_VERSION, "bank_digests": regraded.bank_digests(),
            "rows": [{"agent": a, "verdict": v, "cells": n} for (a, v), n in sorted(counted.items())],
            "missing_banks": regraded.missing_banks}


def verdicts_text(report, colour=False):
    return "\n".join(f"{r['agent']} {r['verdict']} {r['cells']}" for r in report["rows"])


@pytest.fixture
def tally():
    kind = kinds.register(kinds.ReportKind(
        name="tally", text=verdicts_text, build=verdicts,
        table=lambda r: (["agent", "verdict", "cells"],
                         [[x["agent"], x["verdict"], x["cells"]] for x in r["rows"]]),
        html_template="_tally.html", summary="Cells per agent and verdict",
        templates={"_tally.html": "<ul class=tally>{% for r in report.rows %}<li>{{ r.agent }} "
                                  "{{ r.verdict }} {{ r.cells }}</li>{% endfor %}</ul>"}))
    yield kind
    kinds.unregister("tally")


WANT = [{"agent": "A", "verdict": "fail", "cells": 2}, {"agent": "A", "verdict": "needs_human",
                                                        "cells": 1},
        {"agent": "A", "verdict": "pass", "cells": 9}]


def test_a_new_report_kind_is_on_every_surface_with_no_other_module_changed(stored, tally):
    made = kinds.build("tally", stored.store, LOCAL, agent="A")
    assert made["rows"] == WANT
    # the CLI: `exam report tally`, its params as options, the formats it renders
    out = _cli(stored, "report", "tally", "--agent", "A", "--format", "json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == made
    text = _cli(stored, "report", "tally", "--agent", "A")
    assert text.output == "A fail 2\nA needs_human 1\nA pass 9\n"
    assert "tally" in CliRunner().invoke(main, ["report", "--help"]).output
    refused = _cli(stored, "report", "tally", "--format", "junit")
    assert refused.exit_code == 2 and "'junit' is not one of" in refused.output
    missing = _cli(stored, "report", "tally", "--agent", "Z")
    assert missing.exit_code == 2 and "no stored runs match agent Z" in missing.output
    # the API: GET /api/reports/tally, and its OpenAPI entry
    app, api, page = _app(stored)
    resp = api.get("/api/reports/tally?agent=A", headers=AUTH)
    assert resp.status_code == 200 and resp.json == made
    gone = api.get("/api/reports/tally?agent=Z", headers=AUTH)
    assert gone.status_code == 404 and "no stored runs match agent Z" in gone.json["error"]
    entry = api.get("/api/openapi.json", headers=AUTH).json["paths"]["/api/reports/tally"]
    assert entry["get"]["summary"] == "Cells per agent and verdict"
    assert [(p["name"], p["in"]) for p in entry["get"]["parameters"]] == [
        ("agent", "query"), ("version", "query")]
    # the dashboard: its page (the template kept in code) and a link in the menu
    html = page.get("/reports/tally?agent=A").get_data(as_text=True)
    assert '<ul class=tally><li>A fail 2</li><li>A needs_human 1</li><li>A pass 9</li></ul>' \
        in html
    assert '<a href="/reports/tally">Tally</a>' in page.get("/").get_data(as_text=True)
    assert "no stored runs match agent Z" in page.get("/reports/tally?agent=Z").get_data(
        as_text=True)
    # the HTML file
    assert "<li>A pass 9</li>" in render("tally", made, "html")


def test_a_kind_registered_after_the_app_was_made_breaks_no_page(stored):
    """Routes are made with the app: a kind registered later has none yet, and the menu
    leaves it out rather than failing every page."""
    _, _, page = _app(stored)
    kinds.register(kinds.ReportKind(name="late", text=verdicts_text, build=verdicts,
                                    html_template="report.html"))
    try:
        resp = page.get("/")
        assert resp.status_code == 200 and "/reports/late" not in resp.get_data(as_text=True)
    finally:
        kinds.unregister("late")


@pytest.mark.parametrize(("query", "message"), [
    ("k=abc", "k: expected a whole number ≥ 1, found 'abc'"),
    ("k=0", "k: expected a whole number ≥ 1, found '0'"),
    ("k=" + "9" * 5000, "k: expected a whole number ≥ 1, found '99999999999999999999'"),
])
def test_a_bad_argument_is_a_400_naming_it(stored, query, message):
    _, api, _ = _app(stored)
    resp = api.get(f"/api/discrimination?{query}", headers=AUTH)
    assert (resp.status_code, resp.json) == (400, {"error": message, "field": "k"})


# -- every surface of every shipped kind goes through the registry ----------------------

@pytest.fixture
def built(monkeypatch):
    """(kind, grade source) of every report built through the registry."""
    seen: list[tuple[str, str]] = []
    for name in kinds.names():
        kind = kinds.get(name)
        if kind.build is None:
            continue

        def spy(inputs, args, real=kind.build, name=name):
            seen.append((name, inputs.grades.name))
            return real(inputs, args)

        monkeypatch.setitem(kinds._KINDS, name, dataclasses.replace(kind, build=spy))
    return seen


def test_the_cli_builds_every_report_through_the_registry_on_every_core(stored, built):
    for args in (["report", "scorecard", "--agent", "A"], ["report", "discrimination"],
                 ["report", "rebalance"], ["compare", "A", "v1", "v2", "--fail-on", "never"]):
        assert _cli(stored, *args).exit_code == 0, args
    assert built == [("scorecard", "cli"), ("discrimination", "cli"), ("rebalance", "cli"),
                     ("compare", "cli")]


def test_the_api_and_the_dashboard_build_every_report_through_the_registry(stored, built):
    _, api, page = _app(stored)
    for path in ("/api/runs/1/scorecard", "/api/compare?agent=A&old=v1&new=v2",
                 "/api/discrimination?agent=A"):
        assert api.get(path, headers=AUTH).status_code == 200, path
    for path in ("/", "/runs", "/scorecard/A/v1", "/compare?agent=A&old=v1&new=v2",
                 "/discrimination"):
        assert page.get(path).status_code == 200, path
    assert built == [("scorecard", "service"), ("compare", "service"),
                     ("discrimination", "service"), ("overview", "service"),
                     ("overview", "service"), ("scorecard", "service"),
                     ("compare", "service"),  # the scorecard page's verdict of its version
                     ("compare", "service"), ("discrimination", "service")]


def test_notifications_and_line_build_their_reports_through_the_registry(stored, built):
    from exam.notify.line_chat import command
    from exam.notify.summary import summaries_for

    assert [s.version for s in summaries_for(stored.store, [2])] == ["v2"]
    assert "B v1" in command(stored.store, ["scorecard", "B"], None, {})
    assert built == [("scorecard", "local"), ("compare", "local"), ("scorecard", "service")]


def test_the_api_answer_is_the_cli_report(stored):
    """One build, whatever asks: the JSON of the API and of the CLI are the same report."""
    _, api, _ = _app(stored)
    for cli_args, path in ((["report", "discrimination", "--agent", "A"],
                            "/api/discrimination?agent=A"),
                           (["compare", "A", "v1", "v2", "--fail-on", "never"],
                            "/api/compare?agent=A&old=v1&new=v2"),
                           (["report", "scorecard", "--run", "1"], "/api/runs/1/scorecard")):
        out = _cli(stored, *cli_args, "--format", "json")
        assert out.exit_code == 0, out.output
        assert json.loads(out.output) == _whole(api.get(path, headers=AUTH).json), path


def _whole(answer: dict) -> dict:
    """An API answer without what says which page of the cells it lists (its page here
    holds every cell: the CLI's JSON lists them all)."""
    page = answer.pop("cells_page", None)
    if page is not None:
        assert page["listed"] == page["total"] and page["next"] is None
        for card in answer["scorecards"]:
            for case in card["cases"]:
                assert case.pop("cells_total") == len(case["cells"])
    return answer
