"""Questions removed from the bank since OLD ran, and whether the verdict may go on without them.

Every report grades under today's bank, so a question deleted from it leaves the comparison
silently: delete the question that held and the same runs ship. Here each question OLD's runs
asked that today's bank no longer has is graded again under the rubric it was asked with
(kept with each run since schema 12), OLD's and NEW's replies alike, and named. One that
mattered — it would hold or stay undecided under that rubric, it is critical, or either
version failed it — makes a ship (or an undecided) ``pending``: a person accepts the removal
(ask OLD again under today's bank and leave its older runs out) or puts the question back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from exam.bank import Item, parse_bank
from exam.grading.stored import replies_of
from exam.reports import verdict
from exam.reports.regrade import Regraded
from exam.store import Run
from graders import grade

# why a removed question matters, the first that applies
MATTERS = ("hold", "critical", "failing", "not_regraded")


def removed(regraded: Regraded, runs: Sequence[Run], agent: str, old: str, new: str,
            settings: verdict.Settings) -> list[dict[str, Any]]:
    """One entry per question OLD's runs asked that today's bank no longer has: its tallies
    under the rubric it was asked with and whether it mattered (``mattered``: a word of
    ``MATTERS``, or None)."""
    old_runs = sorted((r for r in runs if r.version == old), key=lambda r: r.id)
    new_runs = sorted((r for r in runs if r.version == new), key=lambda r: r.id)
    gone = sorted({c for r in old_runs for c in regraded.removed.get(r.id, [])})
    if not gone:
        return []
    rows = _cells(regraded, old_runs + new_runs, set(gone))
    out = []
    for case_no in gone:
        kept = _kept(regraded, old_runs, case_no)
        entry: dict[str, Any] = {"case_no": case_no, "runs": [
            r.id for r in old_runs if case_no in regraded.removed.get(r.id, [])],
            "severity": None, "old": None, "new": None, "word": None, "mattered": None}
        if regraded.store is None:  # nothing to read the replies from: never read as passing
            entry["mattered"] = "not_regraded"
            entry["why"] = "its replies were not read from a store"
            out.append(entry)
            continue
        if kept is None:
            # asked before banks were kept with runs (schema 12): its rubric is not recorded,
            # so nothing shows it did not matter
            entry["mattered"] = "not_regraded"
            entry["why"] = "its rubric is not recorded (the run predates schema 12)"
            out.append(entry)
            continue
        raw, fold, run = kept
        item = _item(agent, case_no, raw, fold, run)
        if item is None:
            entry["mattered"] = "not_regraded"
            entry["why"] = "its kept rubric no longer parses"
            out.append(entry)
            continue
        by_run = {r.id: r for r in old_runs + new_runs}
        tallies = {}
        for side, side_runs in (("old", old_runs), ("new", new_runs)):
            ids = {r.id for r in side_runs}
            tallies[side] = _tally(regraded, by_run, [c for c in rows.get(case_no, [])
                                                      if c.run_id in ids], item)
        severity = item.question.severity
        q = verdict.Compared(case_no, severity, item.category, tallies["new"], tallies["old"],
                             verdict.Tally(tallies["old"].passes, tallies["old"].fails),
                             (old,))
        word = None
        if tallies["new"].planned:
            d = verdict.decide([q], settings, figures=False)
            word = d["word"]
            state = next((t["state"] for t in d["tests"]), None)
            word = state if state in ("hold", "undecided") else word
        entry.update(severity=severity, word=word,
                     old=f"{tallies['old'].passes}/{tallies['old'].answered}",
                     new=(f"{tallies['new'].passes}/{tallies['new'].answered}"
                          if tallies["new"].planned else None))
        if word == "hold":
            entry["mattered"] = "hold"
        elif severity == "critical":
            entry["mattered"] = "critical"
        elif tallies["old"].fails or tallies["new"].fails or word == "undecided":
            entry["mattered"] = "failing"
        out.append(entry)
    return out


def apply(decision: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    """Name the removed questions in ``decision``; one that mattered turns a ship or an
    undecided into ``pending`` (a hold, an incomplete or a review already says no)."""
    decision["removed"] = entries
    mattered = [e["case_no"] for e in entries if e["mattered"]]
    decision["pending"]["removed"] = mattered
    if mattered and decision["word"] in ("ship", "undecided"):
        decision["word"] = "pending"
        decision["exit_code"] = verdict.EXIT_CODES["pending"]


describe = verdict.describe_removed  # the words the verdict line uses, kept in one place


def _kept(regraded: Regraded, old_runs: Sequence[Run], case_no: str
          ) -> tuple[dict[str, Any], bool, int] | None:
    """The question as OLD's latest run that had it was made with."""
    for r in reversed(old_runs):
        kept = regraded.run_banks.get(r.id)
        if kept and case_no in kept.get("questions", {}):
            return kept["questions"][case_no], bool(kept.get("fold_script")), r.id
    return None


def _item(agent: str, case_no: str, raw: Mapping[str, Any], fold: bool, run: int
          ) -> Item | None:
    data = {"agent": agent, "options": {"fold_script": fold}, "questions": [dict(raw)]}
    bank, _problems = parse_bank(data, f"{case_no} as run {run} was made with")
    return bank.items[0] if bank is not None and len(bank.items) == 1 else None


def _cells(regraded: Regraded, runs: Sequence[Run], gone: set[str]) -> dict[str, list]:
    store = regraded.store
    out: dict[str, list] = {}
    if store is None:
        return out
    for row in store.cells([r.id for r in runs]):
        if row.case_no in gone:
            out.setdefault(row.case_no, []).append(row)
    return out


def _tally(regraded: Regraded, runs: Mapping[int, Run], rows: Sequence[Any], item: Item
           ) -> verdict.Tally:
    """The rows graded under ``item``, with the planned cells of the runs that asked it."""
    counts = {"pass": 0, "fail": 0, "needs_human": 0, "not_graded": 0}
    trouble: dict[str, int] = {}
    ok = [(runs[r.run_id], r, item) for r in rows if r.run_status == "ok"]
    for (run, _row, _item), reply in zip(ok, replies_of(regraded.store, ok), strict=True):
        g = grade(item.question, reply, budget=run.settings.get("budget") or {}).verdict
        counts[g if g in counts else "not_graded"] += 1
    for r in rows:
        if r.run_status != "ok":
            trouble[r.run_status] = trouble.get(r.run_status, 0) + 1
    return verdict.Tally(counts["pass"], counts["fail"], counts["needs_human"],
                         counts["not_graded"], trouble)
