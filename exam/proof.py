"""Prove a rubric before any agent is called: golden replies pass, counterexamples fail."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exam.bank import Bank, Item, bank_files, bank_mismatch, placeholders, read_bank
from exam.errors import Problem
from exam.pipeline.reading import read_body, to_reply
from graders import Grade, Reply, grade
from graders.trajectory import NO_STEPS


def example_reply(item: Item, example: Any) -> Reply:
    """A golden/counterexample reply: text (status taken as the expected one) or a JSON body."""
    read = read_body(example)
    if isinstance(example, str):
        return to_reply(read, status=item.question.expect_status)
    return to_reply(read)


def _summary(g: Grade) -> str:
    bad = [c for c in g.checks if c.outcome in ("fail", "needs_human")]
    parts = []
    for c in bad[:2]:
        signs = " ".join([*(f"-{m}" for m in c.missing), *(f"+{u}" for u in c.unexpected)])
        parts.append(f"{c.name} {c.outcome} {signs} ({c.evidence})".replace("  ", " "))
    return "; ".join(parts) or "no check failed"


def prove_item(file: str, item: Item) -> list[Problem]:
    problems = []
    for i, example in enumerate(item.golden):
        g = grade(item.question, example_reply(item, example))
        if g.verdict != "pass":
            fix = ""
            if any(c.outcome == "needs_human" and c.evidence == NO_STEPS for c in g.checks):
                fix = ("; a tool check needs the golden's steps: give it as the agent's JSON "
                       "body, e.g. {\"answer\": \"…\", \"intermediateSteps\": [{\"action\": "
                       "{\"tool\": \"…\"}}]}")
            problems.append(Problem(file, f"{item.case_no}.golden[{i}]",
                                    f"expected pass, got {g.verdict}: {_summary(g)}{fix}"))
    for i, example in enumerate(item.counterexamples):
        g = grade(item.question, example_reply(item, example))
        if g.verdict != "fail":
            problems.append(Problem(
                file, f"{item.case_no}.counterexamples[{i}]",
                f"expected fail, got {g.verdict}: the rubric does not catch this wrong reply"))
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
                attached: Mapping[str, Iterable[str]] | None = None) -> CheckReport:
    """Check bank files; ``attached`` (a bank file's real path → the registry's agents that
    use it) also names a bank whose ``agent:`` is not the agent it is attached to."""
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
            report.problems.extend(prove_item(bank.path, item))
            if not item.golden or not item.counterexamples:
                missing = "golden" if not item.golden else "counterexamples"
                report.notes.append(Problem(bank.path, item.case_no,
                                            f"no {missing}: this rubric is not proven"))
    if report.files == 0:
        report.unreadable = True
        report.problems.append(Problem(", ".join(map(str, paths)), "", "no bank files found"))
    return report
