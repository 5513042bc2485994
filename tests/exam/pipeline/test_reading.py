from __future__ import annotations

import pytest

from exam.pipeline.reading import read_body


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
