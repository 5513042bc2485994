"""The single-file HTML report (``--format html``) and the template helpers it shares with the
dashboard: the same templates and CSS, inline SVG charts, no script and no network.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable
from typing import Any

from markupsafe import Markup, escape

_QUOTED = re.compile(r"«(.+?)»", re.S)


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


def marks(evidence: str | None) -> Markup:
    """Evidence text, escaped, with its «deciding words» as <mark>."""
    out, at = [], 0
    text = evidence or ""
    for m in _QUOTED.finditer(text):
        out.append(escape(text[at:m.start()]))
        out.append(Markup("<mark>") + escape(m.group(1)) + Markup("</mark>"))
        at = m.end()
    out.append(escape(text[at:]))
    return Markup("").join(out)


def quoted(evidences: Iterable[str]) -> list[str]:
    """The «…» spans of some evidence strings, longest first, without repeats."""
    found = {m.group(1).strip() for e in evidences for m in _QUOTED.finditer(e or "")}
    return sorted((f for f in found if f), key=len, reverse=True)


def mark_text(text: str | None, phrases: Iterable[str]) -> Markup:
    """A reply, escaped, with every occurrence of the deciding phrases as <mark>."""
    text = text or ""
    spans: list[tuple[int, int]] = []
    for p in phrases:
        start = 0
        while (i := text.find(p, start)) >= 0:
            if not any(a < i + len(p) and i < b for a, b in spans):
                spans.append((i, i + len(p)))
            start = i + len(p)
    out, at = [], 0
    for a, b in sorted(spans):
        out += [escape(text[at:a]), Markup("<mark>") + escape(text[a:b]) + Markup("</mark>")]
        at = b
    out.append(escape(text[at:]))
    return Markup("").join(out)


def as_json(value: Any) -> str:
    """A work order as people read it: Chinese as text, not \\u escapes."""
    return json.dumps(value, ensure_ascii=False, indent=2)


def _queue_words(card: dict[str, Any]) -> str:
    from exam.reports.scorecard import queue_words

    return queue_words(card)


FILTERS = {"heat": heat, "pct": pct, "num": num, "marks": marks, "as_json": as_json,
           "queue_words": _queue_words}


def _rebalance_notes(a: dict[str, Any]) -> list[str]:
    from exam.reports.rebalance_views import notes

    return notes(a, "")


def _globals() -> dict[str, Any]:
    from exam.reports.overview import change_verdict
    from exam.reports.rebalance_views import category_table, rules

    return {"verdict_of": change_verdict, "rebalance_rules": rules,
            "rebalance_notes": _rebalance_notes, "rebalance_categories": category_table}


def _no_link(*_args: Any, **_kwargs: Any) -> None:
    return None


def environment():
    from jinja2 import ChoiceLoader, DictLoader, Environment, PackageLoader, select_autoescape

    from exam.reports import kinds

    # the package's templates, then those a report kind keeps in code (ReportKind.templates)
    loader = ChoiceLoader([PackageLoader("exam", "templates"), DictLoader(kinds.templates())])
    from exam.textsafe import page_text

    env = Environment(loader=loader, autoescape=select_autoescape(["html", "css"]),
                      finalize=page_text)
    env.filters.update(FILTERS)
    env.globals.update(_globals())
    env.globals["href"] = _no_link  # a file has no dashboard to link to
    return env


def render(kind: str, report: dict[str, Any]) -> str:
    """The report as one HTML file: report.html around the kind's body template."""
    from exam.reports import kinds

    k = kinds.get(kind)
    made = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return environment().get_template("report.html").render(
        kind=kind, body=k.html_template, heading=k.html_heading, report=report,
        charts=kinds.charts(kind, report),
        title=k.html_title(report) if k.html_title else kind.capitalize(),
        made=made, missing_banks=report.get("missing_banks", []))
