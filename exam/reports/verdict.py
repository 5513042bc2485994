"""The verdict of a change: ``ship``, ``hold``, ``incomplete``, ``undecided`` or ``pending``.

Computed here, once, from per-question tallies; `exam compare`, `exam run --against`, the
API, the dashboard, LINE and the n8n after-change workflow all read the same word.

Order of precedence (the first that applies):

1. ``hold`` — a question is worse with evidence: one-sided Fisher exact test of "new is
   worse" on answered cells, discrete Benjamini–Hochberg (Gilbert 2005) over the questions
   that can move (each screened by its own margins and alpha: monotone), q ≤ alpha, drop ≥
   min_effect and ≥ min_answered answered repeats on both sides (per-severity overrides).
   A regression proven on the cells that did arrive is a "no" whatever the missing cells
   would have said, so it comes first; the line still says what was missing.
2. ``incomplete`` — graded cells of either version below the coverage floor (a not_graded
   reply is missing like one that never arrived), or a question
   with no answered cell in the new version (nothing arrived; the old version asked it and
   the new one never did; or nothing the new version said could be graded where the old
   version's could): names the questions and why (timeout, blocked, http_error, not_run,
   not_asked, not_graded…), or a critical question that lost most of its cells in the new
   version (the floor is bank-wide; a critical question is never averaged away), or a
   question in the old version's bank that its runs left out and the new one fails, or a run
   of either version still going (or interrupted) with cells yet to come. Missing data is
   never read as safe.
3. ``pending`` — needs_human cells of the new version nobody has decided (`exam review`);
   a question removed from the bank since the old version ran that mattered
   (exam.reports.bank_changes); a ship resting on a changed rubric (rubric_drift);
   and the old version's, where they are a question's whole baseline and the new version
   fails it (a question with no answered old cell that the new version fails is otherwise
   ``incomplete``: whether it regressed is unknown).
4. ``undecided`` — a question answered worse and not held, and the data cannot rule out a
   drop of min_effect (Newcombe's one-sided 95% bound), or it has fewer than min_answered
   answered repeats: with the repeats `--settle` would spend to detect a drop of the observed
   size (at least min_effect) at 80% power, at its own levels. Also a question added to the
   bank since the old version ran that the new one fails (``hold`` when critical): no
   baseline shows it did not get worse.
5. ``ship`` — none of the above: no question answered worse beyond what its data rule out.
   A question that did not answer worse at all (1/1 → 1/1, 3/3 → 3/3) never blocks a ship;
   the ship says the largest fall on one question its repeats could let through
   (``could_miss``). The baseline is the old version alone: pooling earlier versions chosen
   for never failing selected on the outcome (docs/reports.md).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from exam.bank.rubric import describe
from exam.records import RunState
from exam.reports.stats import (
    _binom_pmf,
    discrete_bh,
    fisher_worse,
    fisher_worse_min,
    power_worse,
    repeats_for_power,
    wilson,
)

VERDICTS = ("ship", "hold", "incomplete", "undecided", "pending")
EXIT_CODES = {"ship": 0, "hold": 1, "incomplete": 3, "undecided": 4, "pending": 5}
PRECEDENCE = ("hold", "incomplete", "pending", "undecided", "ship")
# `--settle`'s design (exam/decide/settle.py): each interim look of a question spends SETTLE_INTERIM
# of its alpha/m, its last look (at SETTLE_MAX_REPEATS answered repeats) the rest. The
# repeats-needed figure is what settle would spend, so it is computed at these levels
SETTLE_INTERIM = 0.01
SETTLE_MAX_REPEATS = 40
SETTLE_STEP = 3
TOL = 1e-9  # exact p-values are rationals: a float at the boundary is read as on it


@dataclass(frozen=True, slots=True)
class Rule:
    """The evidence a hold needs for one severity."""

    alpha: float = 0.05
    min_effect: float = 0.2  # drop in pass rate, 0..1
    min_answered: int = 3  # answered repeats on each side

    def as_dict(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "min_effect": self.min_effect,
                "min_answered": self.min_answered}


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the verdict depends on; printed with it."""

    rule: Rule = Rule()
    by_severity: Mapping[str, Rule] = field(default_factory=lambda: {
        "critical": Rule(alpha=0.10, min_effect=0.15, min_answered=3)})
    coverage: float = 0.95  # answered cells / planned cells, each version
    power: float = 0.8

    def rule_for(self, severity: str) -> Rule:
        return self.by_severity.get(severity, self.rule)

    def as_dict(self) -> dict[str, Any]:
        return {**self.rule.as_dict(), "coverage": self.coverage, "power": self.power,
                "by_severity": {k: v.as_dict() for k, v in sorted(self.by_severity.items())}}


def settings_from(alpha: float | None = None, min_effect: float | None = None,
                  min_answered: int | None = None, coverage: float | None = None,
                  severity: Iterable[str] = ()) -> Settings:
    """Settings from CLI/API words; ``severity`` items look like ``critical:alpha=0.1``."""
    base = Settings()
    rule = Rule(alpha if alpha is not None else base.rule.alpha,
                min_effect if min_effect is not None else base.rule.min_effect,
                min_answered if min_answered is not None else base.rule.min_answered)
    by = dict(base.by_severity)
    for item in severity:
        sev, _, pairs = item.partition(":")
        r = by.get(sev, rule)
        for pair in filter(None, pairs.split(",")):
            key, _, value = pair.partition("=")
            if key not in ("alpha", "min_effect", "min_answered"):
                raise ValueError(f"{item!r}: unknown setting {key!r} "
                                 "(alpha, min_effect, min_answered)")
            try:
                r = replace(r, **{key: int(value) if key == "min_answered" else float(value)})
            except ValueError:
                raise ValueError(f"{item!r}: {key} expects a number, found {value!r}") from None
        by[sev] = r
    for name, r in [("", rule), *by.items()]:
        where = f"{name}: " if name else ""
        if not 0 < r.alpha < 1:
            raise ValueError(f"{where}alpha: expected a number between 0 and 1, found {r.alpha}")
        if not 0 <= r.min_effect <= 1:
            raise ValueError(f"{where}min_effect: expected 0..1, found {r.min_effect}")
        if r.min_answered < 1:
            raise ValueError(f"{where}min_answered: expected ≥ 1, found {r.min_answered}")
    cov = coverage if coverage is not None else base.coverage
    if not 0 < cov <= 1:
        raise ValueError(f"coverage: expected a fraction in (0, 1], found {cov}")
    return Settings(rule, by, cov, base.power)


@dataclass(frozen=True, slots=True)
class Tally:
    """One question in one version (or a baseline): what arrived and how it graded."""

    passes: int = 0
    fails: int = 0
    needs_human: int = 0
    not_graded: int = 0
    trouble: Mapping[str, int] = field(default_factory=dict)  # run status → cells

    @property
    def answered(self) -> int:
        return self.passes + self.fails

    @property
    def rate(self) -> float | None:
        return self.passes / self.answered if self.answered else None

    @property
    def arrived(self) -> int:
        return self.passes + self.fails + self.needs_human + self.not_graded

    @property
    def graded(self) -> int:
        """Cells with a grade (needs_human waits for a person, but it is an answer): the
        coverage. A not_graded reply arrived and says nothing, like one that never did."""
        return self.passes + self.fails + self.needs_human

    @property
    def planned(self) -> int:
        return self.arrived + sum(self.trouble.values())

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.passes + other.passes, self.fails + other.fails,
                     self.needs_human + other.needs_human, self.not_graded + other.not_graded,
                     dict(Counter(self.trouble) + Counter(other.trouble)))

    def as_dict(self) -> dict[str, Any]:
        return {"passes": self.passes, "answered": self.answered, "rate": self.rate,
                "needs_human": self.needs_human, "not_graded": self.not_graded,
                "not_arrived": dict(self.trouble), "planned": self.planned}


@dataclass(frozen=True, slots=True)
class Compared:
    case_no: str
    severity: str
    category: str
    new: Tally
    old: Tally
    baseline: Tally  # old's answered cells (see ``baseline_for``)
    baseline_versions: tuple[str, ...] = ()
    # in the old version's bank when it ran, and not asked (--only, --category): not a
    # question new in the bank, and no baseline either
    old_skipped: bool = False


def tally(cells: Iterable[Any], planned: int | None = None) -> Tally:
    """Count graded cells (``GradedCell``-like); ``planned`` adds cells that never ran."""
    c: Counter[str] = Counter()
    trouble: Counter[str] = Counter()
    n = 0
    for cell in cells:
        n += 1
        if cell.verdict is None:
            trouble[cell.run_status] += 1
        else:
            c[cell.verdict] += 1
    if planned is not None and planned > n:
        trouble["not_run"] += planned - n
    return Tally(c["pass"], c["fail"], c["needs_human"], c["not_graded"], dict(trouble))


def baseline_for(history: Sequence[tuple[str, Tally]], old: str
                 ) -> tuple[Tally, tuple[str, ...]]:
    """The baseline a question's new version is tested against: the old version's answered
    cells, and only those.

    Earlier versions are never pooled in. Pooling a question's history *because* it passed
    every repeat of every version chose the baseline by its outcome: four identical versions
    at 90% gave 9/9 → 1/3 holds in 16% of comparisons (alpha 5%). Pooling every version
    whatever it answered would be valid only if they were one population, which the data of a
    changed agent cannot show without choosing by the outcome again; see docs/reports.md.
    """
    own = dict(history).get(old, Tally())
    return Tally(own.passes, own.fails), (old,)


def settle_repeats(old_pass: int, old_n: int, p_new: float, new_n: int, share: float,
                   power: float) -> tuple[int | None, float]:
    """Answered repeats of NEW at which `--settle` holds a question whose true rate is
    ``p_new`` with ``power`` (OLD's counts as they are), and the level that look uses: an
    interim look (``share`` × SETTLE_INTERIM), else the last one at SETTLE_MAX_REPEATS
    (``share`` less what the interim looks spent). None: not within settle's repeats."""
    interim = share * SETTLE_INTERIM
    need = repeats_for_power(old_pass, old_n, p_new, interim, power, SETTLE_MAX_REPEATS)
    if need is not None:
        return need, interim
    looks = 1 + -(-max(0, SETTLE_MAX_REPEATS - new_n) // SETTLE_STEP)
    final = share * (1 - SETTLE_INTERIM * looks)

    if power_worse(old_pass, old_n, p_new, SETTLE_MAX_REPEATS, final) >= power - 1e-12:
        return SETTLE_MAX_REPEATS, final
    return None, final


def caught(b: Tally, passes: int, n: int, rule: Rule) -> bool:
    """Whether NEW at ``passes``/``n`` against baseline ``b`` keeps the question from a ship
    (held or undecided: the rule of ``decide`` for one question, whatever the others say)."""
    if not b.passes or not b.answered or not n:
        return False
    effect = b.passes / b.answered - passes / n
    if effect <= 1e-12:
        return False
    enough = min(b.answered, n) >= rule.min_answered
    return (effect >= rule.min_effect - 1e-12 or not enough
            or drop_upper(b, Tally(passes, n - passes)) >= rule.min_effect - 1e-12)


def could_miss(questions: Sequence[Compared], settings: Settings) -> dict[str, Any] | None:
    """The largest fall on one question these repeats would let through: for each question
    that could get worse, the highest true pass rate of NEW that its repeats still catch (keep
    from a ship) with ``settings.power``, its baseline held as observed; the question where
    that fall is largest. Said with every ship: a ship is not a proof that nothing fell."""

    worst = None
    for q in questions:
        b, n = q.baseline, q.new.answered
        if not b.passes or not b.answered or not n:
            continue
        rule = settings.rule_for(q.severity)
        hit = [caught(b, x, n, rule) for x in range(n + 1)]

        def p_caught(p: float, hit: list[bool] = hit, n: int = n) -> float:
            return sum(w for w, h in zip(_binom_pmf(n, p), hit, strict=True) if h)

        lo, hi = 0.0, b.passes / b.answered
        if p_caught(0.0) < settings.power - 1e-12:
            edge = None  # not even a fall to 0% is caught that often
        else:
            for _ in range(30):  # the chance to catch falls as NEW's true rate rises
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if p_caught(mid) >= settings.power - 1e-12 else (lo, mid)
            edge = lo
        fall = b.passes / b.answered - (edge or 0.0)
        if worst is None or fall > worst["fall"] + 1e-12:
            worst = {"case_no": q.case_no, "old": f"{b.passes}/{b.answered}", "repeats": n,
                     "from": b.passes / b.answered, "to": edge, "fall": fall,
                     "power": settings.power}
    return worst


def miss_text(m: Mapping[str, Any]) -> str:
    """``a question could fall from 100% to 58% unseen (Q-01: 3/3 and 3 repeats of NEW;
    caught 4 times in 5 below that)``."""
    to = "0%" if m["to"] is None else f"{m['to']:.0%}"
    how = ("even a fall to 0% is caught less often than "
           f"{m['power']:.0%} of the time" if m["to"] is None else
           f"a fall below that is caught {m['power']:.0%} of the time")
    return (f"with these repeats a question could fall from {m['from']:.0%} to {to} unseen "
            f"({m['case_no']}: {m['old']} and {m['repeats']} repeat(s) of the new version; "
            f"{how})")


def drop_upper(b: Tally, n: Tally, z: float = 1.6448536269514722) -> float:
    """One-sided 95% upper bound of (baseline rate − new rate): Newcombe's hybrid score
    interval (method 10). A drop the data cannot rule out keeps a question ``undecided``."""

    pb, pn = b.passes / b.answered, n.passes / n.answered
    _, ub = wilson(b.passes, b.answered, z)
    ln, _ = wilson(n.passes, n.answered, z)
    return pb - pn + ((ub - pb) ** 2 + (pn - ln) ** 2) ** 0.5


def _reasons(t: Tally) -> str:
    parts = [f"{n} {status}" for status, n in sorted(
        {**t.trouble, **({"not_graded": t.not_graded} if t.not_graded else {})}.items())]
    return ", ".join(parts)


def decide(questions: Sequence[Compared], settings: Settings = Settings(),
           levels: Mapping[str, float] | None = None, figures: bool = True,
           unfinished: Sequence[Mapping[str, Any]] = (),
           labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The verdict and its evidence.

    ``levels`` (case_no → raw p-value threshold) replaces the BH step: `--settle` passes the
    alpha it spends at each look, already divided over the questions that can move.
    ``unfinished``: runs of either version still going or interrupted with cells yet to come
    (``run_id``, ``version``, ``status``, ``arrived``, ``planned``): the verdict waits for them.
    ``labels``: ``agent``, ``old``, ``new``, for the lines that say what to run.
    """
    comparable = [q for q in questions if q.baseline.answered or q.old.planned]
    rows = [_test_row(q) for q in comparable]
    qvalues, testable = _screened(rows, settings)
    # the repeats-needed figures are `--settle`'s, whose m is every question that could get
    # worse (a baseline pass, asked in NEW): a fixed 0/3 → 3/3 can never hold there
    can_drop = sum(1 for r in rows if r["baseline"]["passes"] and r["new"]["planned"]) or 1
    for q, r, qv in zip(comparable, rows, qvalues, strict=True):
        _judge(r, qv, q.baseline, q.new, settings, levels, figures, can_drop)
    incomplete = _coverage(questions, settings)
    # cells still to come are not missing for good: the coverage floor tolerates lost cells,
    # never a verdict read before the run is over
    incomplete["runs"] = [dict(u) for u in unfinished]
    # the new version's undecided cells; and the old version's where they are its whole
    # baseline and the new version fails the question (a reviewer's pass there is a drop)
    old_human = {q.case_no: q.old.needs_human for q in questions
                 if _no_baseline(q) and q.old.needs_human}
    needs_human = sum(q.new.needs_human for q in questions) + sum(old_human.values())
    holds = [_brief(r) for r in rows if r["state"] == "hold"]
    undecided = [_brief(r) for r in rows if r["state"] == "undecided"]
    added = [q for q in questions if not q.old.planned and not q.baseline.answered
             and not q.old_skipped]
    # a question added since OLD ran has no baseline, so nothing can show it did not get
    # worse; failed in NEW it is never a ship: a critical one holds, any other waits for OLD
    # to be asked it (then it is an ordinary comparison)
    for q in added:
        if q.new.fails:
            (holds if q.severity == "critical" else undecided).append(_added(q))
    word = _word(holds, incomplete, needs_human, undecided)
    return {"word": word, "exit_code": EXIT_CODES[word], "settings": settings.as_dict(),
            "questions_tested": len(rows), "questions_testable": testable,
            "hold": holds, "undecided": undecided,
            "incomplete": incomplete,
            "pending": {"needs_human": needs_human,
                        "questions": sorted({q.case_no for q in questions if q.new.needs_human}
                                            | set(old_human)),
                        "old_needs_human": sum(old_human.values()),
                        "next": "exam review" if needs_human else None},
            "new_questions": sorted(q.case_no for q in added),
            "not_asked_in_old": sorted(q.case_no for q in questions if q.old_skipped),
            # what a ship could have let through (said with the word; only a ship needs it)
            "could_miss": could_miss(questions, settings) if figures and word == "ship"
            else None,
            "labels": dict(labels or {}), "tests": rows, "reason": ""}


def _test_row(q: Compared) -> dict[str, Any]:
    """One comparable question's test: its baseline and NEW's counts, the one-sided exact
    p-value of NEW being worse (and the least it could be, for the screen), the drop."""
    b, n = q.baseline, q.new
    p = fisher_worse(b.passes, b.answered, n.passes, n.answered)
    min_p = fisher_worse_min(b.passes, b.answered, n.passes, n.answered)
    effect = (b.rate - n.rate) if b.answered and n.answered else None
    return {"case_no": q.case_no, "severity": q.severity, "category": q.category,
            "baseline": {**b.as_dict(), "versions": list(q.baseline_versions)},
            "old": q.old.as_dict(), "new": n.as_dict(), "p": p, "min_p": min_p,
            "effect": effect, "q": None, "state": "same"}


def _screened(rows: list[dict[str, Any]], settings: Settings
              ) -> tuple[list[float | None], int]:
    """(each row's q-value, how many could be tested): BH over the questions that can move.

    Screened by each question's own alpha (its margins only: monotone, see discrete_bh);
    each question then needs q ≤ its own alpha. A question with fewer answered repeats than
    its rule asks can never hold either: the answered counts are margins too, so leaving it
    out keeps the screen on margins alone."""
    def screen(r: dict[str, Any]) -> float:
        need = settings.rule_for(r["severity"]).min_answered
        thin = min(r["baseline"]["answered"], r["new"]["answered"]) < need
        return 2.0 if thin else r["min_p"]

    return discrete_bh([r["p"] for r in rows], [screen(r) for r in rows],
                       [settings.rule_for(r["severity"]).alpha for r in rows])


def _judge(r: dict[str, Any], qv: float | None, b: Tally, n: Tally, settings: Settings,
           levels: Mapping[str, float] | None, figures: bool, can_drop: int) -> None:
    """A question's state: hold (a significant drop of at least min_effect on enough
    repeats), undecided (a drop not yet ruled out: with the repeats that would settle it),
    better, or the same."""
    rule = settings.rule_for(r["severity"])
    r["q"] = qv
    r["rule"] = rule.as_dict()
    b_ans, n_ans = r["baseline"]["answered"], r["new"]["answered"]
    enough = b_ans >= rule.min_answered and n_ans >= rule.min_answered
    big = r["effect"] is not None and r["effect"] >= rule.min_effect - 1e-12
    if levels is not None:
        significant = r["case_no"] in levels and r["p"] <= levels[r["case_no"]] * (1 + TOL)
        r["level"] = levels.get(r["case_no"])
    else:
        # exact p-values are rationals: 1e-9 absorbs the float rounding of p × m / rank
        significant = qv is not None and qv <= rule.alpha * (1 + TOL)
    if significant and big and enough:
        r["state"] = "hold"
    elif n_ans and b_ans and b.passes and r["effect"] > 1e-12 and (
            big or not enough or drop_upper(b, n) >= rule.min_effect - 1e-12):
        r["state"] = "undecided"
        _repeats_needed(r, b, rule, settings, levels, figures, can_drop)
    elif r["effect"] is not None and r["effect"] < 0:
        r["state"] = "better"


def _repeats_needed(r: dict[str, Any], b: Tally, rule: Rule, settings: Settings,
                    levels: Mapping[str, float] | None, figures: bool, can_drop: int) -> None:
    """An undecided question's figures: how many repeats would show a drop of the observed
    size, or of min_effect when the observed drop is smaller, at the stated power."""
    b_ans, n_ans = r["baseline"]["answered"], r["new"]["answered"]
    need: int | None = rule.min_answered
    if b_ans < rule.min_answered:
        r["baseline_short"] = rule.min_answered - b_ans
    target = min(r["new"]["rate"], b.rate - rule.min_effect)
    r["assumed_new_rate"] = max(0.0, target)
    r["level_for_repeats"] = rule.alpha / can_drop * SETTLE_INTERIM
    if levels is None and figures:  # `--settle` decides by its own levels
        need, r["level_for_repeats"] = settle_repeats(
            r["baseline"]["passes"], b_ans, max(0.0, target), n_ans,
            rule.alpha / can_drop, settings.power)
    r["repeats_needed"] = None if need is None else max(need, rule.min_answered)
    r["more_repeats"] = None if need is None else max(0, r["repeats_needed"] - n_ans)


def _word(holds: list, incomplete: dict[str, Any], needs_human: int, undecided: list) -> str:
    """The one word, worst first: a hold, then too little answered, then a person's call,
    then too few repeats; ship only when none of these."""
    if holds:
        return "hold"
    if incomplete["questions"] or incomplete["versions"] or incomplete["runs"]:
        return "incomplete"
    if needs_human:
        return "pending"
    if undecided:
        return "undecided"
    return "ship"


def _brief(r: dict[str, Any]) -> dict[str, Any]:
    keys = ("case_no", "severity", "p", "q", "level", "effect", "repeats_needed",
            "more_repeats", "level_for_repeats", "baseline_short", "assumed_new_rate")
    return {**{k: r.get(k) for k in keys},
            "old": f"{r['baseline']['passes']}/{r['baseline']['answered']}",
            "new": f"{r['new']['passes']}/{r['new']['answered']}",
            "baseline_versions": r["baseline"]["versions"]}


def _added(q: Compared) -> dict[str, Any]:
    """A hold or undecided entry for a question added since OLD ran that NEW fails."""
    return {"case_no": q.case_no, "severity": q.severity, "p": None, "q": None,
            "effect": None, "repeats_needed": None, "more_repeats": None,
            "level_for_repeats": None, "baseline_short": None, "assumed_new_rate": None,
            "level": None, "old": "–", "new": f"{q.new.passes}/{q.new.answered}",
            "baseline_versions": [],
            "new_question": True}


def _added_text(h: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    old, new = labels.get("old", "the old version"), labels.get("new", "the new version")
    ask = (f"; ask {old} it: exam run {labels['agent']} --version {old} --only {h['case_no']}"
           if labels.get("agent") else f"; ask {old} it")
    return (f"{h['case_no']} new question, {new} fails it ({h['new']} passed"
            + (f", {h['severity']}" if h["severity"] == "critical" else "")
            + f", no baseline{ask})")


def _coverage(questions: Sequence[Compared], settings: Settings) -> dict[str, Any]:
    named, versions = [], []
    # a question neither version's replies could be graded on (one with nothing to grade)
    # says nothing either way; any other question's not_graded cells are missing answers
    counted = [q for q in questions if q.old.graded or q.new.graded
               or not (q.old.not_graded and q.new.not_graded)]
    in_floor = {q.case_no for q in counted}
    for side in ("old", "new"):
        planned = sum(getattr(q, side).planned for q in counted)
        answered = sum(getattr(q, side).graded for q in counted)
        if planned and answered / planned < settings.coverage - 1e-12:
            versions.append({"side": side, "answered": answered, "planned": planned,
                             "coverage": answered / planned})
    for q in questions:
        for side in ("old", "new"):
            t: Tally = getattr(q, side)
            lost = sum(t.trouble.values()) + t.not_graded
            if (t.trouble and side == "new" and t.planned and not t.arrived) or (
                    lost and q.case_no in in_floor and any(v["side"] == side for v in versions)):
                named.append({"case_no": q.case_no, "side": side, "arrived": t.arrived,
                              "planned": t.planned, "why": _reasons(t)})
            elif side == "new" and q.severity == "critical" and q.baseline.answered and \
                    lost > t.answered + t.needs_human:
                # a critical question is never averaged away, its missing cells neither: the
                # floor over the whole bank let 2 of its 3 repeats time out and 1/1 ship.
                # Most of its cells, not any one: a single timeout is not worth a hold-up
                named.append({"case_no": q.case_no, "side": side, "arrived": t.arrived,
                              "planned": t.planned, "why": _reasons(t)})
            elif side == "new" and t.not_graded and not t.answered and not t.needs_human \
                    and q.baseline.answered:
                # every reply arrived and none could be graded (a status or field the old
                # version reported and this one does not): nothing shows it is not worse
                named.append({"case_no": q.case_no, "side": side, "arrived": t.arrived,
                              "planned": t.planned, "why": f"{t.not_graded} not_graded"})
            elif side == "old" and q.old_skipped and not t.planned and q.new.fails:
                # the old version could have been asked it (it was in its bank) and was not;
                # the new one fails it: a regression or not, nothing shows which
                named.append({"case_no": q.case_no, "side": side, "arrived": 0, "planned": 0,
                              "why": "not_asked"})
            elif side == "old" and _no_baseline(q) and not t.needs_human:
                # the old version asked it and nothing it said was answered or graded, and the
                # new one fails it: whether that is a regression is unknown, not "same"
                named.append({"case_no": q.case_no, "side": side, "arrived": t.arrived,
                              "planned": t.planned, "why": _reasons(t)})
    return {"versions": versions, "questions": named}


def _no_baseline(q: Compared) -> bool:
    """Asked in the old version, no answered cell there, and failed in the new one."""
    return bool(q.old.planned and not q.baseline.answered and q.new.fails)


def _missing(v: dict[str, Any]) -> str:
    # an interrupted run gets no further by waiting: say how it is finished
    parts = [f"run {x['run_id']} ({x['version']}) {x['status']}: {x['arrived']}/{x['planned']}"
             + (f" cells arrived; finish it: exam resume {x['run_id']} (or leave it out: "
                f"exam runs exclude {x['run_id']} --reason …)"
                if x["status"] == RunState.INTERRUPTED else " cells arrived so far")
             for x in v["incomplete"].get("runs", [])]
    parts += [f"{x['side']} {x['answered']}/{x['planned']} cells answered"
              for x in v["incomplete"]["versions"]]
    qs = v["incomplete"]["questions"]
    labels = v.get("labels") or {}
    old = labels.get("old", "the old version")

    def why(x: Mapping[str, Any]) -> str:
        if x["side"] == "old" and x["why"] == "not_asked":
            return f"not asked in {old}"
        return x["why"]

    shown = ", ".join(f"{x['case_no']} ({why(x)})" for x in qs[:5])
    more = f" and {len(qs) - 5} more" if len(qs) > 5 else ""
    skipped = [x["case_no"] for x in qs if x["side"] == "old" and x["why"] == "not_asked"]
    ask = ([f"ask the old version: exam run {labels['agent']} --version {old} --only "
            + " --only ".join(skipped)] if skipped and labels.get("agent") else [])
    return "; ".join(parts + ([f"not answered: {shown}{more}"] if qs else []) + ask)


def p_removed(v: Mapping[str, Any]) -> list[str]:
    """Questions removed from the bank since OLD ran that mattered (exam.reports.bank_changes)."""
    return list(v.get("pending", {}).get("removed") or [])


def describe_removed(e: Mapping[str, Any], old: str, new: str) -> str:
    """``Q-03 (hold under its last rubric: v1 5/5 → v2 0/5)``."""
    if e["mattered"] == "not_regraded":
        return f"{e['case_no']} ({e['why']})"
    figures = f"{old} {e['old']}" + (f" → {new} {e['new']}" if e["new"] else
                                      f", not asked in {new}")
    why = {"hold": "it would hold", "critical": "critical", "failing": "failing",
           None: "passing"}[e["mattered"]]
    return f"{e['case_no']} ({why}; under its last rubric {figures})"


def _removed_text(v: Mapping[str, Any]) -> str:
    labels = v.get("labels") or {}
    o, n = labels.get("old", "the old version"), labels.get("new", "the new version")
    shown = [describe_removed(e, o, n) for e in v.get("removed") or [] if e["mattered"]]
    return (f"removed from the bank since {o} ran: " + ", ".join(shown) + "; a person "
            f"decides: put it back, or if its removal is meant, ask {o} again under today's "
            "bank and leave out its older runs (exam runs exclude RUN --reason …)")


def summary_line(v: dict[str, Any]) -> str:
    """One line saying the verdict and why: the same text in the CLI, LINE and the dashboard."""
    line = _word_line(v)
    if p_removed(v) and not line.startswith("pending: " + _removed_text(v)):
        line += f"; also {_removed_text(v)}"
    drift = v.get("rubric_changed") or []
    if drift:
        old = (v.get("labels") or {}).get("old", "the old version")
        # one change to many questions (the agent's budget, a bank-wide option) said once
        said: dict[str, list[str]] = {}
        for e in drift:
            how = (", ".join(describe(c) for c in e["changes"]) if e["changes"]
                   else "(how is not recorded: its run predates schema 12)")
            said.setdefault(how, []).append(e["case_no"])
        line += f"; rubric changed since {old} ran: " + ", ".join(
            f"{cases[0]} {how}" if len(cases) == 1 else
            ", ".join(cases[:5]) + (f" and {len(cases) - 5} more" if len(cases) > 5 else "")
            + f": {how}" for how, cases in said.items())
    return line


def _word_line(v: dict[str, Any]) -> str:
    word = v["word"]
    if word == "incomplete":
        return "incomplete: " + _missing(v)
    if word == "hold":
        line = "hold: " + ", ".join(
            _added_text(h, v.get("labels") or {}) if h.get("new_question") else
            # the figure the decision used: settle's level after --settle, else BH's q
            f"{h['case_no']} {h['old']} → {h['new']} (p = {h['p']:.2g} ≤ settle's level "
            f"{h['level']:.2g})" if h.get("level") is not None else
            f"{h['case_no']} {h['old']} → {h['new']} (q = {h['q']:.2g})"
            if h["q"] is not None else f"{h['case_no']} {h['old']} → {h['new']} (p = {h['p']:.2g})"
            for h in v["hold"])
        if v["incomplete"]["questions"] or v["incomplete"]["versions"] or \
                v["incomplete"].get("runs"):
            line += f"; also incomplete: {_missing(v)}"
        return line
    if word == "pending" and p_removed(v) and not p_rubric(v) and \
            not v["pending"]["needs_human"]:
        return "pending: " + _removed_text(v)
    if word == "pending" and p_rubric(v) and not v["pending"]["needs_human"]:
        labels = v.get("labels") or {}
        o, n = labels.get("old", "the old version"), labels.get("new", "the new version")
        rested = [e for e in v["rubric_changed"] if e["case_no"] in p_rubric(v)]
        return ("pending: the ship rests on a rubric changed since " + o + " ran: " + ", ".join(
            f"{e['case_no']} under {o}'s rubric {n} is {e['under_old_rubric']['new']} "
            f"({o} {e['under_old_rubric']['old']}: {e['under_old_rubric']['word']})"
            for e in rested) + "; a person decides: if today's rubric is meant, ask "
            f"{o} again under today's bank and leave out its older runs (exam runs exclude "
            "RUN --reason …), else put the rubric back")
    if word == "pending":
        p = v["pending"]
        old = p.get("old_needs_human")
        rested = p_rubric(v)  # a review alone does not settle these
        also = ("; also the ship rests on a rubric changed since "
                + (v.get("labels") or {}).get("old", "the old version") + " ran: "
                + ", ".join(rested) if rested else "")
        return (f"pending: {p['needs_human']} needs_human cell(s) in {', '.join(p['questions'])}"
                + (f" ({old} of the old version's, its only baseline for a question the new "
                   "one fails)" if old else "") + " decide it: run exam review" + also)
    if word == "undecided":
        return "undecided: " + ", ".join(
            _added_text(u, v.get("labels") or {}) if u.get("new_question") else
            f"{u['case_no']} {u['old']} → {u['new']}"
            + (" (repeats enough for --settle's level already: run it)"
               if u["more_repeats"] == 0 else
               f" (about {u['more_repeats']} more repeat(s) with --settle)"
               if u["more_repeats"] is not None else
               f" (not within --settle's {SETTLE_MAX_REPEATS} repeats while {u['old']} is "
               "the baseline: ask the old version again too)") for u in v["undecided"])
    miss = v.get("could_miss")
    return "ship: no question is worse beyond the evidence rule" + (
        f"; {miss_text(miss)}" if miss else "")


def p_rubric(v: Mapping[str, Any]) -> list[str]:
    """Questions whose ship rests on a rubric changed since OLD ran, loosened or not
    (``exam.reports.rubric_drift``; the JSON key keeps its first name, ``rubric_loosened``)."""
    return list(v.get("pending", {}).get("rubric_loosened") or [])


def combine(words: Iterable[str]) -> str:
    """The verdict over several agents: the first by precedence."""
    seen = set(words)
    return next((w for w in PRECEDENCE if w in seen), "ship")


def questions_from(cells_by_version: Mapping[str, Mapping[str, list[Any]]],
                   planned: Mapping[str, Mapping[str, int]], meta: Mapping[str, tuple[str, str]],
                   old: str, new: str, skipped: Iterable[str] = ()) -> list[Compared]:
    """Questions from graded cells: case_no → version → cells, planned cells likewise.
    ``skipped``: questions in the old version's bank that its runs did not ask."""
    skipped = set(skipped)
    out = []
    for case_no in sorted(meta):
        cells, plan = cells_by_version.get(case_no, {}), planned.get(case_no, {})
        new_t = tally(cells.get(new, []), plan.get(new))
        old_t = tally(cells.get(old, []), plan.get(old))
        if not new_t.planned:
            if not old_t.planned:
                continue  # asked in neither version: nothing to decide
            # asked in the old version, never in the new one (--only, --category): the
            # change was not examined on it, which is missing data, never a ship
            new_t = Tally(trouble={"not_asked": old_t.planned})
        base, used = baseline_for([(old, old_t)], old)
        severity, category = meta[case_no]
        out.append(Compared(case_no, severity, category, new_t, old_t, base, used,
                            old_skipped=case_no in skipped and not old_t.planned))
    return out


def planned_cells(runs: Iterable[Any]) -> dict[str, dict[str, int]]:
    """case_no → version → cells the runs planned (plan × repeats)."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in runs:
        for case_no, _ in r.plan:
            out[case_no][r.version] += r.repeats
    return out
