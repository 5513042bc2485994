"""Bank loading: every bad input is one clear message naming file, question and field."""

from __future__ import annotations

import json

import pytest

from exam.bank import load_bank, read_bank
from exam.errors import BankError
from tests.conftest import BANK_DIR

GOOD = {"case_no": "W2-07", "input": {"question": "可以貨到付款嗎"}, "expect_facts": ["不提供"]}


def write(tmp_path, data, name="W2.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, ensure_ascii=False),
                    encoding="utf-8")
    return path


def problems(tmp_path, data):
    bank, found = read_bank(write(tmp_path, data))
    assert bank is None
    return [str(p) for p in found]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ('[{"case_no": "W2-07",\n "input": {}', "W2.json: invalid JSON at line 2, column"),
        ([GOOD, GOOD], "W2.json: W2-07.case_no: duplicate case_no 'W2-07' (also questions[0])"),
        ([{"case_no": "W2-01", "expect_facts": ["x"]}],
         "W2.json: W2-01: missing 'input' (the work order POSTed to the agent)"),
        ([{**GOOD, "expect_fact": ["x"]}],
         "W2.json: W2-07.expect_fact: unknown key 'expect_fact' (did you mean 'expect_facts'?)"),
        ([{**GOOD, "expect_forbidden": ["re:(提供"]}],
         "W2.json: W2-07.expect_forbidden[0]: invalid regex 're:(提供': missing ), unterminated"),
        ([{**GOOD, "expect_facts": ["a||b"]}],
         "W2.json: W2-07.expect_facts[0]: empty alternative #2 in 'a||b'"),
        ([{**GOOD, "expect_facts": [5]}], "W2.json: W2-07.expect_facts[0]: expected string, found 5"),
        ([{"case_no": "W2-07", "input": {}}], "W2.json: W2-07: nothing to grade"),
        ([{**GOOD, "severity": "urgent"}],
         "W2.json: W2-07.severity: expected one of critical, major, minor, found \"urgent\""),
        ([{**GOOD, "budget": {"token": 5}}],
         "W2.json: W2-07.budget.token: unknown key 'token' (did you mean 'tokens'?)"),
        ([{**GOOD, "budget": {"tokens": -1}}],
         "W2.json: W2-07.budget.tokens: expected a number ≥ 0, found -1"),
        ([{**GOOD, "input": "可以貨到付款嗎"}], "W2.json: W2-07.input: expected object, found"),
        ([{**GOOD, "fields": {"ac": {"mode": "exact"}}}],
         "W2.json: W2-07.fields.ac.mode: expected one of exact_set, must_include, ignore"),
        ([{**GOOD, "fields": {"ac": {"mode": "exact_set"}}}],
         "W2.json: W2-07.fields.ac: mode exact_set needs 'values'"),
        ({"questionz": []}, "W2.json: questionz: unknown key 'questionz' (did you mean 'questions'?)"),
        ({"defaults": {"budget": {"tokens": "many"}}, "questions": [GOOD]},
         "W2.json: defaults.budget.tokens: expected integer, found \"many\""),
        ("42", "W2.json: expected a JSON array of questions or an object with 'questions'"),
        ([GOOD, "not a question"], "W2.json: questions[1]: expected object, found"),
    ],
)
def test_bad_bank_gives_one_clear_message(tmp_path, data, expected):
    found = problems(tmp_path, data)
    assert any(expected in p for p in found), found
    assert all("Traceback" not in p for p in found)


def test_every_problem_in_a_file_is_reported_at_once(tmp_path):
    found = problems(tmp_path, [{**GOOD, "expect_facts": ["a||b", "re:("]}, {"case_no": "X"}])
    assert len(found) == 3


def test_missing_file_is_named(tmp_path):
    with pytest.raises(BankError, match="nope.json: no such file"):
        load_bank(tmp_path / "nope.json")


def test_defaults_apply_and_questions_override(tmp_path):
    path = write(tmp_path, {
        "agent": "W9",
        "defaults": {"budget": {"tokens": 3000, "attempts": 1}, "expect_status": "ok",
                     "severity": "minor"},
        "questions": [GOOD, {**GOOD, "case_no": "W2-08", "budget": {"tokens": 5000},
                             "severity": "critical"}],
    })
    bank = load_bank(path)
    a, b = bank.items
    assert bank.agent == "W9"
    assert a.question.budget == {"tokens": 3000, "attempts": 1}
    assert b.question.budget == {"tokens": 5000, "attempts": 1}
    assert (a.question.severity, b.question.severity) == ("minor", "critical")
    assert a.question.expect_status == "ok"


def test_agent_defaults_to_the_file_name(tmp_path):
    assert load_bank(write(tmp_path, [GOOD], name="W7.json")).agent == "W7"


def test_question_digest_ignores_notes_but_not_expectations(tmp_path):
    base = load_bank(write(tmp_path, [GOOD])).items[0].digest
    noted = load_bank(write(tmp_path, [{**GOOD, "notes": "x", "tags": ["y"]}])).items[0].digest
    changed = load_bank(write(tmp_path, [{**GOOD, "expect_facts": ["不提供貨到付款"]}])).items[0]
    assert base == noted
    assert base != changed.digest


def test_demo_bank_loads():
    for agent in ("W1", "W2", "W3"):
        bank = load_bank(BANK_DIR / f"{agent}.json")
        assert len(bank.items) == 20
        assert all(i.golden and i.counterexamples for i in bank.items)


@pytest.mark.parametrize(("text", "where"), [
    ('[{"case_no": "W2-07", "input": {"question": "\\ud800 可以嗎"}, "expect_facts": ["x"]}]',
     "W2-07.input.question"),
    ('{"agent": "W2", "questions": [{"case_no": "W2-07", "input": {"q": "ok"}, '
     '"expect_facts": ["不\\udc00提供"]}]}', "W2-07.expect_facts[0]"),
    ('[{"case_no": "\\ud800", "input": {"q": "ok"}, "expect_facts": ["x"]}]',
     "questions[0].case_no"),
])
def test_a_lone_surrogate_is_one_line_naming_the_question_and_field(tmp_path, text, where):
    """A JSON escape of half a surrogate pair is not text (it cannot be digested, stored or
    sent): one line naming file, question and field, not a traceback; a whole pair is text."""
    found = problems(tmp_path, text)
    assert len(found) == 1
    assert f"W2.json: {where}: holds a lone surrogate" in found[0]
    with pytest.raises(BankError, match="lone surrogate"):
        load_bank(write(tmp_path, text))
    pair = text.replace("\\ud800", "\\ud83c\\udf4e").replace("\\udc00", "\\ud83c\\udf4e")
    bank, found = read_bank(write(tmp_path, pair))
    assert found == [] and bank is not None


YAML_HEAD = ("agent: W2\nquestions:\n  - case_no: W2-07\n    input: {question: 可以貨到付款嗎}\n"
             "    expect_facts: [不提供]\n")


@pytest.mark.parametrize(("extra", "expected"), [
    # a key YAML reads as a number: grade() would split it as a dot path (AttributeError)
    ("    fields: {1: {mode: must_include, keywords: []}}\n",
     "W2.yaml:6: W2-07.fields.1: key 1 is a number, not text: quote it (\"1\")"),
    ("    budget: {yes: 5}\n", "W2.yaml:6: W2-07.budget.True: key true is a boolean, not text"),
    ("    tool_args: {t: {2: [x]}}\n", "W2.yaml:6: W2-07.tool_args.t.2: key 2 is a number"),
    ("    input: {~: x}\n", "W2.yaml:5: W2-07.input.None: key null is not text"),
    ("    golden: [{answer: 不提供, 1: 2}]\n", "W2.yaml:6: W2-07.golden[0].1: key 1 is a number"),
    ("    7: x\n", "W2.yaml:6: W2-07.7: key 7 is a number"),
    ("    input: {b: !!binary aGVsbG8=}\n",
     "W2.yaml:5: W2-07.input.b: a bytes value, which JSON cannot hold"),
    ("    input: {b: !!set {a, b}}\n", "W2.yaml:5: W2-07.input.b: a set value"),
    ("    input: {d: !!timestamp 2026-09-16}\n", "W2.yaml:5: W2-07.input.d: a date value"),
    ("    input: {n: .nan}\n", "W2.yaml:5: W2-07.input.n: NaN is not a number JSON can hold"),
    ("    budget: {latency_ms: .inf}\n", "W2-07.budget.latency_ms: Infinity is not a number"),
    ("    expect_facts: [x]\n", "W2.yaml: invalid YAML at line 6, column 5: duplicate key "
                              "'expect_facts' (also on line 5): only one is read"),
    ("    input: {x: " + "[" * 150 + "]" * 150 + "}\n",
     "W2.yaml: nested deeper than 100 levels of lists and mappings"),
    ("  - &q\n    case_no: W2-08\n    input: {a: *q}\n    expect_facts: [x]\n",
     "W2.yaml: an alias refers to a mapping or list that holds it"),
])
def test_yaml_that_json_cannot_hold_is_one_line_naming_the_field(tmp_path, extra, expected):
    head = YAML_HEAD
    if extra.startswith("    input:"):  # in place of the question's input: line 5
        head = head.replace("    input: {question: 可以貨到付款嗎}\n", "")
    found = problems_yaml(tmp_path, head + extra)
    assert len(found) == 1 and expected in found[0], found


def problems_yaml(tmp_path, text):
    bank, found = read_bank(write(tmp_path, text, name="W2.yaml"))
    assert bank is None
    with pytest.raises(BankError):
        load_bank(tmp_path / "W2.yaml")
    return [str(p) for p in found]


def test_a_yaml_alias_bomb_is_refused_not_expanded(tmp_path):
    """Nine aliases of nine aliases ten deep: a few hundred bytes, 3.4 billion values."""
    bomb = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))
    found = problems_yaml(tmp_path, "questions:\n  - case_no: W2-07\n    expect_facts: [x]\n"
                                    "    input:\n" + "".join(f"      {line}\n"
                                                            for line in bomb.splitlines()))
    assert found == [f"{tmp_path / 'W2.yaml'}: expands to more than 1,000,000 values (YAML "
                     "aliases of aliases?): refused"]


def test_a_yaml_alias_bomb_of_long_text_is_refused_not_expanded(tmp_path):
    """Few values, each a long text: 10,000 aliases of a 10,000-character text (under
    MAX_NODES) are 100 million characters to digest, store and send, from a 20 KB file."""
    text = "A" * 10_000
    bomb = (f'l0: &l0 "{text}"\n' + "l1: &l1 [" + ", ".join(["*l0"] * 100) + "]\n"
            + "l2: &l2 [" + ", ".join(["*l1"] * 100) + "]\n")
    found = problems_yaml(tmp_path, "questions:\n  - case_no: W2-07\n    expect_facts: [x]\n"
                                    "    input:\n" + "".join(f"      {line}\n"
                                                            for line in bomb.splitlines()))
    assert found == [f"{tmp_path / 'W2.yaml'}: expands to more than 50,000,000 characters "
                     "(YAML aliases of a long text?): refused"]


def test_a_long_yaml_bank_without_aliases_is_not_refused_for_its_length(tmp_path, monkeypatch):
    """The limit on expanded text is on what aliases add: a file is never refused for the
    length of the text it writes out."""
    from exam.bank import data as bankdata

    monkeypatch.setattr(bankdata, "MAX_CHARS", 100)
    text = YAML_HEAD.replace("{question: 可以貨到付款嗎}", "{question: " + "問" * 500 + "}")
    bank, found = read_bank(write(tmp_path, text, name="W2.yaml"))
    assert found == [] and bank is not None


def test_an_unquoted_yaml_date_is_the_text_written(tmp_path):
    """As in a JSON bank: a date object could be neither sent, digested nor matched."""
    text = YAML_HEAD.replace("{question: 可以貨到付款嗎}", "{date: 2026-09-16, 2026-09-17: x}")
    bank = load_bank(write(tmp_path, text, name="W2.yaml"))
    assert bank.items[0].question.input == {"date": "2026-09-16", "2026-09-17": "x"}
    as_json = json.dumps({"agent": "W2", "questions": [{
        "case_no": "W2-07", "input": {"date": "2026-09-16", "2026-09-17": "x"},
        "expect_facts": ["不提供"]}]})
    assert load_bank(write(tmp_path, as_json)).digest == bank.digest


@pytest.mark.parametrize(("text", "expected"), [
    ('[{"case_no": "W2-07", "input": {"n": NaN}, "expect_facts": ["x"]}]',
     "W2.json: W2-07.input.n: NaN is not a number JSON can hold"),
    ('[{"case_no": "W2-07", "input": {}, "expect_facts": ["x"], "budget": {"tokens": 1e999}}]',
     "W2.json: W2-07.budget.tokens: Infinity is not a number JSON can hold"),
    ('[{"case_no": "W2-07", "input": {}, "expect_facts": ["x"], "expect_facts": ["y"]}]',
     "W2.json: W2-07.expect_facts: given more than once in one object"),
    ('{"agent": "W2", "agent": "W3", "questions": []}',
     "W2.json: agent: given more than once in one object"),
    ('[{"case_no": "W2-07", "input": {"x": ' + "[" * 5000 + "]" * 5000 + '}}]',
     "W2.json: nested deeper than 100 levels of lists and objects"),
    ('[{"case_no": "W2-07", "input": {"n": ' + "9" * 5000 + '}}]',
     "W2.json: invalid JSON: Exceeds the limit (4300 digits) for integer string conversion"),
])
def test_json_a_bank_cannot_use_is_one_line(tmp_path, text, expected):
    found = problems(tmp_path, text)
    assert len(found) == 1 and expected in found[0], found


def test_a_json_bank_may_start_with_a_byte_order_mark(tmp_path):
    bank, found = read_bank(write(tmp_path, "\ufeff" + json.dumps([GOOD])))
    assert found == [] and bank.items[0].case_no == "W2-07"


@pytest.mark.parametrize("twin", ["w2-07", "W2-０７", "W2-07 ", " W2-07", "Ｗ2-07"])
def test_case_numbers_that_read_the_same_are_refused(tmp_path, twin):
    """Reports and --only would show two questions that look the same: refused, naming both."""
    (found,) = problems(tmp_path, [GOOD, {**GOOD, "case_no": twin}])
    assert found.endswith(f"W2.json: {twin}.case_no: case_no {twin!r} reads as 'W2-07' "
                     f"(questions[0]) once width, case and spaces are set aside: reports and "
                     f"--only would show two questions that look the same; give each a case "
                     f"number of its own")


def test_an_accent_written_two_ways_is_one_case_number(tmp_path):
    composed, decomposed = "W2-\u00e9", "W2-e\u0301"
    (found,) = problems(tmp_path, [{**GOOD, "case_no": composed},
                                   {**GOOD, "case_no": decomposed}])
    assert "reads as" in found
