"""Reports are registered, not switched: formats dispatch over exam/reports/kinds.py.

A report kind made up here renders in every format without a change to formats.py; every
shipped kind renders in every format it claims, and exactly as before the registry (golden
files made by the code it replaced).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

import click
import pytest
from click.testing import CliRunner

from exam.cli.common import ExamGroup, print_report
from exam.errors import ExamError
from exam.reports import compare, discrimination, kinds, rebalance, scorecard
from exam.reports.formats import FORMATS, render
from exam.reports.regrade import regrade
from exam.reports.selection import select_runs

GOLDEN = Path(__file__).parent / "golden"
SHIPPED = ("scorecard", "compare", "discrimination", "rebalance")


@pytest.fixture
def reports(history):
    """One report of each shipped kind over three versions with fails, needs_human, timeouts."""
    history.bank("A", [("Q-01", "billing", "critical"), ("Q-02", "billing", "major"),
                       ("Q-03", "ship|ping", "minor"), ("Q-04", "ship|ping", "major")])
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "pfp", "Q-03": "hhp", "Q-04": "ppp"})
    history.run("A", "v2", {"Q-01": "fff", "Q-02": "ppp", "Q-03": "ptp", "Q-04": "ppp"})
    history.run("A", "v3", {"Q-01": "pfp", "Q-02": "ppf", "Q-03": "ttt", "Q-04": "ppp"})
    regraded = regrade(history.store, select_runs(history.store))
    return {"scorecard": scorecard.build(regraded),
            "compare": compare.build(regraded, "A", "v1", "v2"),
            "discrimination": discrimination.build(regraded, "A"),
            "rebalance": rebalance.build(regraded, None,
                                         rebalance.RebalanceRules(min_versions=2, min_repeats=3))}


def errands_text(report, colour=False):
    return "\n".join(f"{e['who']}: {e['task']} ({e['state']})" for e in report["errands"])


def errands_table(report):
    return ["who", "task", "state"], [[e["who"], e["task"], e["state"]]
                                      for e in report["errands"]]


def errands_junit(report):
    return [("errands", e["task"], e["state"] if e["state"] == "late" else None, None)
            for e in report["errands"]]


ERRANDS = {"grader_version": "test", "bank_digests": {},
           "errands": [{"who": "Ana", "task": "post | parcel", "state": "done"},
                       {"who": "Bo", "task": "buy <milk>", "state": "late"}]}


@pytest.fixture
def errands():
    """A report kind that exists only in this test."""
    kind = kinds.register(kinds.ReportKind(
        name="errands", text=errands_text, table=errands_table, junit_cases=errands_junit,
        html_template="_errands.html", html_title=lambda r: f"{len(r['errands'])} errands",
        templates={"_errands.html": "<ul>{% for e in report.errands %}"
                                    "<li>{{ e.who }}: {{ e.task }}</li>{% endfor %}</ul>"}))
    yield kind
    kinds.unregister("errands")


def test_a_new_report_kind_renders_in_every_format_without_touching_formats(errands):
    assert errands.formats == FORMATS
    assert render("errands", ERRANDS, "text") == "Ana: post | parcel (done)\nBo: buy <milk> (late)"
    assert json.loads(render("errands", ERRANDS, "json")) == ERRANDS
    assert render("errands", ERRANDS, "csv") == ("who,task,state\nAna,post | parcel,done\n"
                                                  "Bo,buy <milk>,late\n")
    md = render("errands", ERRANDS, "markdown")
    assert md.startswith("# agent-exam errands\n\nGrader test\n\n| who | task | state |\n")
    assert "| Ana | post \\| parcel | done |" in md
    suites = ElementTree.fromstring(render("errands", ERRANDS, "junit"))
    cases = suites.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["post | parcel", "buy <milk>"]
    assert [c.find("failure") is not None for c in cases] == [False, True]
    page = render("errands", ERRANDS, "html")
    assert "<title>2 errands · agent-exam errands</title>" in page
    assert "<h1>2 errands</h1>" in page
    assert "<li>Bo: buy &lt;milk&gt;</li>" in page  # the kind's template, autoescaped


def test_a_kind_offers_only_the_formats_it_renders():
    kind = kinds.register(kinds.ReportKind(name="bare", text=lambda r, c=False: "bare"))
    try:
        assert kind.formats == ("text", "json")
        assert render("bare", {}, "text") == "bare"
        for fmt in ("csv", "markdown", "junit", "html"):
            with pytest.raises(ExamError, match=f"the bare report has no {fmt} format "
                                                r"\(formats: text, json\)"):
                render("bare", {}, fmt)
    finally:
        kinds.unregister("bare")


def test_a_format_a_kind_does_not_render_is_one_line_and_exit_2_on_the_cli():
    """A report command prints through ``print_report``; ExamGroup turns the refusal into
    bad input, not a traceback."""

    @click.group(cls=ExamGroup)
    def cli():
        pass

    @cli.command("bare")
    @click.option("--format", "fmt")
    def bare(fmt):
        print_report("bare", {}, fmt)

    kinds.register(kinds.ReportKind(name="bare", text=lambda r, c=False: "bare"))
    try:
        ok = CliRunner().invoke(cli, ["bare", "--format", "text"])
        refused = CliRunner().invoke(cli, ["bare", "--format", "junit"])
    finally:
        kinds.unregister("bare")
    assert ok.exit_code == 0 and ok.output == "bare\n"
    assert refused.exit_code == 2 and refused.exception.__class__ is SystemExit
    assert refused.output == ("Error: the bare report has no junit format "
                              "(formats: text, json)\n")


def test_an_unknown_kind_names_the_known_ones():
    with pytest.raises(ExamError, match=r"no report kind 'nope' \(kinds: .*scorecard"):
        render("nope", {}, "text")


def test_every_shipped_kind_is_registered_with_every_format():
    assert set(SHIPPED) <= set(kinds.names())
    for name in SHIPPED:
        assert kinds.get(name).formats == FORMATS, name


@pytest.mark.parametrize("name", SHIPPED)
def test_every_registered_kind_renders_in_every_format_it_claims(reports, name):
    report = reports[name]
    for fmt in kinds.get(name).formats:
        out = render(name, report, fmt)
        assert out.strip(), (name, fmt)
        if fmt == "markdown":  # more than the common heading
            assert len(out.splitlines()) > 4 and "| " in out.split("Grader", 1)[1], name
        if fmt == "csv":
            assert len(out.splitlines()) > 1, name
        if fmt == "junit":
            assert ElementTree.fromstring(out).findall("testsuite/testcase"), name


@pytest.mark.parametrize("name", SHIPPED)
@pytest.mark.parametrize("fmt", ["text", "text.colour", "markdown", "csv", "junit"])
def test_shipped_reports_render_exactly_as_before_the_registry(reports, name, fmt):
    out = render(name, reports[name], fmt.split(".")[0], colour=fmt.endswith("colour"))
    assert out == (GOLDEN / f"{name}.{fmt}").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", SHIPPED)
def test_the_html_file_keeps_its_title_and_body(reports, name):
    page = render(name, reports[name], "html")
    title = {"scorecard": "Scorecard", "compare": "A: v1 → v2",
             "discrimination": "Discrimination", "rebalance": "Rebalance"}[name]
    assert re.search(rf"<title>{re.escape(title)} · agent-exam {name}</title>", page)
    # report.html adds the heading only where the kind's body has none of its own
    headings = {"scorecard": [], "compare": ["A: v1 → v2"], "discrimination": ["Discrimination"],
                "rebalance": ["Rebalance"]}[name]
    assert re.findall(r"<h1>([^<]*)</h1>", page) == headings


def test_the_text_scorecard_without_clean_cells_reads_the_same_as_with_every_cell(history):
    """The text scorecard leaves out the cells of questions that passed every repeat (their
    dicts were most of its memory on a large run): what it prints must not change."""
    history.bank("A", [(f"Q-{i:02d}", "c" if i % 2 else "d", "critical" if i == 3 else "major")
                       for i in range(1, 7)])
    history.run("A", "v1", {"Q-01": "ppp", "Q-02": "pfp", "Q-03": "fff", "Q-04": "php",
                            "Q-05": "ptp", "Q-06": "ppp"})
    history.run("A", "v2", {"Q-01": "ppp", "Q-02": "ppp", "Q-03": "pfh", "Q-04": "ppp",
                            "Q-05": "ppp", "Q-06": "tpt"})
    regraded = regrade(history.store, history.store.list_runs())
    full, lean = scorecard.build(regraded), scorecard.build(regraded, every_cell=False)
    for details in (True, False):
        assert scorecard.render_text(lean, details=details) == \
            scorecard.render_text(full, details=details)
    left_out = [case["case_no"] for card in lean["scorecards"] for case in card["cases"]
                if not case["cells"]]
    assert sorted(left_out) == ["Q-01", "Q-01", "Q-02", "Q-04", "Q-05", "Q-06"]
    assert {k: v for k, v in lean.items() if k != "scorecards"} == \
        {k: v for k, v in full.items() if k != "scorecards"}
    for a, b in zip(lean["scorecards"], full["scorecards"], strict=True):
        assert {k: v for k, v in a.items() if k != "cases"} == \
            {k: v for k, v in b.items() if k != "cases"}


def test_a_question_with_many_repeats_is_shown_by_kind_of_failure(history):
    """Past 5 repeats the text scorecard groups a question's failing repeats by which checks
    failed and its unanswered ones by error, instead of a block per repeat."""
    history.bank("A", [("Q-01", "c", "major"), ("Q-02", "c", "major"), ("Q-03", "c", "major")])
    history.run("A", "v1", {"Q-01": "pffpfffpfffff", "Q-02": "hhtttppp", "Q-03": "fpfpf"},
                errors={"Q-02": "no reply within 30 s"})
    text = scorecard.render_text(scorecard.build(regrade(history.store,
                                                         history.store.list_runs())))
    lines = text.splitlines()
    q1 = lines[lines.index(next(x for x in lines if "Q-01" in x)):]
    assert q1[0].strip().startswith("FAIL") and q1[0].endswith("pass 3/13")
    assert q1[1].strip() == "fail in 10 repeat(s): #2, #3, #5, #6, #7, #9, #10, #11 and 2 more"
    assert q1[2].strip() == "✗ fact[0]  not found in the reply"  # the first such repeat's
    assert q1[4].strip().startswith("✗ forbidden[0]  asserted:")
    assert not any(x.strip().startswith("#") for x in q1[:6])
    assert "      needs_human in 2 repeat(s): #1, #2" in lines
    assert "      timeout in 3 repeat(s): #3, #4, #5" in lines
    assert "          no reply within 30 s" in lines
    # 5 repeats or fewer: repeat by repeat, as before
    q3 = lines[lines.index(next(x for x in lines if "Q-03" in x)) + 1:]
    assert q3[0].strip().startswith("#1 run 1: fail")
