"""What a notification says, whatever the channel: per agent version, as data.

A ``Summary`` per agent version; ``as_dict()`` is its JSON form (the verdict counts under
``pass``, ``needs_human``, ``fail``). ``scorecard_link`` gives the dashboard page a channel
links to: with a signing key, a marker that stands for a share link, never the link itself,
because payloads are stored and a share link is a bearer credential; ``live_link`` makes the
link when a payload is sent, as of when its notification was recorded (``link_made``), so a
resend carries the same link; ``page_link`` shows the plain page instead (a dry run's file).
``summary_text`` is the plain-text form every channel can fall back on.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import quote

from exam.errors import ExamError
from exam.reports import baseline, kinds
from exam.reports.inputs import LOCAL, Inputs
from exam.reports.scorecard import queue_words
from exam.reports.selection import compare_runs, excluded_words, select_runs
from exam.share import SHARE_PATH, longest_link, make_link
from exam.store import Store

SHOW_REGRESSIONS = 3  # regressions named before "and N more"
SHARE_DAYS = 7.0  # how long a Scorecard link works, from when its notification was recorded
RESEND_LEFT_S = 86400.0  # a resend carries a link with at least this long to go (link_made)
# what a payload holds in place of a share link: LINK_MARK, the public URL, "#", the page's
# path. Not a link: no phone or browser opens the scheme, and it holds no token
LINK_MARK = "agent-exam-share-link:"


@dataclass(frozen=True, slots=True)
class Summary:
    """One agent version, as every channel tells it."""

    agent: str
    version: str
    passed: int  # verdict counts (``pass`` in ``as_dict``)
    needs_human: int
    fail: int
    pass_rate: float | None  # of graded cells; None when none was graded
    not_answered: int  # cells whose reply never arrived as ok
    cost: Mapping[str, Mapping[str, float | None]]  # p50/p95 per cost key (cost_summary)
    critical: tuple[str, ...] = ()  # critical questions failing
    previous: str | None = None  # the version compared against; None without one
    verdict: str | None = None  # the verdict of the change from ``previous``
    verdict_reason: str | None = None
    regressions: tuple[str, ...] = ()  # case numbers
    fixes: tuple[str, ...] = ()
    review_queue: int = 0  # cells waiting for a person
    review_replies: int = 0  # distinct replies among them
    baseline: str | None = None  # how ``previous`` is named: "v1, last shipped"
    still_failing: tuple[str, ...] = ()  # failing in ``previous`` and failing still
    # the runs asked for that are excluded from every report, each with its reason and how
    # to count it again: a scorecard of one never reads as a counted result
    excluded: str | None = None

    @property
    def counts(self) -> dict[str, int]:
        return {"pass": self.passed, "needs_human": self.needs_human, "fail": self.fail}

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out["pass" if f.name == "passed" else f.name] = \
                list(value) if isinstance(value, tuple) else value
        return out


def agent_summary(card: dict[str, Any], change: dict[str, Any] | None,
                  review_queue: int = 0) -> Summary:
    """One agent version's summary from its scorecard and its compare (None: no previous)."""
    v = card["verdicts"]
    graded = v["pass"] + v["needs_human"] + v["fail"]
    change = change or {}
    return Summary(
        agent=card["agent"], version=card["version"], passed=v["pass"],
        needs_human=v["needs_human"], fail=v["fail"],
        pass_rate=card.get("pass_rate", v["pass"] / graded if graded else None),
        not_answered=sum(n for k, n in card["run_status"].items() if k != "ok"),
        critical=tuple(card["critical_failures"]), cost=card["cost"],
        previous=change.get("old"), verdict=change.get("verdict"),
        verdict_reason=change["decision"]["reason"] if change else None,
        regressions=tuple(r["case_no"] for r in change.get("regressions", [])),
        fixes=tuple(r["case_no"] for r in change.get("fixes", [])),
        review_queue=review_queue, review_replies=card.get("review_replies", review_queue),
        baseline=(change.get("baseline") or {}).get("label"),
        still_failing=tuple(x["case_no"] for x in change.get("still_failing", [])),
    )


def queue_text(s: Summary) -> str:
    return queue_words({"review_queue": s.review_queue, "review_replies": s.review_replies})


def units(text: str) -> int:
    """``text``'s length as LINE counts it: UTF-16 code units (an emoji such as 🍎 is two)."""
    return len(text.encode("utf-16-le")) // 2


# where a reason is cut, best first: after a sentence, between clauses, between items, between
# words (CJK text has no spaces: its own punctuation). A sentence's end is kept with the head
# ("原因一。…": the sentence reads as ended); the other marks give way to the "…". ". " is not
# a sentence end here: "e.g. ", "v. 2" and initials would read as one
_SENTENCE_ENDS = ("。", "！", "？", "! ", "? ")
_BREAKS = (*_SENTENCE_ENDS, "; ", "；", ", ", "，", "、", " ")


def clip(text: str, limit: int, rest: str = "") -> str:
    """``text`` whole when it fits in ``limit`` (UTF-16 units); else its longest head ending
    after a sentence (its mark kept), else at a clause boundary (else between items, else
    between words) marked "…", then ``rest``
    (where to read the whole of it) when that leaves the text at least half of ``limit``. A
    reason's first clause says why the verdict is what it is: it is kept whenever it fits,
    before the pointer to the rest (names of 64 characters make one of ~230)."""
    if units(text) <= limit:
        return text
    tail = "…" + (f" ({rest})" if rest else "")
    if units(tail) > limit // 2:
        tail = "…"
    room = max(limit - units(tail), 0)
    head, used = [], 0
    for ch in text:
        used += units(ch)
        if used > room:
            break
        head.append(ch)
    cut = "".join(head)
    for mark in _BREAKS:
        kept = mark.rstrip() if mark in _SENTENCE_ENDS else ""
        # a mark right after the head counts, but for the part of it kept, which must fit
        i = text.rfind(mark, 1, len(cut) - len(kept) + len(mark))
        if i > 0:
            return text[:i + len(kept)] + tail
    return cut + tail


def compare_command(s: Summary) -> str:
    """The command that prints this summary's verdict and its whole reason."""
    return f"exam compare {s.agent} {s.previous} {s.version}"


def summary_text(s: Summary, reason_limit: int | None = None) -> str:
    """The plain-text summary; ``reason_limit`` cuts the verdict's reason (``clip``)."""
    line = (f"{s.agent} {s.version}: pass {s.passed} · needs_human {s.needs_human} · "
            f"fail {s.fail}")
    if s.excluded:
        line += f"\n  EXCLUDED from every report: {s.excluded}"
    if s.not_answered:
        line += f" · not answered {s.not_answered}"
    if s.critical:
        line += f"\n  CRITICAL failing: {', '.join(s.critical[:5])}"
    if s.previous:
        reason = s.verdict_reason or ""
        if reason_limit is not None:
            reason = clip(reason, reason_limit, "the whole reason: " + compare_command(s))
        if s.verdict:
            line += f"\n  verdict vs {s.baseline or s.previous}: {s.verdict.upper()}"
            if s.still_failing:
                line += (f"\n  still failing since {s.previous}: "
                         f"{', '.join(s.still_failing[:5])}")
            if reason:
                line += f"\n  {reason}"
        if not s.verdict and s.verdict_reason:  # not compared: no regressions to count
            line += f"\n  vs {s.previous}: {reason}"
        else:
            line += (f"\n  vs {s.previous}: {len(s.regressions)} regression(s), "
                     f"{len(s.fixes)} fix(es)")
        if s.regressions:
            shown = s.regressions[:SHOW_REGRESSIONS]
            more = len(s.regressions) - len(shown)
            line += f": {', '.join(shown)}" + (f" and {more} more" if more else "")
    if s.review_queue:
        line += f"\n  review queue: {queue_text(s)} waiting"
    return line


def scorecard_link(s: Summary, public_url: str, share_secret: str | None) -> str | None:
    """Where a summary's Scorecard button goes, as a payload keeps it: when the signing key is
    known, a marker (``LINK_MARK``) that ``live_link`` turns into a signed, expiring
    read-only share link as the payload is sent (a phone has no admin token, and must never
    need one; the stored payload must hold no working link); else the plain page; None
    without a public URL."""
    if not public_url:
        return None
    path = f"/scorecard/{quote(s.agent, safe='')}/{quote(s.version, safe='')}"
    if not share_secret:
        return public_url + path
    return f"{LINK_MARK}{public_url}#{path}"


def _marked(value: object) -> tuple[str, str] | None:
    """(public URL, path) of a link marker; None for anything else."""
    if not isinstance(value, str) or not value.startswith(LINK_MARK):
        return None
    base, _, path = value[len(LINK_MARK):].rpartition("#")  # a path is %-encoded: no "#"
    return base, path


def link_made(created: float, now: float, days: float = SHARE_DAYS) -> float:
    """When the share link a notification made at ``created`` carries at ``now`` says it
    was made: ``created`` itself while a link made then has more than ``RESEND_LEFT_S`` to go,
    so every send of the notification carries the same link (and body, under the same retry
    key); once less is left, the moment that began (a whole second), and so on: a resend
    always carries a link with at least a day to go, the same for every send until its own
    last day. A renewed link's time is never after ``now`` (a page's links revoked now
    include it), and depends on ``created`` alone, never on when the resend happens."""
    period = days * 86400
    step = period - min(RESEND_LEFT_S, period / 2)
    made = created
    while int(made + step) <= now:
        made = int(made + step)
    return made


def live_link(link: Any, share_secret: str | None, made: float | None = None) -> Any:
    """A payload's link as it is sent: a marker of a scorecard page becomes a share link
    working ``SHARE_DAYS``, made as of ``made`` (the notification's ``created_at``, through
    ``link_made``; None: now), so the same notification, key and time give the same link on
    every send (a marker of any other page, or without the key here, e.g. a resend from a
    shell without ``EXAM_SECRET_KEY`` or ``EXAM_API_TOKEN``: the plain page, which asks for a
    login); anything else (a plain page, None, the link itself in a payload an older
    agent-exam stored) as it is. A channel's ``send`` calls it once per send, before its
    tries, on the places its ``payloads`` put links, and only there: a bank's text in a
    payload (a case number) is never read as a marker."""
    marked = _marked(link)
    if marked is None:
        return link
    if not share_secret or not _SCORECARD.fullmatch(marked[1]):
        # a marker naming another page was not written by scorecard_link (a row written
        # into the store by hand): never signed, the page shown as it is
        return page_link(link)
    now = time.time()
    return make_link(share_secret, *marked, SHARE_DAYS,
                     now=now if made is None else link_made(made, now))


# the only path scorecard_link puts in a marker: two names %-encoded by quote(safe=""), so
# no "/", "?" or "#" in either (nor is either "." or "..")
_SCORECARD = re.compile(r"/scorecard/(?!\.\.?/)[\w.~%-]+/(?!\.\.?$)[\w.~%-]+", re.ASCII)


def made_links(with_links: Callable[[Any, Callable[[Any], Any]], Any], payload: Any,
               share_secret: str | None, made: float | None) -> tuple[Any, list[str]]:
    """A channel's ``payload`` as it is sent, each place its ``with_links`` puts a link made
    ``live_link(link, share_secret, made)``, and the tokens of the share links in those places
    (``share_tokens``): what the send's failure message is redacted of."""
    links: list[Any] = []

    def link(value: Any) -> Any:
        links.append(live_link(value, share_secret, made))
        return links[-1]

    return with_links(payload, link), share_tokens(links)


def share_tokens(links: Iterable[Any]) -> list[str]:
    """The tokens of the share links among ``links`` (a send's, once made): what its failure
    message is redacted of, as a receiver may quote a link back in its refusal, and that
    message is printed and stored (``last_error``)."""
    return [m.group(1) for link in links if isinstance(link, str)
            for m in [SHARE_PATH.search(link)] if m]


def page_link(link: Any) -> Any:
    """A marker as the plain page it stands for (anything else as it is): what a dry run
    shows and writes, a file under results/ holding no working share link either."""
    marked = _marked(link)
    return link if marked is None else "".join(marked)


def longest(link: str | None) -> str | None:
    """A stand-in as long as the longest share link a marker can become (the same public
    URL, then as many characters as the longest token), or the link itself when it is not
    a marker: what a channel measures a message by before its link is made."""
    marked = _marked(link)
    if marked is None:
        return link
    base, path = marked
    head = f"{base.rstrip('/')}/share/"
    return head + "x" * (longest_link(base, path) - len(head))


PREVIEW_NOTE = ("the Scorecard links in {out} are the plain pages (they ask for a login): a "
                f"send carries a share link made as it is sent, working {SHARE_DAYS:g} days")


def summaries_for(store: Store, run_ids: Sequence[int],
                  compare_to: str | None = None) -> list[Summary]:
    """A summary per agent version of these runs. Its verdict is the version's, over every
    counted run of it (the same word as exam compare), against ``compare_to`` or, by
    default, the last version shipped before it (exam/reports/baseline.py). An excluded run
    asked for is said to be excluded, with its reason, and gets no verdict."""

    runs = [store.get_run(i) for i in run_ids]
    report = kinds.build("scorecard", store, LOCAL, runs)
    if report["missing_banks"]:
        # a summary without the runs it was asked for says nothing of them (an empty payload
        # "delivered"), or shows a version by its other runs alone
        raise ExamError("; ".join(m["message"] for m in report["missing_banks"]))
    out = []
    for card in report["scorecards"]:
        agent, version = card["agent"], card["version"]
        asked = [r for r in runs if r.id in card["run_ids"]]
        gone = [r for r in asked if r.excluded_reason]
        if gone:
            # an excluded run's scorecard is no result of the version: said at its head, and
            # no verdict drawn from it
            out.append(replace(agent_summary(card, None, card["review_queue"]),
                               excluded=excluded_words(gone)))
            continue
        every = Inputs(store, select_runs(store, agent), LOCAL)
        records = store.ship_records(agent)
        change, previous = None, compare_to
        try:
            if compare_to is not None and compare_to != version:
                compare_runs(store, agent, compare_to, version)  # an excluded one said so
            if previous is None:  # the last version shipped before it; none for a first
                base = baseline.baseline_of(every.cells(), agent, version, records)
                previous = base.version if base else None
            if previous and previous != version:
                change = kinds.ask_of("compare", every, agent=agent, old=compare_to,
                                      new=version).report()
        except ExamError as exc:
            # no verdict, and said so: without a previous version the message would read
            # as a first version's (two rubrics, a version's runs removed...)
            out.append(replace(agent_summary(card, None, card["review_queue"]),
                               previous=previous or compare_to or "the last shipped version",
                               verdict_reason=f"not comparable: {exc}"))
            continue
        # the open review queue: needs_human cells no person has decided yet
        out.append(agent_summary(card, change, card["review_queue"]))
    return out
