"""Issue 31's second batch (tests/graders/assert_cases2.py): the six classes of false pass on
a fact a blind set found under grader 2.3.0, graded end to end as a reviewer labelled them."""

from __future__ import annotations

import pytest

from tests.graders.assert_cases2 import CASES, KNOWN_MISSES, PROBES, right, score, verdict


@pytest.mark.parametrize("row", CASES + PROBES, ids=[f"{i:03d}" for i in range(len(CASES + PROBES))])
def test_reply_is_graded_as_a_reviewer_would(row):
    assert right(row[3], verdict(row)), row


def test_no_known_miss_is_a_false_pass():
    assert all(verdict(row) != "pass" or row[3] == "pass" for row in KNOWN_MISSES)


def test_batch_covers_both_sides_and_no_false_pass():
    assert len(CASES) + len(KNOWN_MISSES) >= 40
    assert sum(r[0].isascii() for r in CASES) >= len(CASES) // 4
    assert {r[3] for r in CASES} == {"pass", "fail", "human", "notpass"}
    assert score(CASES + PROBES)["false_pass"] == 0
