"""Issue 31's own batch (tests/graders/assert_cases.py): each row graded end to end as a
careful reviewer labelled it; a row the rules still miss is in KNOWN_MISSES, not here."""

from __future__ import annotations

import pytest

from tests.graders.assert_cases import CASES, KNOWN_MISSES, right, score, verdict


@pytest.mark.parametrize("row", CASES, ids=[f"{i:03d}" for i in range(len(CASES))])
def test_reply_is_graded_as_a_reviewer_would(row):
    assert right(row[3], verdict(row)), row


def test_no_known_miss_is_a_false_pass():
    """What the rules still get wrong errs on the safe side: never a pass a reviewer refuses."""
    assert all(verdict(row) != "pass" or row[3] == "pass" for row in KNOWN_MISSES)


def test_batch_covers_both_sides_and_english():
    assert len(CASES) + len(KNOWN_MISSES) >= 120
    assert sum(r[0].isascii() for r in CASES) >= len(CASES) // 5
    assert {r[3] for r in CASES} == {"pass", "fail", "human", "notpass"}
    assert score(CASES)["false_pass"] == 0
