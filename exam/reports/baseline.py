"""Which version a change is compared against: the agent's *shipped* version.

Comparing against the previous version let a regression carried over from a held version
ship: W3 v2 held against v1 (W3-10 3/3 → 0/3, critical), and v3, still failing W3-10, read
"ship vs v2". The baseline is the version that actually shipped:

- the first version ships by default (there is nothing to compare it with);
- a later version ships when its verdict against *its own* baseline is ``ship``;
- a person's decision (``exam ship AGENT VERSION``, the API, the dashboard, the n8n
  after-change workflow: the store's ``shipped`` table) ships that version, whatever its
  verdict, from the moment it is recorded.

This is a walk in time, computed afresh from the stored runs and decisions: each version
enters when its first counted run was made, and is decided against what had shipped then
(so v3's baseline is the last version shipped before v3 was first run, itself decided
against its own). A decision recorded later moves the shipped version from then on (a
rollback too). Versions whose runs are all excluded do not enter.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from exam import names
from exam.errors import ExamError
from exam.reports import compare, verdict
from exam.reports.regrade import Regraded
from exam.reports.selection import compare_runs
from exam.store import ShipRecord


@dataclass(frozen=True, slots=True)
class Baseline:
    """The version a new one is compared against, and why it is that one."""

    version: str
    how: str  # "first" (the first version) | "verdict" (shipped on its verdict) |
    #           "by_hand" (a recorded decision) | "asked" (OLD given by whoever asked)
    since: str | None = None  # how="verdict": the version it shipped against
    record: ShipRecord | None = None  # how="by_hand"
    shipped: str | None = None  # how="asked": the last shipped version, for the record

    @property
    def label(self) -> str:
        """How every surface names it: "v1, last shipped"."""
        if self.how == "asked":
            tail = f"; last shipped: {self.shipped}" if self.shipped and \
                self.shipped != self.version else ""
            return f"{self.version}, as asked{tail}"
        return f"{self.version}, last shipped"

    @property
    def why(self) -> str:
        """How it came to be the shipped version, in words."""
        if self.how == "first":
            return "the first version"
        if self.how == "verdict":
            return f"its verdict against {self.since} was ship"
        if self.how == "by_hand" and self.record is not None:
            r = self.record
            when = dt.datetime.fromtimestamp(r.shipped_at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
            return (f"shipped by hand by {r.shipped_by or 'someone'} on {when}"
                    + (f": {r.reason}" if r.reason else ""))
        if self.how == "asked":
            return "the version asked for"
        return ""

    def as_dict(self) -> dict[str, Any]:
        return {"version": self.version, "how": self.how, "label": self.label, "why": self.why,
                "since": self.since, "shipped": self.shipped,
                "record": self.record.as_dict() if self.record else None}


@dataclass(frozen=True, slots=True)
class Step:
    """One version as the walk met it: what it was compared against and the verdict."""

    version: str
    baseline: Baseline | None  # None: the first version
    report: dict[str, Any] | None  # the compare report against ``baseline``
    error: str | None  # not comparable (two rubrics, a bank that no longer loads...)
    shipped_after: Baseline  # the shipped version once this one was decided

    @property
    def word(self) -> str | None:
        return self.report["verdict"] if self.report else None


def _entries(regraded: Regraded, agent: str) -> list[tuple[float, int, str]]:
    """(when first run, its id, version) of each version with a counted run, in that order."""
    first: dict[str, tuple[float, int]] = {}
    for r in sorted(regraded.runs, key=lambda r: r.id):
        if r.agent == agent:
            first.setdefault(r.version, (r.created_at, r.id))
    return sorted((when, rid, v) for v, (when, rid) in first.items())


def walk(regraded: Regraded, agent: str, records: Sequence[ShipRecord],
         settings: verdict.Settings | None = None, until: str | None = None
         ) -> tuple[list[Step], Baseline | None]:
    """Every version of ``agent`` in the order it entered, each decided against what had
    shipped then, and the shipped version at the end (None: no counted run); stops once
    ``until`` is decided (its baseline is then known)."""
    entries = _entries(regraded, agent)
    known = {v for _, _, v in entries}
    events: list[tuple[float, int, str, Any]] = [(when, 1, v, None) for when, _, v in entries]
    # a decision on a version with no counted run (all excluded) moves nothing: there is
    # nothing of it to compare with
    events += [(r.shipped_at, 0, r.version, r) for r in records
               if r.agent == agent and r.version in known]
    events.sort(key=lambda e: (e[0], e[1]))
    shipped: Baseline | None = None
    steps: list[Step] = []
    for _, kind, version, record in events:
        if kind == 0:
            shipped = Baseline(version, "by_hand", record=record)
            continue
        if shipped is None:
            shipped = Baseline(version, "first")
            steps.append(Step(version, None, None, None, shipped))
        elif shipped.version == version:  # shipped by hand before its first run was counted
            steps.append(Step(version, None, None, None, shipped))
        else:
            base = shipped
            report, error = None, None
            try:
                report = compare.build(regraded, agent, base.version, version, settings)
            except ExamError as exc:
                error = str(exc)
            if report is not None:
                annotate(report, base)
                if report["verdict"] == "ship":
                    shipped = Baseline(version, "verdict", since=base.version)
            steps.append(Step(version, base, report, error, shipped))
        if until is not None and version == until:
            break
    return steps, shipped


def shipped_version(regraded: Regraded, agent: str, records: Sequence[ShipRecord],
                    settings: verdict.Settings | None = None) -> Baseline | None:
    """The agent's shipped version now; None when it has no counted run."""
    return walk(regraded, agent, records, settings)[1]


def baseline_of(regraded: Regraded, agent: str, new: str, records: Sequence[ShipRecord],
                settings: verdict.Settings | None = None) -> Baseline | None:
    """The last version shipped before ``new`` was first run; None when ``new`` is the first
    version (or has no counted run)."""
    steps, _ = walk(regraded, agent, records, settings, until=new)
    if not steps or steps[-1].version != new:
        return None
    return steps[-1].baseline


def asked(old: str, shipped: Baseline | None) -> Baseline:
    """OLD given by whoever asked: said as such, with the last shipped version beside it."""
    if shipped is not None and shipped.version == old:
        return shipped
    return Baseline(old, "asked", shipped=shipped.version if shipped else None)


def still_failing(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Questions that failed in the baseline and fail still: never hidden below a green word."""
    out = []
    for group in compare.GROUPS:
        for r in report.get(group, []):
            o, n = r["old"], r["new"]
            if o["graded"] and o["passes"] < o["graded"] and n["graded"] and \
                    n["passes"] < n["graded"]:
                out.append({"case_no": r["case_no"], "severity": r["severity"],
                            "old": f"{o['passes']}/{o['graded']}",
                            "new": f"{n['passes']}/{n['graded']}", "group": group})
    out.sort(key=lambda x: (x["severity"] != "critical", x["case_no"]))
    return out


def annotate(report: dict[str, Any], base: Baseline) -> dict[str, Any]:
    """The report says which baseline it used, and what still fails since it."""
    report["baseline"] = base.as_dict()
    report["still_failing"] = still_failing(report)
    return report


FIRST_VERSION = ("{agent} {new} is the first version: nothing shipped before it to compare "
                 "with (give OLD: exam compare AGENT OLD NEW)")


def compare_against(regraded: Regraded, agent: str, old: str | None, new: str,
                    records: Sequence[ShipRecord], settings: verdict.Settings | None = None,
                    levels: dict[str, float] | None = None) -> dict[str, Any]:
    """The compare report of ``new`` against ``old``, or, without ``old``, against the last
    version shipped before it; every surface reads a change through here."""
    if old is None:
        base = baseline_of(regraded, agent, new, records, settings)
        if base is None:
            raise compare.CompareError(FIRST_VERSION.format(agent=agent, new=new))
    else:
        base = asked(old, baseline_of(regraded, agent, new, records, settings)
                     if new in {v for _, _, v in _entries(regraded, agent)} else None)
    report = compare.build(regraded, agent, base.version, new, settings, levels)
    return annotate(report, base)


def record_ship(store: Any, agent: str, version: str, shipped_by: str, reason: str = "",
                source: str = "cli") -> ShipRecord:
    """Record a person's decision that ``version`` shipped: the CLI, the API, the dashboard
    and the n8n workflow all come through here. A version with no counted run cannot ship
    (nothing of it to compare a later one with): the one message, excluded runs said so."""

    names.check("agent name", agent)
    names.check("version label", version)
    compare_runs(store, agent, None, version)  # SelectionError: none stored, or all excluded
    if len(reason) > 500:
        raise ExamError(f"reason: at most 500 characters, found {len(reason)}")
    return store.add_ship_record(agent, version, shipped_by.strip()[:100], reason.strip(),
                                 source)
