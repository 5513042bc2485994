"""The check-kind registry: the built-in checks are registered kinds, and the grader runs
what the registry holds, in its order."""

from __future__ import annotations

import dataclasses

import pytest

from graders import RULE_VERSIONS, CheckResult, Question, Reply, grade
from graders.kinds import ABSENT, KINDS, CheckKind, KeyProblems, ordered, register, unregister
from graders.model import BUDGET_KEYS
from graders.patterns import parse_entry

BUILT_IN = {"expect_status": "status", "expect_facts": "fact", "expect_forbidden": "forbidden",
            "fields": "field", "numbers_grounded": "numbers_grounded", "expect_tools": "tools",
            "budget": "budget"}


def test_every_built_in_check_is_a_registered_kind_with_its_rule_version():
    assert {key: KINDS[key].rule for key in BUILT_IN} == BUILT_IN
    assert set(RULE_VERSIONS) == {kind.rule for kind in KINDS.values()}
    for kind in KINDS.values():
        assert RULE_VERSIONS[kind.rule] == kind.version


def test_each_built_in_kind_holds_its_value_in_a_field_of_the_question():
    fields = {f.name for f in dataclasses.fields(Question)}
    for key in BUILT_IN:
        assert KINDS[key].attribute in fields


def test_the_budget_comes_last_and_the_rest_as_registered():
    rules = [k.rule for k in ordered()]  # a kind added since sits before the budget
    assert rules[-1] == "budget"
    assert [r for r in rules if r in BUILT_IN.values()] == [
        "status", "fact", "forbidden", "field", "numbers_grounded", "tools", "budget"]


def test_a_grade_lists_the_kinds_results_in_the_registrys_order():
    q = Question(case_no="Q", input={"q": "A10293"}, expect_status="ok",
                 facts=(parse_entry("shipped"),), forbidden=(parse_entry("refund"),),
                 numbers_grounded=True, budget={"tokens": 100})
    g = grade(q, Reply(text="A10293 shipped", status="ok", tokens=5))
    assert [c.name for c in g.checks] == ["status", "fact[0]", "forbidden[0]",
                                          "numbers_grounded", "budget.tokens"]


def test_a_kind_runs_only_on_a_question_that_has_its_key():
    seen = []

    def check(value, cell):
        seen.append((value, cell.text))
        return [CheckResult("shout", "pass", evidence=value)]

    register(CheckKind(key="expect_shout", rule="shout", version=1, schema={}, check=check))
    try:
        plain = Question(case_no="Q", input={}, expect_status="ok")
        assert [c.name for c in grade(plain, Reply(text="Hi", status="ok")).checks] == ["status"]
        loud = dataclasses.replace(plain, registered_checks={"expect_shout": "HI"})
        names = [c.name for c in grade(loud, Reply(text="Hi", status="ok")).checks]
        assert names == ["status", "shout"] and seen == [("HI", "hi")]
    finally:
        unregister("expect_shout")
    assert "shout" not in RULE_VERSIONS and "expect_shout" not in KINDS


@pytest.mark.parametrize(("raw", "problems"), [
    ({"expect_facts": ["a||b"]}, ["expect_facts[0]"]),
    ({"fields": {"ac": {"mode": "exact_set"}}}, ["fields.ac"]),
    ({"fields": {"ac": {"mode": "ignore", "nte": "x"}}}, ["fields.ac.nte"]),
    ({"budget": {"token": 5}}, ["budget.token"]),
    ({"expect_tools": ["re:("], "forbidden_tools": ["a||b"]},
     ["expect_tools[0]", "forbidden_tools[0]"]),
])
def test_a_built_in_kind_names_where_its_keys_are_wrong(raw, problems):
    found = []
    for kind in KINDS.values():
        try:
            kind.value_in(raw, True)
        except KeyProblems as exc:
            found += [where for where, _ in exc.problems]
    assert found == problems


def test_a_kind_without_its_key_reads_absent_and_the_built_ins_their_empty_value():
    shout = CheckKind(key="expect_shout", rule="shout", version=1, schema={}, check=lambda v, c: ())
    assert shout.value_in({}, True) is ABSENT
    assert KINDS["expect_facts"].value_in({}, True) == ()
    assert KINDS["budget"].value_in({"budget": {"tokens": 3}}, True) == {"tokens": 3}
    assert set(BUDGET_KEYS) == set(KINDS["budget"].schema["properties"])
