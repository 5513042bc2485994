"""Issue 15's regression table: customer-service replies the rules were not written from
(tests/graders/scope_cases.py), each graded end to end; one test per row."""

from __future__ import annotations

import pytest

from graders import Question, Reply, grade, normalize, parse_entry
from tests.graders.scope_cases import CASES

VERDICTS = {"pass": {"pass"}, "fail": {"fail"}, "human": {"needs_human"},
            "notpass": {"fail", "needs_human"}}


@pytest.mark.parametrize(("text", "check", "pattern", "expected", "customer"), CASES,
                         ids=[f"{i:03d}" for i in range(len(CASES))])
def test_reply_is_graded_as_a_reader_would(text, check, pattern, expected, customer):
    entry = (parse_entry(pattern),)
    q = Question(case_no="H", input={"customer_message": customer},
                 facts=entry if check == "fact" else (),
                 forbidden=entry if check == "forbidden" else (), input_text=normalize(customer))
    g = grade(q, Reply(text=text))
    assert g.verdict in VERDICTS[expected], g.checks[0].evidence


def test_table_is_large_and_balanced():
    """Plain assertions must stay asserted: the table holds as many must-fail rows as it needs."""
    assert len(CASES) >= 100
    kinds = [row[3] for row in CASES]
    assert kinds.count("fail") >= 40 and kinds.count("pass") >= 80
