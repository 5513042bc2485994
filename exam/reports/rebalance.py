"""The quarterly review: difficulty and discrimination per question, the category mix, advice.

Discrimination and regression protection are two jobs (seed 003): keep one or two
saturated guards per category, retire or harden the rest, fix broken rubrics, and add
boundary cases where no question separates versions.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from exam.reports import discrimination
from exam.reports.regrade import Regraded
from exam.reports.scorecard import SEVERITY_ORDER
from exam.reports.stats import pearson
from graders import GRADER_VERSION

KEEP_GUARDS = 2


def item_rest(regraded: Regraded, agent: str) -> dict[str, float | None]:
    """Per question, the correlation across runs of its pass rate with the rest of the exam."""
    per_run: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for c in regraded.cells:
        if c.agent == agent and c.verdict in ("pass", "fail", "needs_human"):
            per_run[c.run_id][c.case_no].append(1 if c.verdict == "pass" else 0)
    runs = sorted(per_run)
    cases = sorted({q for r in runs for q in per_run[r]})
    out: dict[str, float | None] = {}
    for q in cases:
        xs, ys = [], []
        for r in runs:
            if q not in per_run[r]:
                continue
            rest = [sum(v) / len(v) for k, v in per_run[r].items() if k != q]
            if not rest:
                continue
            xs.append(sum(per_run[r][q]) / len(per_run[r][q]))
            ys.append(sum(rest) / len(rest))
        out[q] = pearson(xs, ys)
    return out


def advise(agent_report: dict[str, Any]) -> list[dict[str, Any]]:
    questions = agent_report["questions"]
    by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in questions:
        by_cat[q["category"]].append(q)
    advice = []
    for cat, qs in sorted(by_cat.items()):
        # keep the most severe guards: a critical regression is the one to catch
        guards = sorted((q for q in qs if q["class"] == "regression_guard"),
                        key=lambda q: (SEVERITY_ORDER.get(q["severity"], 1), q["case_no"]))
        if len(guards) > KEEP_GUARDS:
            keep = [q["case_no"] for q in guards[:KEEP_GUARDS]]
            rest = [q["case_no"] for q in guards[KEEP_GUARDS:]]
            advice.append({"action": "retire_or_harden", "category": cat, "keep": keep,
                           "cases": rest,
                           "text": f"{cat}: keep {', '.join(keep)} as regression guards; retire or "
                                   f"harden {', '.join(rest)} into boundary variants"})
        if len(qs) >= 3 and not any(q["class"] == "discriminating" for q in qs):
            advice.append({"action": "add_boundary_cases", "category": cat, "cases": [],
                           "text": f"{cat}: no question separates versions; add boundary cases"})
    for cls, action, text in (
        ("always_failing", "audit_rubric", "no version ever passes: audit the rubric first"),
        ("flaky", "fix_flaky", "inconsistent within versions: tighten the rubric or the "
                               "question, or run more repeats"),
        ("inconclusive", "add_repeats", "a difference too small to trust: add repeats"),
        ("near_floor", "review_difficulty", "almost never passes: too hard, or a rubric problem"),
    ):
        hits = [q for q in questions if q["class"] == cls]
        if hits:
            first = hits[0].get("failing_checks") or []
            why = f" (e.g. {first[0]['name']}: {first[0]['evidence']})" if first else ""
            advice.append({"action": action, "category": None,
                           "cases": [q["case_no"] for q in hits],
                           "text": f"{', '.join(q['case_no'] for q in hits)}: {text}{why}"})
    n = len(questions)
    separating = agent_report["summary"]["separating"]
    if n and separating / n < 0.2:
        advice.append({"action": "rebalance_mix", "category": None, "cases": [],
                       "text": f"only {separating} of {n} questions separate versions: shift the "
                               "mix toward boundary cases, one or two guards per category"})
    return advice


def build(regraded: Regraded, since: str | None = None) -> dict[str, Any]:
    disc = discrimination.build(regraded)
    agents = []
    for a in disc["agents"]:
        ir = item_rest(regraded, a["agent"])
        rows = []
        for q in a["questions"]:
            graded = sum(r["graded"] for r in q["pass_rates"])
            passes = sum(r["passes"] for r in q["pass_rates"])
            rates = [r["rate"] for r in q["pass_rates"] if r["rate"] is not None]
            rows.append({"case_no": q["case_no"], "category": q["category"], "class": q["class"],
                         "difficulty": passes / graded if graded else None,
                         "spread": (max(rates) - min(rates)) if rates else None,
                         "item_rest": ir.get(q["case_no"]), "q": q["q"]})
        mix: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for q in a["questions"]:
            mix[q["category"]][q["class"]] += 1
        agents.append({"agent": a["agent"], "versions": a["versions"],
                       "runs": len({c.run_id for c in regraded.cells if c.agent == a["agent"]}),
                       "questions": rows, "category_mix": {k: dict(v) for k, v in mix.items()},
                       "summary": a["summary"], "advice": advise(a)})
    return {"grader_version": GRADER_VERSION, "bank_digests": regraded.bank_digests(),
            "since": since, "agents": agents, "missing_banks": regraded.missing_banks}


def write_tags(report: dict[str, Any], regraded: Regraded) -> list[str]:
    """Record class and difficulty as tags in the bank files; nothing else in them changes."""
    written = []
    for a in report["agents"]:
        banks = [b for b in regraded.banks.values() if b.agent == a["agent"]]
        rows = {r["case_no"]: r for r in a["questions"]}
        for bank in banks:
            path = Path(bank.path)
            data = json.loads(path.read_text(encoding="utf-8"))
            questions = data if isinstance(data, list) else data.get("questions", [])
            for q in questions:
                row = rows.get(q.get("case_no"))
                if row is None:
                    continue
                tags = [t for t in q.get("tags", []) if not t.startswith(("class:", "difficulty:"))]
                tags.append(f"class:{row['class']}")
                if row["difficulty"] is not None:
                    tags.append(f"difficulty:{row['difficulty']:.2f}")
                q["tags"] = tags
            path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
            written.append(str(path))
    return written
