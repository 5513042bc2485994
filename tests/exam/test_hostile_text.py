"""What agents and labels can inject: spreadsheet formulas, terminal escapes, XML that CI
cannot read, labels that break URLs, headings and LINE messages."""

from __future__ import annotations

import csv
import io
import json
import xml.dom.minidom
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from exam import names, review
from exam.cli.main import main
from exam.errors import ExamError, RegistryError
from exam.notify.line import build_messages
from exam.pipeline.registry import parse_registry
from exam.reports.formats import to_junit
from exam.textsafe import csv_cell, csv_uncell, terminal, xml_text

HOSTILE = ['=HYPERLINK("http://evil.example","click")', "+1+cmd|' /C calc'!A0", "-2+3",
           "@SUM(A1:A9)", "\tTAB", "\rCR", "'quoted", "''twice", "'=already", "plain "]
CASES = [(f"Q-{i:02d}", "c", "major") for i in range(1, len(HOSTILE) + 1)]
CONTROL = "\x1b[2J\x1b]0;pwned\x07\x00\u202e"


def cli(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize("value", HOSTILE)
def test_a_cell_starting_like_a_formula_is_neutralised_and_restored(value):
    cell = csv_cell(value)
    assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert csv_uncell(cell) == value


@pytest.mark.parametrize("number", ["-0.12", "+3", "-1e-05", "42", "0.5"])
def test_plain_numbers_stay_numbers(number):
    assert csv_cell(number) == number


def test_review_export_neutralises_replies_and_import_reads_them_back_unchanged(history):
    history.bank("A", CASES)
    texts = {c: HOSTILE[i] for i, (c, _, _) in enumerate(CASES)}
    history.run("A", "v1", {c: "h" for c, _, _ in CASES}, texts=texts)
    path = history.tmp / "q.csv"
    db = str(history.tmp / "exam.db")
    assert f"{len(CASES)} item(s) written" in cli("review", "--export", str(path), "--db", db).output
    raw = path.read_bytes().decode("utf-8")  # as written: a CR inside a cell stays a CR
    rows = list(csv.DictReader(io.StringIO(raw, newline="")))
    for row in rows:  # what a spreadsheet sees: no cell starts a formula
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), value
    by_case = {r["case_no"]: r for r in rows}
    for case_no, prefix in texts.items():
        assert csv_uncell(by_case[case_no]["reply"]).startswith(prefix)
    for row in rows:
        row.update(decision="pass", reviewer="=Lin", reason="-looks fine")
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=review.EXPORT_FIELDS)
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8", newline="")
    result = cli("review", "--import", str(path), "--db", db)
    assert f"{len(CASES)} decision(s) stored" in result.output
    stored = history.store.adjudications()
    assert {a["case_no"] for a in stored} == set(texts)
    assert {a["reviewer"] for a in stored} == {"=Lin"}  # typed by a person: kept as typed
    assert cli("review", "--export", str(path), "--db", db).output.startswith("0 item(s)")


def _unchecked_run(history, monkeypatch, label, **kw):
    """A run stored before labels were checked (or by an older version of the tool)."""
    monkeypatch.setattr(names, "check", lambda kind, value: value)
    return history.run("A", label, **kw)


def test_report_csv_neutralises_a_label_that_came_from_elsewhere(history, monkeypatch):
    history.bank("A", CASES[:1])
    _unchecked_run(history, monkeypatch, '=HYPERLINK("http://evil.example")', outcomes={
        "Q-01": "f"})
    db = str(history.tmp / "exam.db")
    for kind in ("scorecard", "discrimination"):
        out = cli("report", kind, "--format", "csv", "--db", db).output
        rows = list(csv.reader(io.StringIO(out)))
        cells = [c for row in rows for c in row]
        assert not [c for c in cells if c.startswith("=")], kind
        assert "'=HYPERLINK(\"http://evil.example\")" in cells


def _assert_parses(xml_text_out: str) -> None:
    ET.fromstring(xml_text_out.encode("utf-8"))
    xml.dom.minidom.parseString(xml_text_out.encode("utf-8"))


def test_junit_from_a_reply_with_control_characters_parses_strictly(history):
    history.bank("A", CASES[:2])
    history.run("A", "v1", {"Q-01": "f", "Q-02": "t"}, texts={"Q-01": CONTROL + "\ufffe"},
                errors={"Q-02": "HTTP 500: " + CONTROL})
    db = str(history.tmp / "exam.db")
    for cmd in (["report", "scorecard"], ["report", "discrimination"]):
        out = cli(*cmd, "--format", "junit", "--db", db).output
        _assert_parses(out)
    assert "\\x1b[2J" in cli("report", "scorecard", "--format", "junit", "--db", db).output


def test_junit_with_lone_surrogates_and_nul_parses_strictly():
    report = {"scorecards": [{"agent": "A", "version": "v\ud800", "cases": [
        {"case_no": "Q-01\x00", "cells": [{"verdict": "fail", "repeat": 1, "checks": [
            {"name": "fact[0]", "outcome": "fail", "evidence": "x\udfff\x1b\x0c\ufffe"}]}]},
        {"case_no": "Q-02", "cells": [{"verdict": None, "run_status": "http_error",
                                       "error": "\x00\x1b", "checks": []}]}]}]}
    _assert_parses(to_junit("scorecard", report))


def test_xml_text_keeps_what_xml_allows():
    assert xml_text("tab\tnl\ncr\r 中文 😀") == "tab\tnl\ncr\r 中文 😀"
    assert xml_text("\x1b\x00\ud800") == "\\x1b\\x00\\ud800"


def test_text_reports_and_runs_escape_control_characters(history, monkeypatch):
    history.bank("A", CASES[:2])
    history.run("A", "v1", {"Q-01": "f", "Q-02": "t"}, texts={"Q-01": CONTROL},
                errors={"Q-02": "HTTP 500: " + CONTROL})
    history.run("A", "v2", {"Q-01": "p", "Q-02": "p"})
    history.store.set_run_status(1, "failed", "ValueError: " + CONTROL)
    db = str(history.tmp / "exam.db")
    outputs = [cli("report", "scorecard", "--db", db).output,
               cli("compare", "A", "v1", "v2", "--db", db).output,
               cli("report", "discrimination", "--db", db).output,
               cli("report", "rebalance", "--db", db).output,
               cli("runs", "--db", db).output]
    for out in outputs:
        assert not set(out) & set("\x1b\x00\x07\u202e"), out
    assert "\\x1b[2J" in outputs[0] and "\\x1b[2J" in outputs[4]


def test_a_category_with_control_characters_is_escaped_where_it_is_a_key(history):
    """The scorecard's "by category" and the discrimination's categories are dicts keyed by
    the bank's category: its keys are shown too, so they are escaped like its values."""
    history.bank("A", [("Q-01", "cat" + CONTROL, "major"), ("Q-02", "c", "major")])
    history.run("A", "v1", {"Q-01": "f", "Q-02": "t"})
    history.run("A", "v2", {"Q-01": "p", "Q-02": "p"})
    db = str(history.tmp / "exam.db")
    for args in (["report", "scorecard"], ["report", "discrimination"],
                 ["compare", "A", "v1", "v2"], ["report", "rebalance"]):
        out = cli(*args, "--db", db).output
        assert not set(out) & set("\x1b\x00\x07\u202e"), (args, out)
    assert "cat\\x1b[2J" in cli("report", "scorecard", "--db", db).output


def test_terminal_escapes_controls_and_bidi_overrides():
    assert terminal("a\x1b[31mb\nc\x00\u202ed\x9b") == "a\\x1b[31mb\\nc\\x00\\u202ed\\x9b"
    assert terminal("中文 ok") == "中文 ok"


@pytest.mark.parametrize("repeats", ["1", "7"])  # 7: repeats grouped, one checks list shared
def test_exam_run_against_an_agent_sending_escapes_prints_none(tmp_path, repeats):
    from tests.exam.helpers import registry_env, write_bank
    from tests.fakes.agent import FakeAgent

    class Escaping(FakeAgent):
        def respond(self, h, behaviour, n):
            self.json(h, {"answer": "\x1b]0;pwned\x07\x1b[2J答案", "status": "ok"})

    with Escaping() as agent:
        bank = write_bank(tmp_path, ["x"], expect_forbidden=["pwned"])
        env = registry_env(tmp_path, agent.url, bank)
        result = CliRunner().invoke(main, ["run", "T", "--version", "v1", "--repeats", repeats],
                                    env=env, catch_exceptions=False)
    assert "\\x07\\x1b[2" in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output


@pytest.mark.parametrize("body,ctype", [
    (json.dumps({"answer": "\x1b]0;pwned\x07\x1b[2J答\u202e案\x9b2J", "status": "ok"},
                ensure_ascii=False), "application/json"),
    ("\x1b]0;pwned\x07\x1b[2J答\u202e案\x9b2J\nnext line", "text/plain; charset=utf-8")])
def test_exam_agents_check_and_init_print_an_escaping_reply_escaped(tmp_path, body, ctype):
    """Both print the agent's raw reply and what was read from it: a hostile agent's ESC, C1
    and bidi controls are shown as escapes there too, its line breaks kept as line breaks."""
    from tests.exam.helpers import registry_env, write_bank
    from tests.fakes.agent import FakeAgent

    class Escaping(FakeAgent):
        def respond(self, h, behaviour, n):
            self.send(h, 200, body, ctype)

    with Escaping() as agent:
        bank = write_bank(tmp_path, ["x"])
        env = registry_env(tmp_path, agent.url, bank)
        checked = CliRunner().invoke(main, ["agents", "check", "T"], env=env)
        made = CliRunner().invoke(main, ["init", agent.url, "--name", "NEW", "--agents",
                                         str(tmp_path / "new.yaml"), "--bank",
                                         str(tmp_path / "NEW.yaml")], env=env)
    assert "\\x1b[2J" in checked.output  # the text the mapping read
    for result in (checked, made):
        assert "\\u202e" in result.output and "\\x9b" in result.output, result.output
        assert not set(result.output) & set("\x1b\x07\x9b\u202e"), result.output


def test_exam_grade_prints_why_a_reply_was_unreadable_escaped(tmp_path):
    """A reply with no text names the keys it had (JSON-escaped, which leaves C1 and bidi
    controls alone): ``exam grade`` prints that reason escaped, as the reports do."""
    from tests.conftest import BANK_DIR

    replies = tmp_path / "replies.jsonl"
    replies.write_text(json.dumps({"case_no": "W2-06", "reply": {
        "\x9b2J\u202eevil\x1b[2J": "x"}}, ensure_ascii=False), encoding="utf-8")
    result = cli("grade", str(BANK_DIR / "W2.json"), str(replies))
    assert "BAD_REPLY" in result.output and "\\u202e" in result.output, result.output
    assert not set(result.output) & set("\x1b\x9b\u202e"), result.output


def test_a_reply_with_lone_surrogates_is_stored_and_its_junit_parses(tmp_path):
    from tests.exam.helpers import registry_env, write_bank
    from tests.fakes.agent import FakeAgent

    class Surrogates(FakeAgent):
        def respond(self, h, behaviour, n):
            self.send(h, 200, '{"answer": "\\ud800 pwned \\udfff\\u0000 \\u001b[2J", '
                              '"status": "ok"}')

    with Surrogates() as agent:
        bank = write_bank(tmp_path, ["x"], expect_forbidden=["pwned"])
        env = registry_env(tmp_path, agent.url, bank)
        run = CliRunner().invoke(main, ["run", "T", "--version", "v1"], env=env,
                                 catch_exceptions=False)
        junit = CliRunner().invoke(main, ["report", "scorecard", "--format", "junit"], env=env,
                                   catch_exceptions=False)
    assert run.exit_code == 1, run.output  # graded: the forbidden word, not a crashed run
    assert "\ufffd «pwned» \ufffd" in run.output
    _assert_parses(junit.output)


BAD_LABELS = [("v2/canary", "'/' is not allowed"), ("v2\nFAIL: all", "'\\n' is not allowed"),
              ("v\x00", "'\\x00' is not allowed"), ("", "give a label"),
              ("-v2", "it starts with '-'"), ("=1+1", "it starts with '='"),
              ("v" * 65, "it has 65 characters"), ("v 2", "' ' is not allowed")]


@pytest.mark.parametrize(("label", "message"), BAD_LABELS)
def test_a_bad_version_label_is_a_clear_error_on_the_cli(tmp_path, label, message):
    from tests.exam.helpers import registry_env, write_bank

    bank = write_bank(tmp_path, ["ok"])
    env = registry_env(tmp_path, "http://127.0.0.1:9/x", bank)
    result = CliRunner().invoke(main, ["run", "T", "--version", label], env=env)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("label", ["v2", "prompt-0913", "gpt-4o+rag.2", "新版本", "v2_b"])
def test_good_labels_pass(label):
    assert names.check("version label", label) == label


@pytest.mark.parametrize(("name", "message"), [("W/1", "'/' is not allowed"),
                                               ("W\n1", "'\\n' is not allowed"),
                                               ("W1 ", "' ' is not allowed")])
def test_a_bad_agent_name_in_the_registry_names_it(name, message):
    with pytest.raises(RegistryError) as err:
        parse_registry({"agents": {name: {"url": "http://127.0.0.1:9/x"}}}, "agents.yaml", {})
    assert str(err.value).startswith("agents.yaml: agents: agent name ")
    assert message in str(err.value)


def test_a_bad_label_over_the_api_is_a_400_naming_the_field(tmp_path):
    from exam.app import create_app
    from tests.exam.helpers import registry_env, write_bank

    bank = write_bank(tmp_path, ["ok"])
    env = registry_env(tmp_path, "http://127.0.0.1:9/x", bank)
    app = create_app({"DB": env["EXAM_DB"], "AGENTS": env["EXAM_AGENTS"], "API_TOKEN": "tok"})
    client = app.test_client()
    for label in ("v2/x", "v2\nx", "v\x00"):
        r = client.post("/api/runs", json={"agent": "T", "version": label},
                        headers={"Authorization": "Bearer tok"})
        assert r.status_code == 400
        assert r.json["field"] == "version" and "not allowed" in json.dumps(r.json)
    assert client.get("/api/runs", headers={"Authorization": "Bearer tok"}).json["runs"] == []


def test_a_bad_label_in_a_line_command_is_refused_with_the_reason(tmp_path):
    from exam.notify.line_chat import command
    from exam.store import Store
    from tests.exam.helpers import registry_env, write_bank

    bank = write_bank(tmp_path, ["ok"])
    env = registry_env(tmp_path, "http://127.0.0.1:9/x", bank)
    store = Store.open(env["EXAM_DB"])
    cfg = {"AGENTS": env["EXAM_AGENTS"], "LINE_RUN_GROUPS": "G"}
    try:
        answer = command(store, ["run", "T", "v2/x"], "G", cfg)
        assert answer.startswith("Cannot start the run: version label 'v2/x' is not usable")
        assert store.list_runs() == []
    finally:
        store.close()


def test_line_flex_uris_are_percent_encoded():
    from exam.notify.summary import Summary

    summary = Summary(agent="W1", version="新版+1", passed=1, needs_human=0, fail=0,
                      pass_rate=1.0, not_answered=0,
                      cost={k: {"p50": 1} for k in ("model_calls", "tokens", "latency_ms")})
    messages = build_messages([summary], "https://exam.example")
    uris = [a["uri"] for a in _find(messages, "uri")]
    assert uris == ["https://exam.example/scorecard/W1/%E6%96%B0%E7%89%88%2B1"]


def _find(obj, key):
    if isinstance(obj, dict):
        if key in obj and isinstance(obj[key], str):
            yield obj
        for v in obj.values():
            yield from _find(v, key)
    elif isinstance(obj, list):
        for v in obj:
            yield from _find(v, key)


def test_names_problem_is_empty_for_a_good_name():
    assert names.problem("W2canary") == ""
    with pytest.raises(ExamError):
        names.check("agent name", "a/b")


def test_terminal_data_escapes_every_string_and_copies_only_what_it_changes():
    from exam.textsafe import terminal_data

    clean = {"case_no": "Q-01", "cells": [{"verdict": "pass", "checks": [{"evidence": "好"}]}]}
    hostile = {"error": "bad\x1b[2Jreply", "n": 3}
    report = {"scorecards": [clean, hostile], "ids": (1, 2)}
    shown = terminal_data(report)
    assert shown["scorecards"][1] == {"error": "bad\\x1b[2Jreply", "n": 3}
    assert shown["scorecards"][0] is clean  # nothing to escape: not copied
    assert shown["ids"] == [1, 2]
    assert report["scorecards"][1]["error"] == "bad\x1b[2Jreply"  # the report is left as it was


def test_terminal_data_escapes_a_list_met_twice_in_both_places():
    """Identical replies share one checks list (scorecard.build): escaped once, shown escaped
    wherever it is met; a clean list met twice is still not copied."""
    from exam.textsafe import terminal_data

    checks = [{"name": "forbidden[0]", "evidence": "x\x1b[2Jy"}]
    clean = [{"evidence": "好"}]
    report = {"cells": [{"checks": checks}, {"checks": checks}, {"checks": clean},
                        {"checks": clean}]}
    shown = terminal_data(report)["cells"]
    assert [c["checks"][0]["evidence"] for c in shown[:2]] == ["x\\x1b[2Jy"] * 2
    assert shown[0]["checks"] is shown[1]["checks"]
    assert shown[2]["checks"] is clean and shown[3]["checks"] is clean
    assert checks[0]["evidence"] == "x\x1b[2Jy"


MARKUP = ('<script>alert(1)</script> <img src=x onerror=alert(2)> [click](javascript:alert(3)) '
          '<javascript:alert(4)> ![i](javascript:alert(5)) [r]: javascript:alert(6) \u202eevil')


def test_markdown_reports_escape_html_links_and_bidi_from_every_text(history, monkeypatch):
    """Case numbers, categories, labels, replies and errors are text in a Markdown report: no
    tag, no link a renderer would make of them, no reordering of what follows."""
    history.bank("A", [("Q-01" + MARKUP, "cat " + MARKUP, "critical"),
                       ("Q-02", "c", "major")])
    history.run("A", "v1", {"Q-01" + MARKUP: "f", "Q-02": "t"},
                texts={"Q-01" + MARKUP: MARKUP}, errors={"Q-02": "HTTP 500: " + MARKUP})
    history.run("A", "v2", {"Q-01" + MARKUP: "p", "Q-02": "p"})
    db = str(history.tmp / "exam.db")
    for args in (["report", "scorecard"], ["report", "discrimination"],
                 ["compare", "A", "v1", "v2"], ["report", "rebalance"]):
        out = cli(*args, "--format", "markdown", "--db", db).output
        assert out.startswith("# agent-exam"), (args, out)
        for raw in ("<script", "<img", "<javascript", "](javascript", "]: javascript",
                    "\u202e"):
            assert raw not in out, (args, raw, out)
    card = cli("report", "scorecard", "--format", "markdown", "--db", db).output
    assert "Q-01&lt;script&gt;alert(1)&lt;/script&gt;" in card  # the case number, as text
    assert "cat &lt;script&gt;" in card and "[click]\\(javascript:alert(3))" in card
    assert "\\u202eevil" in card


def test_markdown_text_keeps_ordinary_text_as_it_is():
    from exam.textsafe import markdown_text

    assert markdown_text("fact[0] fail: 備貨中 [- 已出貨] a & b") == (
        "fact[0] fail: 備貨中 [- 已出貨] a &amp; b")
    assert markdown_text("<b>") == "&lt;b&gt;"
    assert markdown_text("[x](javascript:y) [r]: z") == "[x]\\(javascript:y) [r]\\: z"
