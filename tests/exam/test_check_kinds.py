"""A new kind of check is one registration (graders/checks.py), like the built-in ones: the
bank's keys and schema, the grader, the rule versions and the grade cache follow, with no
other module touched.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from exam.bank import load_bank
from exam.bank.load import json_schema
from exam.cli.main import main
from exam.errors import BankError
from exam.grading.keys import rules_key, rules_text
from exam.review import rule_version
from graders import RULE_VERSIONS, CheckResult, Reply, grade
from graders.kinds import KINDS, CheckKind, register, unregister

_CJK = re.compile(r"[\u4e00-\u9fff]")


def check_language(expected, cell):
    found = "zh" if _CJK.search(cell.text) else "en"
    yield CheckResult("language", "pass" if found == expected else "fail",
                      missing=() if found == expected else (expected,),
                      evidence=f"the reply is in {found}")


def parse_language(value):
    if value == "zh-TW":
        raise ValueError("write 'zh': the check cannot tell scripts apart")
    return value


@pytest.fixture
def language():
    kind = register(CheckKind(key="expect_language", rule="language", version=3,
                              schema={"enum": ["zh", "zh-TW", "en"]}, check=check_language,
                              parse=parse_language))
    yield kind
    unregister("expect_language")


def write(tmp_path, **question):
    path = tmp_path / "W9.json"
    q = {"case_no": "W9-01", "input": {"question": "進度？"}, **question}
    path.write_text(json.dumps({"agent": "W9", "questions": [q]}, ensure_ascii=False),
                    encoding="utf-8")
    return path


def test_a_registered_check_kind_is_a_bank_key_and_a_graded_check(language, tmp_path):
    item = load_bank(write(tmp_path, expect_language="zh")).items[0]
    assert item.question.registered_checks == {"expect_language": "zh"}
    zh = grade(item.question, Reply(text="備貨中"))
    assert zh.verdict == "pass" and [c.name for c in zh.checks] == ["language"]
    en = grade(item.question, Reply(text="in stock"))
    assert en.verdict == "fail" and en.checks[0].evidence == "the reply is in en"


def test_the_bank_validates_the_new_key_by_its_schema_and_parser(language, tmp_path):
    with pytest.raises(BankError) as bad:
        load_bank(write(tmp_path, expect_language="fr"))
    assert str(bad.value).endswith('W9-01.expect_language: expected one of zh, zh-TW, en, '
                                   'found "fr"')
    with pytest.raises(BankError, match=r"W9-01.expect_language: write 'zh'"):
        load_bank(write(tmp_path, expect_language="zh-TW"))
    with pytest.raises(BankError, match=r"unknown key 'expect_langage' \(did you mean "
                                        r"'expect_language'\?\)"):
        load_bank(write(tmp_path, expect_langage="zh", expect_facts=["備貨中"]))


def test_the_new_rule_has_a_version_for_review_and_the_grade_cache(language):
    assert RULE_VERSIONS["language"] == 3 and rule_version("language") == "3"
    assert "language=3" in rules_text()
    before = rules_key()
    RULE_VERSIONS["language"] = 4
    try:  # the stored key changes with it: no grade made under version 3 is read again
        assert rules_key() != before and len(rules_key()) == 16
    finally:
        RULE_VERSIONS["language"] = 3


def test_exam_bank_check_proves_a_golden_reply_against_the_new_check(language, tmp_path):
    bank = write(tmp_path, expect_language="zh", golden=["備貨中"], counterexamples=["in stock"])
    result = CliRunner().invoke(main, ["bank", "check", str(bank)])
    assert result.exit_code == 0, result.output


def test_without_the_registration_the_key_is_unknown(tmp_path):
    assert "expect_language" not in KINDS
    with pytest.raises(BankError, match="unknown key 'expect_language'"):
        load_bank(write(tmp_path, expect_language="zh", expect_facts=["備貨中"]))


def test_a_bank_read_while_a_kind_was_registered_is_read_again_without_it(tmp_path):
    """Banks are parsed once per content (exam/bank/load.py): the check kinds registered then are
    part of what was parsed, so a bank read again after they change is parsed again."""
    path = write(tmp_path, expect_language="zh")
    register(CheckKind(key="expect_language", rule="language", version=3,
                       schema={"enum": ["zh", "en"]}, check=check_language))
    try:
        assert load_bank(path).items[0].question.registered_checks == {"expect_language": "zh"}
    finally:
        unregister("expect_language")
    with pytest.raises(BankError, match="unknown key 'expect_language'"):
        load_bank(path)


def test_a_new_kinds_results_come_before_the_budgets(language, tmp_path):
    item = load_bank(write(tmp_path, expect_language="zh", expect_facts=["備貨中"],
                           budget={"tokens": 10})).items[0]
    g = grade(item.question, Reply(text="備貨中", tokens=5))
    assert [c.name for c in g.checks] == ["fact[0]", "language", "budget.tokens"]


def test_the_json_schema_holds_every_kinds_keys(language):
    properties = json_schema()["$defs"]["question"]["properties"]
    assert properties["expect_language"] == {"enum": ["zh", "zh-TW", "en"]}
    for kind in KINDS.values():
        assert {kind.key, *kind.also} <= properties.keys()


def test_exam_bank_schema_prints_the_whole_schema(language):
    result = CliRunner().invoke(main, ["bank", "schema"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed == json_schema()
    assert "expect_language" in printed["$defs"]["question"]["properties"]
