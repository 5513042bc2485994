"""Review decisions: a person's pass or fail on what a grader left to a person.

A decision is keyed by what was judged (the reply's digest, the check, the question's rubric,
the rule's version), so it holds for the same reply wherever it appears again, and a changed
rubric or rule asks again. Reports apply the decisions over the grade cache's grades.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, func, insert, select, true

from exam.db.schema import adjudications
from exam.store.base import StoreBase

_ADJUDICATIONS = select(adjudications).order_by(adjudications.c.id)


class Review(StoreBase):
    """Decisions recorded (a replaced one is a new row) and read; their change mark."""

    def add_adjudication(self, *, reply_digest: str, check_name: str, question_digest: str,
                         rule_version: str, decision: str, reason: str, reviewer: str,
                         agent: str, case_no: str) -> None:
        """Record (or replace) a person's decision on what was judged (a replaced decision
        is a new row, the newest)."""
        a = adjudications.c
        with self.tx() as db:
            db.execute(delete(adjudications).where(
                a.reply_digest == reply_digest, a.check_name == check_name,
                a.question_digest == question_digest, a.rule_version == rule_version))
            db.execute(insert(adjudications).values(
                reply_digest=reply_digest, check_name=check_name, question_digest=question_digest,
                rule_version=rule_version, decision=decision, reason=reason, reviewer=reviewer,
                decided_at=time.time(), agent=agent, case_no=case_no))

    def adjudications(self) -> list[dict[str, Any]]:
        return [dict(r._mapping) for r in self._rows(_ADJUDICATIONS)]

    def adjudications_mark(self, question_digests: Iterable[str] | None = None) -> tuple:
        """A mark that changes whenever the review decisions do, read without reading them
        (the API's kept answers check it on every request: 5,000 decisions read whole took
        117 ms). A decision is never updated: it is inserted, or replaced by deleting it and
        inserting the new one with the time of the decision. So any change raises the count or
        the highest id, except replacing the decision that holds the highest id, which SQLite
        gives the same id again: the mark holds that decision's answer too (decision, reason,
        reviewer), so it changes even when the new one's time equals the replaced one's to
        the last bit (hosts whose clocks read the same). One statement: one snapshot.

        ``question_digests``: of the decisions on these questions alone (a decision applies
        only where the question's digest is the one it was made on, exam/review.py): what one
        agent's reports are made of, which a decision on another agent's question leaves be."""
        a = adjudications.c
        where = true() if question_digests is None else \
            a.question_digest.in_(sorted(set(question_digests)))
        latest = select(func.max(a.id)).where(where).scalar_subquery()

        def of_latest(column: Any) -> Any:
            return select(column).where(a.id == latest).scalar_subquery()

        row = self._rows(select(func.count(), func.max(a.id), func.sum(a.decided_at),
                                func.max(a.decided_at), of_latest(a.decision),
                                of_latest(a.reason), of_latest(a.reviewer)).where(where))[0]
        return tuple(row)
