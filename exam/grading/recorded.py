"""Replaying recorded replies: JSON Lines of replies recorded elsewhere, graded against a bank,
calling nothing (``exam grade BANK REPLIES``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exam.bank import Bank
from exam.errors import ExamError
from exam.reading import DEFAULT_MAPPING, ReplyMapping, read_body, to_reply
from graders import Grade, grade
from graders.model import RUN_STATUSES

LINE_KEYS = ("case_no", "reply", "repeat", "status", "attempts", "model_calls", "tokens",
             "latency_ms", "run_status")


@dataclass(frozen=True, slots=True)
class GradedLine:
    repeat: int
    grade: Grade
    problem: str = ""  # why the reply could not be read, for a bad_reply


def _figure_on_line(path: str, n: int, key: str, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExamError(f"{path}: line {n}: {key}: expected a number, found {value!r}")
    return value


def grade_file(bank: Bank, replies_path: str | Path,
               mapping: ReplyMapping = DEFAULT_MAPPING) -> list[GradedLine]:
    """Grade each line; ``mapping`` is how the agent's reply bodies are read (its registry entry's
    ``reply:``), the default shape otherwise."""
    path = str(replies_path)
    try:
        lines = Path(replies_path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ExamError(f"{path}: cannot read: {exc.strerror or exc}") from None
    items = bank.by_case()
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ExamError(f"{path}: line {n}: invalid JSON at column {exc.colno}: {exc.msg}") \
                from None
        if not isinstance(obj, dict):
            raise ExamError(f"{path}: line {n}: expected a JSON object with case_no and reply")
        unknown = [k for k in obj if k not in LINE_KEYS]
        if unknown:
            raise ExamError(f"{path}: line {n}: unknown key {unknown[0]!r} "
                            f"(known: {', '.join(LINE_KEYS)})")
        case_no = obj.get("case_no")
        if case_no not in items:
            raise ExamError(f"{path}: line {n}: case_no {case_no!r} is not in {bank.path}")
        if "reply" not in obj:
            raise ExamError(f"{path}: line {n}: {case_no}: missing 'reply'")
        run_status = obj.get("run_status", "ok")
        if run_status not in RUN_STATUSES:
            raise ExamError(f"{path}: line {n}: {case_no}.run_status: expected one of "
                            f"{', '.join(RUN_STATUSES)}, found {run_status!r}")
        read = read_body(obj["reply"], mapping)
        problem = ""
        if read.problem and run_status == "ok":
            run_status, problem = "bad_reply", read.problem
        # figures the line gives override what the reply body reported; absent ones do not
        figures: dict[str, Any] = {
            k: _figure_on_line(path, n, k, obj[k]) for k in ("attempts", "model_calls", "tokens",
                                                      "latency_ms") if obj.get(k) is not None}
        if "status" in obj:
            figures["status"] = None if obj["status"] is None else str(obj["status"])
        reply = to_reply(read, run_status=run_status, **figures)
        repeat = obj.get("repeat", 1)
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            raise ExamError(f"{path}: line {n}: {case_no}.repeat: expected a whole number ≥ 1, "
                            f"found {repeat!r}")
        out.append(GradedLine(repeat, grade(items[case_no].question, reply), problem))
    return out
