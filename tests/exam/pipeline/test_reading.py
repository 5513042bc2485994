from __future__ import annotations

import pytest

from exam.reading import read_body


@pytest.mark.parametrize(("answer", "problem"), [
    ({"text": "備貨中", "n": 1}, "no text at answer: an object (keys: text, n), not text"),
    ({}, "no text at answer: an empty object, not text"),
    (["備貨中"], "no text at answer: an array of 1, not text"),
])
def test_an_object_or_array_where_the_text_should_be_is_a_bad_reply(answer, problem):
    read = read_body({"answer": answer})
    assert (read.text, read.problem) == (None, problem)


@pytest.mark.parametrize(("answer", "text"), [(True, "true"), (False, "false"), (42, "42"),
                                              (1.5, "1.5")])
def test_a_number_or_boolean_answer_is_read_as_json_writes_it(answer, text):
    assert read_body({"answer": answer}).text == text


@pytest.mark.parametrize(("usage", "problem"), [
    ({"total_tokens": -50000}, "usage.total_tokens: -50000 is negative, not a count"),
    ({"model_calls": "-3"}, "usage.model_calls: '-3' is negative, not a count"),
    ({"total_tokens": -0.5}, "usage.total_tokens: -0.5 is negative, not a count"),
])
def test_a_negative_usage_figure_is_a_bad_reply_not_a_budget_passed(usage, problem):
    read = read_body({"answer": "備貨中", "usage": usage})
    assert read.problem == problem
