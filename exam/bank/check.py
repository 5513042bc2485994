"""Prove a rubric before any agent is called: golden replies pass, counterexamples fail."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exam.bank.load import Bank, Item, bank_files, bank_mismatch, placeholders, read_bank
from exam.errors import Problem
from exam.reading import DEFAULT_MAPPING, ReplyMapping, read_body, to_reply
from graders import Grade, Reply, grade
from graders.trajectory import NO_STEPS

# how examples are read when no registry names the bank's agent: the default reply mapping
DEFAULT_READER: tuple[ReplyMapping, str] = (DEFAULT_MAPPING, "json")


class Unreadable(ValueError):
    """An example reply the agent's reply mapping cannot read text from; the message says why."""


def example_reply(item: Item, example: Any,
                  reader: tuple[ReplyMapping, str] = DEFAULT_READER) -> Reply:
    """A golden/counterexample reply, read as a run reads the agent's: a string is the reply's
    text (status taken as the expected one), an object the agent's JSON body read through its
    reply mapping. Raises Unreadable when that finds no text: grading it would prove nothing."""
    mapping, reply_format = reader
    if isinstance(example, str):
        return to_reply(read_body(example), status=item.question.expect_status)
    if reply_format == "text":
        raise Unreadable("the agent answers plain text (format: text): write the example as "
                         "the text it would send")
    read = read_body(example, mapping)
    if read.text is None:
        raise Unreadable(read.problem or "no text")
    return to_reply(read)


def _summary(g: Grade) -> str:
    bad = [c for c in g.checks if c.outcome in ("fail", "needs_human")]
    parts = []
    for c in bad[:2]:
        signs = " ".join([*(f"-{m}" for m in c.missing), *(f"+{u}" for u in c.unexpected)])
        parts.append(f"{c.name} {c.outcome} {signs} ({c.evidence})".replace("  ", " "))
    return "; ".join(parts) or "no check failed"


def prove_item(file: str, item: Item, reader: tuple[ReplyMapping, str] = DEFAULT_READER,
               agent: str = "") -> list[Problem]:
    problems = []
    examples = [("golden", i, e, "pass") for i, e in enumerate(item.golden)] + [
        ("counterexamples", i, e, "fail") for i, e in enumerate(item.counterexamples)]
    for key, i, example, expected in examples:
        where = f"{item.case_no}.{key}[{i}]"
        try:
            reply = example_reply(item, example, reader)
        except Unreadable as exc:  # a counterexample failing for want of text proves nothing
            problems.append(Problem(file, where, f"cannot be read as {agent or 'the agent'}'s "
                                                 f"reply: {exc}"))
            continue
        g = grade(item.question, reply)
        if g.verdict == expected:
            continue
        if expected == "fail":
            problems.append(Problem(file, where, f"expected fail, got {g.verdict}: the rubric "
                                                 "does not catch this wrong reply"))
            continue
        fix = ""
        if any(c.outcome == "needs_human" and c.evidence == NO_STEPS for c in g.checks):
            fix = ("; a tool check needs the golden's steps: give it as the agent's JSON "
                   "body, e.g. {\"answer\": \"…\", \"intermediateSteps\": [{\"action\": "
                   "{\"tool\": \"…\"}}]}")
        problems.append(Problem(file, where, f"expected pass, got {g.verdict}: {_summary(g)}{fix}"))
    return problems


@dataclass
class CheckReport:
    files: int = 0
    questions: int = 0
    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)  # not failures: unproven questions
    unreadable: bool = False
    banks: list[Bank] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 2 if self.unreadable else (1 if self.problems else 0)


def check_paths(paths: Iterable[str | Path],
                attached: Mapping[str, Iterable[str]] | None = None,
                readers: Mapping[str, tuple[ReplyMapping, str]] | None = None) -> CheckReport:
    """Check bank files; ``attached`` (a bank file's real path → the registry's agents that
    use it) also names a bank whose ``agent:`` is not the agent it is attached to; ``readers``
    (agent → its reply mapping and format, from the registry) reads a bank's example objects
    as its agent's replies (the default mapping for an agent the registry does not have)."""
    report = CheckReport()
    seen: dict[tuple[str, str], str] = {}
    for path in bank_files(paths):
        report.files += 1
        bank, problems = read_bank(path)
        if bank is None:
            report.problems.extend(problems)
            if any(p.where == "" for p in problems):
                report.unreadable = True
            continue
        report.banks.append(bank)
        for name in (attached or {}).get(os.path.realpath(bank.path), ()):
            if (mismatch := bank_mismatch(bank.path, bank.agent, name)) is not None:
                file, _, rest = mismatch.partition(": agent: ")
                report.problems.append(Problem(file, "agent", rest))
        for item in bank.items:
            report.questions += 1
            key = (bank.agent, item.case_no)
            if key in seen:
                report.problems.append(Problem(
                    bank.path, f"{item.case_no}.case_no",
                    f"duplicate case_no for agent {bank.agent} (also in {seen[key]})"))
            seen[key] = bank.path
            todo = placeholders(bank.path, item)
            if todo:  # a starter question from `exam init`: say what is left, prove nothing yet
                report.problems.extend(todo)
                continue
            reader = (readers or {}).get(bank.agent, DEFAULT_READER)
            report.problems.extend(prove_item(bank.path, item, reader, bank.agent))
            if not item.golden or not item.counterexamples:
                missing = "golden" if not item.golden else "counterexamples"
                report.notes.append(Problem(bank.path, item.case_no,
                                            f"no {missing}: this rubric is not proven"))
    if report.files == 0:
        report.unreadable = True
        report.problems.append(Problem(", ".join(map(str, paths)), "", "no bank files found"))
    return report
