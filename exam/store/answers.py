"""Kept report answers: the latest answer of each report and arguments, under the key of
everything it was made from (``exam/reports/answer_cache.py`` makes the slot, the key and the
text; the store only keeps them). A row is read only under exactly the key asked for."""

from __future__ import annotations

from exam.db.schema import kept_answers
from exam.store.base import StoreBase


class Answers(StoreBase):
    """A report's kept answer read under its key, and kept (or replaced)."""

    def kept_answer(self, slot: str, key: str) -> str | None:
        """The answer kept in ``slot`` under exactly ``key``, or None."""
        return self._kept_text(kept_answers, slot, key)

    def keep_answer(self, slot: str, key: str, answer: str) -> bool:
        """Keep (or replace) the answer in ``slot``; False when the store cannot be written
        (read-only, busy): the answer given is still right, only not kept."""
        return self._keep_text(kept_answers, slot, key, answer)
