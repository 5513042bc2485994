"""The quarterly review: difficulty and discrimination per question, the category mix, advice.

Discrimination and regression protection are two jobs: keep one or two
saturated guards per category, retire or harden the rest once the history proves them
saturated, fix broken rubrics and unstable questions, and add boundary cases where a
category has too few informative ones. Each question gets one *role* from its own figures
(the rules are in docs/reports.md); a saved rebalance is a snapshot the next one is
compared with (quarter over quarter).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from exam.errors import ExamError
from exam.reports import discrimination
from exam.reports.regrade import GradedCell, Regraded
from exam.reports.scorecard import SEVERITY_ORDER
from exam.reports.stats import benjamini_hochberg, exact_2xk, pearson, wilson
from graders import GRADER_VERSION
from graders.model import GRADED

ROLES = ("separates", "informative", "guard", "unsettled", "too_easy", "too_hard", "unstable",
         "broken", "not_in_latest", "no_data")
# per-question action: the category plan's list it is on
ACTIONS = (("guards_kept", "keep_guard"), ("retire", "retire"), ("too_early_to_retire", "wait"),
           ("harden", "harden"), ("ease_or_audit", "review_difficulty"), ("audit", "audit_rubric"),
           ("fix", "fix_unstable"), ("add_repeats", "add_repeats"))


class RebalanceError(ExamError):
    pass


@dataclass(frozen=True, slots=True)
class RebalanceRules:
    """The rebalance's rules; every one is printed with the report."""

    band: tuple[float, float] = (0.3, 0.8)  # target pass rate on the latest version
    min_versions: int = 3  # versions with enough repeats before retirement advice
    min_repeats: int = 5  # graded repeats a version needs to count towards min_versions
    min_runs_item_rest: int = 20  # runs before an item-rest correlation is shown
    keep_guards: int = 2  # saturated guards kept per category (never fewer than one)
    target_informative: int = 2  # informative questions wanted per category
    alpha: float = 0.05  # false discovery rate for the version-pair and run-stability tests

    def check(self) -> None:
        low, high = self.band
        if not 0 <= low < high <= 1:
            raise RebalanceError(f"--band {low:g} {high:g}: expected 0 ≤ LOW < HIGH ≤ 1")
        for name in ("min_versions", "min_repeats", "keep_guards"):
            if getattr(self, name) < 1:
                raise RebalanceError(f"--{name.replace('_', '-')} must be at least 1")
        if self.min_runs_item_rest < 4:
            raise RebalanceError("--min-runs-item-rest must be at least 4 (a correlation over "
                                 "fewer runs has no interval)")
        if self.target_informative < 0:
            raise RebalanceError("--target-informative must be 0 or more")


def counted_runs(runs: Sequence[Any]) -> list[Any]:
    """The runs a rebalance counts: every selection goes through here, so a run marked
    excluded (``exam runs exclude``) is left out of every figure."""
    return [r for r in runs if not getattr(r, "excluded", False)]


# -- figures ----------------------------------------------------------------------------

def _fisher_ci(r: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """95% interval of a correlation over n pairs (Fisher's z transform)."""
    if n <= 3:
        return (-1.0, 1.0)
    centre = math.atanh(max(-0.999999, min(0.999999, r)))
    half = z / math.sqrt(n - 3)
    return (math.tanh(centre - half), math.tanh(centre + half))


def item_rest(cells: Sequence[GradedCell]) -> dict[str, float | None]:
    """Per question, the correlation across runs of its pass rate with the rest of the exam."""
    per_run: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for c in cells:
        if c.verdict in GRADED:
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


def _counts(cells: Sequence[GradedCell]) -> tuple[int, int]:
    graded = [c for c in cells if c.verdict in GRADED]
    return sum(1 for c in graded if c.verdict == "pass"), len(graded)


def _band(rate: float | None, band: tuple[float, float]) -> str | None:
    if rate is None:
        return None
    return "below" if rate < band[0] else "above" if rate > band[1] else "in"


def version_pairs(by_q: dict[str, dict[str, list[GradedCell]]], versions: list[str],
                   alpha: float) -> dict[str, list[dict[str, Any]]]:
    """Per question, the pairs of versions whose pass rates differ (Fisher's exact test on each
    pair, Benjamini–Hochberg over every pair of every question that can differ)."""
    tests: list[tuple[str, str, str, tuple[int, int], tuple[int, int], float]] = []
    for case_no, per_v in by_q.items():
        counts = {v: _counts(per_v.get(v, [])) for v in versions}
        present = [v for v in versions if counts[v][1]]
        for i, a in enumerate(present):
            for b in present[i + 1:]:
                (pa, na), (pb, nb) = counts[a], counts[b]
                if pa + pb in (0, na + nb):
                    continue  # both saturated or both at zero: they cannot differ
                tests.append((case_no, a, b, (pa, na), (pb, nb),
                              exact_2xk([pa, pb], [na, nb])))
    qs = benjamini_hochberg([t[-1] for t in tests])
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (case_no, a, b, (pa, na), (pb, nb), p), q in zip(tests, qs, strict=True):
        if q < alpha:
            out[case_no].append({"from": a, "to": b, "from_rate": pa / na, "to_rate": pb / nb,
                                 "direction": "better" if pb / nb > pa / na else "worse",
                                 "p": p, "q": q})
    return out


def run_stability(by_q: dict[str, dict[str, list[GradedCell]]], alpha: float
               ) -> tuple[dict[str, list[dict[str, Any]]], set[str]]:
    """Per question, the versions whose own runs disagree beyond binomial noise (exact test
    across that version's runs, BH over every test); and the questions that could be tested
    (graded in two or more runs of one version)."""
    tests: list[tuple[str, str, list[int], list[int], float]] = []
    testable: set[str] = set()
    for case_no, per_v in by_q.items():
        for version, cells in per_v.items():
            per_run: dict[int, list[GradedCell]] = defaultdict(list)
            for c in cells:
                per_run[c.run_id].append(c)
            counts = [_counts(cs) for cs in per_run.values()]
            counts = [c for c in counts if c[1]]
            if len(counts) < 2:
                continue
            testable.add(case_no)
            passes, totals = [c[0] for c in counts], [c[1] for c in counts]
            if sum(passes) in (0, sum(totals)):
                continue
            tests.append((case_no, version, passes, totals, exact_2xk(passes, totals)))
    qs = benjamini_hochberg([t[-1] for t in tests])
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (case_no, version, passes, totals, p), q in zip(tests, qs, strict=True):
        if q < alpha:
            out[case_no].append({"version": version, "runs": [f"{a}/{n}" for a, n in
                                                              zip(passes, totals, strict=True)],
                                 "p": p, "q": q})
    return out, testable


def _role(row: dict[str, Any], settings: RebalanceRules, stability_tested: bool
          ) -> tuple[str, str]:
    """(role, why) from a question's figures; the order of the rules is the order here."""
    passes, graded = row["passes"], row["graded"]
    low, high = settings.band
    latest = row["latest"]["rate"]
    if not graded:
        return "no_data", "no graded reply: every cell was infrastructure trouble"
    if passes == 0:
        return "broken", "no version ever passes: audit the rubric before the agent"
    if row["unstable_runs"]:
        u = row["unstable_runs"][0]
        return "unstable", (f"runs of {u['version']} disagree beyond chance ({', '.join(u['runs'])}"
                            f", q = {u['q']:.2g}): something besides the version moves it")
    if passes == graded:
        return "guard", f"passes every graded repeat ({passes}/{graded})"
    if row["pairs"]:  # the latest version's own difference first, if it has one
        pair = next((p for p in row["pairs"] if p["to"] == row["latest"]["version"]),
                    row["pairs"][0])
        return "separates", (f"{pair['from']} {pair['from_rate']:.0%} → {pair['to']} "
                             f"{pair['to_rate']:.0%} (q = {pair['q']:.2g})")
    graded_versions = [r for r in row["per_version"] if r["graded"]]
    if any(r["passes"] == r["graded"] for r in graded_versions) and any(
            r["passes"] == 0 for r in graded_versions):
        top = max(graded_versions, key=lambda r: r["rate"])
        bottom = min(graded_versions, key=lambda r: r["rate"])
        return "unsettled", (f"{bottom['version']} {bottom['passes']}/{bottom['graded']}, "
                             f"{top['version']} {top['passes']}/{top['graded']}: separates "
                             "completely but not significantly; more repeats will tell")
    if latest is None:
        return "not_in_latest", "not graded on the latest version"
    if latest > high:
        return "too_easy", f"passes {latest:.0%} on the latest version, above {high:.0%}"
    if latest < low:
        return "too_hard", f"passes {latest:.0%} on the latest version, below {low:.0%}"
    return "informative", (f"passes {latest:.0%} on the latest version, inside the band"
                           + ("; its runs agree within chance" if stability_tested else ""))


def _evidence_versions(row: dict[str, Any], settings: RebalanceRules) -> int:
    return sum(1 for r in row["per_version"] if r["graded"] >= settings.min_repeats)


def _plan_category(cat: str, rows: list[dict[str, Any]], settings: RebalanceRules) -> dict[str, Any]:
    """What to keep, retire, fix and add in one category."""
    roles = defaultdict(list)
    for r in rows:
        roles[r["role"]].append(r)
    guards = sorted(roles["guard"], key=lambda r: (SEVERITY_ORDER.get(r["severity"], 1),
                                                   r["case_no"]))
    keep, retire, too_early = [], [], []
    for g in guards:
        if len(keep) < settings.keep_guards or g["severity"] == "critical":
            keep.append(g)  # the most severe first; a critical guard is never retired
        elif _evidence_versions(g, settings) < settings.min_versions:
            too_early.append(g)
        else:
            retire.append(g)
    informative = len(roles["separates"]) + len(roles["informative"])
    return {
        "category": cat, "questions": len(rows),
        "roles": {role: len(roles[role]) for role in ROLES if roles[role]},
        "informative": informative,
        "guards_kept": [g["case_no"] for g in keep],
        "retire": [g["case_no"] for g in retire],
        "too_early_to_retire": [g["case_no"] for g in too_early],
        "harden": [r["case_no"] for r in roles["too_easy"]],
        "ease_or_audit": [r["case_no"] for r in roles["too_hard"]],
        "audit": [r["case_no"] for r in roles["broken"]],
        "fix": [r["case_no"] for r in roles["unstable"]],
        "add_repeats": [r["case_no"] for r in roles["unsettled"]],
        "add": max(0, settings.target_informative - informative),
    }


def _advice(plans: list[dict[str, Any]], rows: list[dict[str, Any]], settings: RebalanceRules
            ) -> list[dict[str, Any]]:
    by_case = {r["case_no"]: r for r in rows}
    advice = []
    for p in plans:
        cat = p["category"]
        if p["retire"]:
            advice.append({"action": "retire_or_harden", "category": cat,
                           "keep": p["guards_kept"], "cases": p["retire"],
                           "text": f"{cat}: keep {', '.join(p['guards_kept'])} as regression "
                                   f"guard(s); retire or harden {', '.join(p['retire'])} into "
                                   "boundary variants"})
        if p["too_early_to_retire"]:
            advice.append({"action": "wait", "category": cat, "cases": p["too_early_to_retire"],
                           "text": f"{cat}: {', '.join(p['too_early_to_retire'])} saturated but "
                                   f"too early to retire: needs {settings.min_versions} versions "
                                   f"with ≥ {settings.min_repeats} graded repeats"})
        if p["add"]:
            advice.append({"action": "add_boundary_cases", "category": cat, "cases": [],
                           "count": p["add"],
                           "text": f"{cat}: add {p['add']} boundary case(s) (has "
                                   f"{p['informative']} informative, wants "
                                   f"{settings.target_informative})"})
    for key, action, text in (
        ("audit", "audit_rubric", "no version ever passes: audit the rubric first"),
        ("fix", "fix_unstable", "runs of one version disagree beyond chance: look for state, "
                                "time or upstream data the answer depends on"),
        ("harden", "harden", "above the band on the latest version: harden into a boundary "
                             "variant"),
        ("add_repeats", "add_repeats", "separates versions completely, with too few repeats "
                                       "to be significant: run more repeats before judging it"),
        ("ease_or_audit", "review_difficulty", "below the band on the latest version: too hard, "
                                               "or a rubric problem"),
    ):
        cases = [c for p in plans for c in p[key]]
        if cases:
            first = by_case[cases[0]].get("failing_checks") or []
            why = (f" (e.g. {first[0]['name']}: {first[0]['evidence']})"
                   if first and key in ("audit", "ease_or_audit") else "")
            advice.append({"action": action, "category": None, "cases": cases,
                           "text": f"{', '.join(cases)}: {text}{why}"})
    return advice


def _item_rest_note(n_runs: int, settings: RebalanceRules) -> dict[str, Any]:
    if n_runs >= settings.min_runs_item_rest:
        lo, hi = _fisher_ci(0.0, n_runs)
        return {"shown": True, "runs": n_runs, "min_runs": settings.min_runs_item_rest,
                "reason": f"{n_runs} runs: a correlation of 0 has a 95% interval of "
                          f"{lo:+.2f} to {hi:+.2f}"}
    if n_runs < 4:
        why = "a correlation needs at least 4 runs to have an interval at all"
    else:
        lo, hi = _fisher_ci(0.0, n_runs)
        why = f"a correlation of 0 over {n_runs} runs has a 95% interval of {lo:+.2f} to {hi:+.2f}"
    return {"shown": False, "runs": n_runs, "min_runs": settings.min_runs_item_rest,
            "reason": f"item-rest omitted: {n_runs} run(s), {settings.min_runs_item_rest} needed "
                      f"(--min-runs-item-rest); {why}"}


def build_agent(regraded: Regraded, agent: str, disc: dict[str, Any],
                settings: RebalanceRules) -> dict[str, Any]:
    versions = discrimination.version_order(regraded, agent)
    latest = versions[-1] if versions else None
    cells = [c for c in regraded.cells if c.agent == agent]
    by_q, meta = discrimination.by_question(regraded, agent)
    pairs = version_pairs(by_q, versions, settings.alpha)
    unstable, stability_tested = run_stability(by_q, settings.alpha)
    runs = sorted({c.run_id for c in cells})
    ir_note = _item_rest_note(len(runs), settings)
    ir = item_rest(cells) if ir_note["shown"] else {}
    disc_q = {q["case_no"]: q for q in disc["questions"]}
    rows = []
    for case_no in sorted(by_q):
        per_version = []
        for v in versions:
            passes, graded = _counts(by_q[case_no].get(v, []))
            per_version.append({"version": v, "passes": passes, "graded": graded,
                                "rate": passes / graded if graded else None})
        passes, graded = _counts([c for vc in by_q[case_no].values() for c in vc])
        last = per_version[-1]
        lo, hi = wilson(last["passes"], last["graded"])
        d = disc_q.get(case_no, {})
        row = {"case_no": case_no, "category": meta[case_no].category,
               "severity": meta[case_no].severity, "class": d.get("class"),
               "passes": passes, "graded": graded,
               "difficulty": passes / graded if graded else None,
               "per_version": per_version,
               "latest": {"version": latest, "rate": last["rate"], "graded": last["graded"],
                          "wilson": [lo, hi] if last["graded"] else None,
                          "band": _band(last["rate"], settings.band)},
               "pairs": pairs.get(case_no, []), "unstable_runs": unstable.get(case_no, []),
               "item_rest": ir.get(case_no) if ir_note["shown"] else None,
               "failing_checks": d.get("failing_checks") or []}
        if row["item_rest"] is not None:
            row["item_rest_ci"] = list(_fisher_ci(row["item_rest"], len(runs)))
        row["role"], row["why"] = _role(row, settings, case_no in stability_tested)
        rows.append(row)
    by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_cat[r["category"]].append(r)
    plans = [_plan_category(cat, qs, settings) for cat, qs in sorted(by_cat.items())]
    action = {c: act for p in plans for key, act in ACTIONS for c in p[key]}
    for r in rows:
        r["action"] = action.get(r["case_no"], "")
    advice = _advice(plans, rows, settings)
    n, separating = len(rows), sum(1 for r in rows if r["role"] == "separates")
    if n and separating / n < 0.2:
        advice.append({"action": "rebalance_mix", "category": None, "cases": [],
                       "text": f"only {separating} of {n} questions separate versions: shift the "
                               "mix toward boundary cases, one or two guards per category"})
    in_band = sum(1 for r in rows if r["latest"]["band"] == "in")
    return {
        "agent": agent, "versions": versions, "latest_version": latest, "runs": len(runs),
        "run_ids": runs,
        "questions": rows,
        "stability": {"testable": bool(stability_tested),
                      "note": "" if stability_tested else
                      "one run per version: between-run stability cannot be tested; a pass "
                      "rate inside the band is read as difficulty"},
        "item_rest": ir_note,
        "categories": plans,
        "summary": {"questions": n, "separating": separating, "in_band": in_band,
                    "roles": {role: sum(1 for r in rows if r["role"] == role) for role in ROLES},
                    "retire": sum(len(p["retire"]) for p in plans),
                    "add": sum(p["add"] for p in plans),
                    "headline": f"{separating} of {n} questions separate versions significantly; {in_band} "
                                f"inside the band on {latest}"},
        "advice": advice,
    }


# -- snapshots (quarter over quarter) ---------------------------------------------------

def snapshot(agent_report: dict[str, Any]) -> dict[str, Any]:
    """What a saved rebalance keeps: enough to say what changed next quarter."""
    return {
        "versions": agent_report["versions"], "runs": agent_report["runs"],
        "summary": {k: agent_report["summary"][k] for k in ("questions", "separating", "in_band",
                                                            "retire", "add")},
        "questions": {r["case_no"]: {"category": r["category"], "role": r["role"],
                                     "latest_rate": r["latest"]["rate"],
                                     "difficulty": r["difficulty"]}
                      for r in agent_report["questions"]},
        "categories": {p["category"]: {"questions": p["questions"],
                                       "informative": p["informative"],
                                       "guards": len(p["guards_kept"]) + len(p["retire"])
                                       + len(p["too_early_to_retire"]),
                                       "retire": len(p["retire"]), "add": p["add"]}
                       for p in agent_report["categories"]},
    }


def diff(previous: dict[str, Any] | None, agent_report: dict[str, Any]) -> dict[str, Any] | None:
    """The change since the previous saved snapshot (None when there is none)."""
    if previous is None:
        return None
    before, now = previous["snapshot"], snapshot(agent_report)
    bq, nq = before["questions"], now["questions"]
    roles, moved = [], []
    for case_no in sorted(set(bq) & set(nq)):
        b, n = bq[case_no], nq[case_no]
        if b["role"] != n["role"]:
            roles.append({"case_no": case_no, "before": b["role"], "after": n["role"]})
        if b["latest_rate"] is not None and n["latest_rate"] is not None and \
                abs(n["latest_rate"] - b["latest_rate"]) >= 0.1 - 1e-9:
            moved.append({"case_no": case_no, "before": b["latest_rate"],
                          "after": n["latest_rate"],
                          "delta": n["latest_rate"] - b["latest_rate"]})
    cats = {}
    for cat in sorted(set(before["categories"]) | set(now["categories"])):
        b = before["categories"].get(cat, {})
        n = now["categories"].get(cat, {})
        cats[cat] = {k: {"before": b.get(k, 0), "after": n.get(k, 0)}
                     for k in ("questions", "informative", "guards", "retire", "add")}
    summary = {k: {"before": before["summary"].get(k), "after": now["summary"][k]}
               for k in now["summary"]}
    added, removed = sorted(set(nq) - set(bq)), sorted(set(bq) - set(nq))
    return {"previous_id": previous["id"], "previous_at": previous["created_at"],
            "previous_since": previous["since"], "previous_versions": before["versions"],
            "added": added, "removed": removed, "role_changes": roles,
            "difficulty_moves": moved, "categories": cats, "summary": summary,
            "headline": f"since snapshot #{previous['id']}: {len(added)} question(s) added, "
                        f"{len(removed)} removed, {len(roles)} changed role; in band "
                        f"{summary['in_band']['before']} → {summary['in_band']['after']}, "
                        f"separating {summary['separating']['before']} → "
                        f"{summary['separating']['after']}"}


def build(regraded: Regraded, since: str | None = None, settings: RebalanceRules | None = None,
          store: Any = None, excluded: Sequence[int] = ()) -> dict[str, Any]:
    """The rebalance report; with ``store``, each agent also shows the change since its last
    saved snapshot. ``excluded``: ids of the runs ``counted_runs`` left out, to name them."""
    settings = settings or RebalanceRules()
    settings.check()
    disc = discrimination.build(regraded)
    agents = []
    for a in disc["agents"]:
        report = build_agent(regraded, a["agent"], a, settings)
        previous = store.rebalance_snapshots(a["agent"])[-1:] if store is not None else []
        report["since_snapshot"] = diff(previous[0] if previous else None, report)
        agents.append(report)
    out = asdict(settings)
    out["band"] = list(settings.band)
    return {"grader_version": GRADER_VERSION, "bank_digests": regraded.bank_digests(),
            "since": since, "settings": out, "excluded_run_ids": sorted(excluded),
            "agents": agents, "missing_banks": regraded.missing_banks}


def save(store: Any, report: dict[str, Any]) -> list[int]:
    """Keep each agent's rebalance as a snapshot; returns their ids."""
    return [store.add_rebalance_snapshot(a["agent"], report["since"], snapshot(a))
            for a in report["agents"]]


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
