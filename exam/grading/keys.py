"""The keys a grade is kept under: the grader's rules, the question as graded, the reply.

The grade cache (the runner fills it as cells arrive, the re-grade reads it) and the kept graded
runs (exam.reports.graded_runs) are stored under these, so the runner and the reports make
them in one place. A key changes whenever anything the grade depends on does; a wrong key costs
a re-grade, never a wrong grade.
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import unicodedata
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path

import exam
import graders
from exam.bank import Bank, Item
from graders import GRADER_VERSION, RULE_VERSIONS, CheckResult, Reply

CACHE_KEYS = 2  # bump when reply_key or question_key change how they are made

@functools.lru_cache(maxsize=1)
def _fold_tables() -> str:
    """The OpenCC tables ``fold_script`` folds with: their package's version (read once; it
    does not change while a process runs)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"opencc={version('opencc-python-reimplemented')}"
    except PackageNotFoundError:
        return "opencc=none"


def rules_text() -> str:
    """Every rule a grade was made under: the grader's version, each check kind's rule, and
    the tables the grader normalises with (NFKC and casefold from Python's Unicode database,
    which a newer Python extends; script folding from OpenCC's).

    Read at call time, so a bumped rule (or a test's monkeypatched one) is seen at once.
    """
    rules = ",".join(f"{k}={v}" for k, v in sorted(RULE_VERSIONS.items()))
    return (f"{GRADER_VERSION};{rules};unicode={unicodedata.unidata_version};"
            f"{_fold_tables()};keys={CACHE_KEYS}")


@functools.cache
def code_digest() -> str:
    """A digest of every module of ``exam`` and ``graders``, read once per process: what is
    kept of a report (a walk of verdicts, an answer) is keyed by it, so an upgrade makes it
    again."""
    h = hashlib.blake2b(digest_size=16)
    for package in (exam, graders):
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def rules_key() -> str:
    """``rules_text`` as a 16-character digest: what the grade cache and the kept runs are
    stored under. Every row of the grade cache holds it and its primary key starts with it:
    the ~85 characters of the text itself, the same in every row, made the cache a third
    larger and slower to fill (100,000 rows: 1.3-1.9 s against 0.8-0.9 s of SQLite's time),
    and every key comparison read them before the reply's key."""
    return hashlib.blake2b(rules_text().encode(), digest_size=8).hexdigest()


def questions_key(bank: Bank) -> str:
    """Every question of a bank as grading and the reports read it (kept runs' key)."""
    parts = [(i.case_no, question_key(i), i.digest) for i in bank.items]
    return hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest()


def question_key(item: Item) -> str:
    """Every grading-relevant field of the question as the grader reads it (``Item.graded_key``:
    in the bank's order, unlike ``Item.digest``) and the bank options it was built with
    (fold_script is bank-wide, so not in the question's own)."""
    return f"{item.graded_key}:{int(item.question.fold_script)}"


_REPLY_FIELDS = tuple(f.name for f in fields(Reply))
_reply_values = operator.attrgetter(*_REPLY_FIELDS)


def reply_key(reply: Reply, budget: Mapping[str, float]) -> str:
    """A digest of every field of the reply (all of them, so a field added to Reply is keyed
    too) and the agent's budget, which grade() merges under the question's.

    The repr of plain values (text, numbers, the parsed JSON body, steps) is exact: floats
    round-trip, strings are quoted. Two equal bodies whose keys come in another order get two
    keys, which costs a re-grade, never a wrong grade.
    """
    data = (_reply_values(reply), budget)
    return hashlib.blake2b(repr(data).encode(), digest_size=20).hexdigest()


_encode_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # made once


def checks_json(checks: tuple[CheckResult, ...]) -> str:
    return _encode_json([[c.name, c.outcome, c.missing, c.unexpected, c.evidence]
                         for c in checks])
