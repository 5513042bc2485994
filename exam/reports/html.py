"""The single-file HTML report (``--format html``) and the template helpers it shares with the
dashboard: the same templates and CSS, inline SVG charts, no script and no network.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from markupsafe import Markup, escape

from exam.reports import kinds, same
from exam.reports.changes import change_verdict
from exam.reports.rebalance_views import category_table, notes, rules
from exam.reports.scorecard import queue_words
from exam.textsafe import page_text


def heat(rate: float | None) -> str:
    """Pass rate → cell colour: red (0) through amber to green (1); grey for no data."""
    if rate is None:
        return "#d0d0d0"
    return f"hsl({round(rate * 120)}, 65%, {48 + round(rate * 4)}%)"


def pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0%}"


def num(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:,.0f}" if abs(v) >= 10 else f"{v:.3g}"


def _quoted_spans(text: str) -> Iterator[tuple[int, int]]:
    """The «…» spans of ``text`` as (start, end) of what is inside, as ``«(.+?)»`` read them
    (at least one character inside, up to the next »), found with two ``find``s a span: the
    regex tried every « to the end of the text, quadratic in an evidence sentence full of an
    agent's own «."""
    at = 0
    while (start := text.find("«", at)) >= 0:
        end = text.find("»", start + 2)
        if end < 0:  # no » after this «: none after a later one either
            return
        yield start + 1, end
        at = end + 1


def marks(evidence: str | None) -> Markup:
    """Evidence text, escaped, with its «deciding words» as <mark>."""
    out, at = [], 0
    text = evidence or ""
    for a, b in _quoted_spans(text):
        out.append(escape(text[at:a - 1]))
        out.append(Markup("<mark>") + escape(text[a:b]) + Markup("</mark>"))
        at = b + 1
    out.append(escape(text[at:]))
    return Markup("").join(out)


_HYPHENATED = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)+")


def unbroken(text: str | None) -> Markup:
    """Text, escaped, its short hyphenated words (W3-10, 2026-09-15) kept on one line: a
    browser may break after a hyphen, and W3-|10 at a line's end reads as two things."""
    if isinstance(text, Markup):  # markup already: its tags are not words to keep
        return text

    def keep(m: re.Match[str]) -> str:
        word = m.group(0)
        return f'<span class="nowrap">{word}</span>' if len(word) <= 24 else word

    return Markup(_HYPHENATED.sub(keep, str(escape(text or ""))))


def quoted(evidences: Iterable[str]) -> list[str]:
    """The «…» spans of some evidence strings, longest first, without repeats."""
    found = {e[a:b].strip() for e in evidences if e for a, b in _quoted_spans(e)}
    return sorted((f for f in found if f), key=len, reverse=True)


def _longest_from(text: str, phrases: Iterable[str]) -> list[int]:
    """For each place in ``text``, the length of the longest phrase starting there (0: none).

    Aho–Corasick over the text read backwards (a phrase starting at i is a reversed phrase
    ending at its mirror): one pass over the text and one over the phrases, however many
    phrases there are and however often they occur."""
    goto: list[dict[str, int]] = [{}]
    longest = [0]  # per state: the longest reversed phrase ending the state's string
    for p in phrases:
        s = 0
        for ch in reversed(p):
            nxt = goto[s].get(ch)
            if nxt is None:
                nxt = goto[s][ch] = len(goto)
                goto.append({})
                longest.append(0)
            s = nxt
        longest[s] = max(longest[s], len(p))
    fail = [0] * len(goto)
    queue = deque(goto[0].values())
    while queue:  # breadth first: a state's failure link is known before its children's
        s = queue.popleft()
        for ch, nxt in goto[s].items():
            f = fail[s]
            while f and ch not in goto[f]:
                f = fail[f]
            fail[nxt] = goto[f].get(ch, 0) if s else 0
            longest[nxt] = max(longest[nxt], longest[fail[nxt]])
            queue.append(nxt)
    ends, s = [], 0
    for ch in reversed(text):
        while s and ch not in goto[s]:
            s = fail[s]
        s = goto[s].get(ch, 0)
        ends.append(longest[s])
    ends.reverse()
    return ends


def _escaped(text: str) -> str:
    """``escape(text)`` as plain text (the same entities): no Markup object per piece."""
    return (text.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")
            .replace("'", "&#39;").replace('"', "&#34;"))


def mark_text(text: str | None, phrases: Iterable[str]) -> Markup:
    """A reply, escaped, with every occurrence of the deciding phrases as <mark>: from the
    left, the longest phrase starting at each place, none overlapping (a phrase inside a
    longer one is part of it). Linear in the reply and the phrases: a reply of 70,000 hits
    took 197 s when each hit was checked against every earlier one."""
    text = text or ""
    wanted = {p for p in phrases if p}
    if not wanted or not text:
        return escape(text)
    longest = _longest_from(text, wanted)
    out: list[str] = []
    at, i, n = 0, 0, len(text)
    while i < n:
        size = longest[i]
        if size:
            out += [_escaped(text[at:i]), "<mark>", _escaped(text[i:i + size]), "</mark>"]
            i = at = i + size
        else:
            i += 1
    out.append(_escaped(text[at:]))
    return Markup("".join(out))  # every piece of the reply escaped above


def as_json(value: Any) -> str:
    """A work order as people read it: Chinese as text, not \\u escapes."""
    return json.dumps(value, ensure_ascii=False, indent=2)


def _queue_words(card: dict[str, Any]) -> str:
    return queue_words(card)


FILTERS = {"heat": heat, "pct": pct, "num": num, "marks": marks, "as_json": as_json,
           "queue_words": _queue_words, "unbroken": unbroken, "by_outcome": same.by_outcome}


def _rebalance_notes(a: dict[str, Any]) -> list[str]:
    return notes(a, "")


def _globals() -> dict[str, Any]:
    return {"verdict_of": change_verdict, "rebalance_rules": rules,
            "rebalance_notes": _rebalance_notes, "rebalance_categories": category_table}


def _no_link(*_args: Any, **_kwargs: Any) -> None:
    return None


def environment():
    from jinja2 import ChoiceLoader, DictLoader, Environment, PackageLoader, select_autoescape

    # the package's templates, then those a report kind keeps in code (ReportKind.templates)
    loader = ChoiceLoader([PackageLoader("exam", "templates"), DictLoader(kinds.templates())])

    env = Environment(loader=loader, autoescape=select_autoescape(["html", "css"]),
                      finalize=page_text)
    env.filters.update(FILTERS)
    env.globals.update(_globals())
    env.globals["href"] = _no_link  # a file has no dashboard to link to
    return env


def render(kind: str, report: dict[str, Any], **context: Any) -> str:
    """The report as one HTML file: report.html around the kind's body template; ``context``:
    what its template shows besides the report (a scorecard's ``version_verdict``)."""

    k = kinds.get(kind)
    made = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    shown = k.shown(report, False) if k.shown else report  # a file: nothing cut
    return environment().get_template("report.html").render(
        kind=kind, body=k.html_template, heading=k.html_heading, report=shown,
        charts=kinds.charts(kind, report),
        title=k.html_title(report) if k.html_title else kind.capitalize(),
        made=made, missing_banks=report.get("missing_banks", []), **context)
