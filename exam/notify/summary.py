"""What a notification says, whatever the channel: per agent version, as data.

A summary is a dict: ``agent``, ``version``, the verdict counts (``pass``, ``needs_human``,
``fail``), ``pass_rate`` (of graded cells; None when none was graded), ``not_answered``,
``critical`` (critical questions failing), ``cost`` (p50/p95 per cost key), and against the
previous version (``previous``, None without one): ``verdict`` and ``verdict_reason``,
``regressions`` and ``fixes`` (case numbers); then ``review_queue`` (cells waiting for a
person) and ``review_replies`` (distinct replies among them). ``scorecard_link`` gives the
dashboard page a channel links to. ``summary_text`` is the plain-text form every channel can
fall back on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from exam.errors import ExamError
from exam.store import Store
from exam.web.share import make_link

SHOW_REGRESSIONS = 3  # regressions named before "and N more"
SHARE_DAYS = 7.0  # how long a Scorecard link works


def agent_summary(card: dict[str, Any], change: dict[str, Any] | None,
                  review_queue: int = 0) -> dict[str, Any]:
    """One agent version's summary from its scorecard and its compare (None: no previous)."""
    v = card["verdicts"]
    graded = v["pass"] + v["needs_human"] + v["fail"]
    return {
        "agent": card["agent"], "version": card["version"], "pass": v["pass"],
        "needs_human": v["needs_human"], "fail": v["fail"],
        "pass_rate": v["pass"] / graded if graded else None,
        "not_answered": sum(n for k, n in card["run_status"].items() if k != "ok"),
        "critical": card["critical_failures"], "cost": card["cost"],
        "previous": change and change["old"],
        "regressions": [r["case_no"] for r in (change or {}).get("regressions", [])],
        "verdict": change and change["verdict"],
        "verdict_reason": change and change["decision"]["reason"],
        "fixes": [r["case_no"] for r in (change or {}).get("fixes", [])],
        "review_queue": review_queue,
        "review_replies": card.get("review_replies", review_queue),
    }


def queue_text(s: dict[str, Any]) -> str:
    from exam.reports.scorecard import queue_words

    return queue_words({"review_queue": s["review_queue"],
                        "review_replies": s.get("review_replies", s["review_queue"])})


def summary_text(s: dict[str, Any]) -> str:
    line = (f"{s['agent']} {s['version']}: pass {s['pass']} · needs_human {s['needs_human']} · "
            f"fail {s['fail']}")
    if s["not_answered"]:
        line += f" · not answered {s['not_answered']}"
    if s["critical"]:
        line += f"\n  CRITICAL failing: {', '.join(s['critical'][:5])}"
    if s["previous"]:
        if s.get("verdict"):
            line += f"\n  verdict vs {s['previous']}: {s['verdict'].upper()}"
            line += f"\n  {s['verdict_reason']}"
        line += (f"\n  vs {s['previous']}: {len(s['regressions'])} regression(s), "
                 f"{len(s['fixes'])} fix(es)")
        if s["regressions"]:
            shown = s["regressions"][:SHOW_REGRESSIONS]
            more = len(s["regressions"]) - len(shown)
            line += f": {', '.join(shown)}" + (f" and {more} more" if more else "")
    if s["review_queue"]:
        line += f"\n  review queue: {queue_text(s)} waiting"
    return line


def scorecard_link(s: dict[str, Any], public_url: str, share_secret: str | None) -> str | None:
    """The scorecard page of a summary: a signed, expiring read-only share link when the
    signing key is known (a phone has no admin token, and must never need one); else the
    plain page; None without a public URL."""
    if not public_url:
        return None
    path = f"/scorecard/{quote(s['agent'], safe='')}/{quote(s['version'], safe='')}"
    if not share_secret:
        return public_url + path
    return make_link(share_secret, public_url, path, SHARE_DAYS)


def summaries_for(store: Store, run_ids: Sequence[int],
                  compare_to: str | None = None) -> list[dict[str, Any]]:
    """A summary per agent version of these runs, each against ``compare_to`` or, by
    default, the version run before it."""
    from exam.reports import compare, scorecard
    from exam.reports.regrade import regrade
    from exam.reports.selection import select_runs

    runs = [store.get_run(i) for i in run_ids]
    report = scorecard.build(regrade(store, runs))
    out = []
    for card in report["scorecards"]:
        agent, version = card["agent"], card["version"]
        previous = compare_to
        if previous is None:
            earlier = [r for r in select_runs(store, agent)
                       if r.version != version and r.id < min(card["run_ids"])]
            previous = earlier[0].version if earlier else None
        change = None
        if previous and previous != version:
            both = [r for r in select_runs(store, agent)
                    if r.version != version] + [r for r in runs if r.id in card["run_ids"]]
            try:
                change = compare.build(regrade(store, both), agent, previous, version)
            except ExamError:
                change = None
        # the open review queue: needs_human cells no person has decided yet
        out.append(agent_summary(card, change, card["review_queue"]))
    return out
