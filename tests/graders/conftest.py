from __future__ import annotations

import pytest

from graders import FieldSpec, Question, Reply, parse_entry
from graders.normalize import normalize


def make_question(**kw) -> Question:
    """A Question built the way the bank loader builds one (patterns compiled, input folded)."""
    kw.setdefault("case_no", "T-01")
    kw.setdefault("input", {"question": "test"})
    fold = kw.get("fold_script", True)
    kw["facts"] = tuple(parse_entry(p, fold=fold) for p in kw.pop("facts", ()))
    kw["forbidden"] = tuple(parse_entry(p, fold=fold) for p in kw.pop("forbidden", ()))
    kw["fields"] = tuple(FieldSpec(**f) for f in kw.pop("fields", ()))
    kw["input_text"] = normalize(" ".join(str(v) for v in kw["input"].values()))
    return Question(**kw)


@pytest.fixture
def question():
    return make_question


@pytest.fixture
def reply():
    def make(text="", **kw) -> Reply:
        return Reply(text=text, **kw)

    return make
