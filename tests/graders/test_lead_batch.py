"""The lead's blind batch for issue 31 (tests/graders/lead_batch.py): written without reading the
graders, scored before the change (44/86, 25 false passes) and after. A ratchet: the rules may
get better, never give back a right row or add a false pass."""

from __future__ import annotations

from tests.graders.lead_batch import CASES, score

RIGHT_AT_LEAST = 84  # grader 2.3.1
FALSE_PASSES_AT_MOST = 1  # a pending payment condition (如果…前付款，…就能出貨): docs/graders.md


def test_the_blind_batch_keeps_its_score():
    right, misses, false_passes = score()
    assert right >= RIGHT_AT_LEAST and false_passes <= FALSE_PASSES_AT_MOST, "\n".join(misses)
    assert len(CASES) == 86
