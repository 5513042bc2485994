"""Charts as inline SVG, drawn on the server by pygal: no network and no script at view time.

The same SVG goes into the dashboard and into the single-file HTML report.

Each chart is drawn from a few numbers and labels, and drawing is what costs (pygal: ~7 ms a
chart, twelve on the overview page). So each public function first reduces its report to
exactly what the chart shows, as tuples, and a drawing function kept in a small cache
(``CHARTS_KEPT`` per process) turns that into SVG: a page viewed again with the same figures
draws nothing, and any changed figure, label or title is another key, drawn afresh.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from exam.reports.stats import wilson

_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>", re.S | re.I)
CHARTS_KEPT = 256  # SVGs of 10–30 KB: a few MB per process at most
PASS, FAIL, HUMAN, MUTED, INK = "#2e7d32", "#c62828", "#b26a00", "#90a4ae", "#37474f"
VERDICT_COLOUR = {"ship": PASS, "hold": FAIL, "incomplete": HUMAN, "undecided": HUMAN}


def _pygal():
    """pygal, without the legacy import hook it appends to ``sys.meta_path`` for its map
    plugins (unused here): that hook has no ``find_spec``, so every later failed import in the
    process raises an ImportWarning (an error under ``-W error``)."""
    import sys

    import pygal

    sys.meta_path[:] = [f for f in sys.meta_path
                        if type(f).__name__ != "PluginImportFixer"
                        or not type(f).__module__.startswith("pygal")]
    return pygal


def _style(colours: Sequence[str] = (INK, MUTED, PASS, FAIL, HUMAN)):
    _pygal()
    from pygal.style import Style

    return Style(background="transparent", plot_background="transparent",
                 foreground="#444", foreground_strong="#222", foreground_subtle="#e4e4e4",
                 font_family='system-ui, "Noto Sans TC", sans-serif', label_font_size=15,
                 major_label_font_size=15, value_font_size=14, legend_font_size=15,
                 title_font_size=18, tooltip_font_size=14, colors=tuple(colours))


def _config(**kw: Any) -> dict[str, Any]:
    return {"js": [], "width": 420, "height": 250, "explicit_size": False,
            "margin": 6, "spacing": 8, "print_values": False, "legend_at_bottom": True,
            "legend_box_size": 10, "truncate_legend": -1, "x_label_rotation": 0,
            "max_scale": 5, "min_scale": 3, **kw}


def _wide_margin(labels: Sequence[str]) -> int:
    """Extra left room for labels with CJK characters: pygal measures every character as
    Latin-wide, and cuts the rest of 材料不完整 off."""
    import unicodedata

    wide = max((sum(1 for ch in label if unicodedata.east_asian_width(ch) in "WF")
                for label in labels), default=0)
    return 6 + 9 * wide


def _svg(chart: Any, label: str) -> tuple[str, str]:
    """The drawn chart, and the id pygal gave it (its CSS and script are scoped by that id)."""
    svg = chart.render(is_unicode=True, disable_xml_declaration=True)
    # pygal writes its config as an inline <script> even with no scripts to read it: dropped,
    # so the page (and the HTML file) hold no script at all and its CSP can forbid scripts
    svg = _SCRIPT.sub("", svg)
    return (f'<figure class="chart" role="img" aria-label="{Markup.escape(label)}">'
            f"{svg}</figure>"), chart.uuid


def _unique(drawn: tuple[str, str]) -> Markup:
    """A kept chart under an id of its own, as if drawn afresh: the same figures can be drawn
    twice on one page (two agents with equal versions), and ids must not repeat."""
    svg, uid = drawn
    return Markup(svg.replace(uid, str(uuid.uuid4())))


def pass_rate(rows: Sequence[dict[str, Any]], title: str = "pass rate (95% interval)") -> Markup:
    """One bar per version, with its Wilson interval; coloured by the change's verdict."""
    bars = tuple((r["version"], r["pass_rate"], *r["wilson"],
                  VERDICT_COLOUR.get((r.get("change") or {}).get("verdict"), INK)) for r in rows)
    return _unique(_pass_rate(bars, title))


@functools.lru_cache(maxsize=CHARTS_KEPT)
def _pass_rate(bars: tuple[tuple[str, float | None, float | None, float | None, str], ...],
               title: str) -> tuple[str, str]:
    pygal = _pygal()

    chart = pygal.Bar(style=_style(), title=title, show_legend=False, range=(0, 1),
                      value_formatter=lambda v: f"{v:.0%}", y_labels=[0, .25, .5, .75, 1],
                      **_config())
    chart.x_labels = [version for version, *_ in bars]
    values = []
    for _version, rate, lo, hi, colour in bars:
        # no graded reply (every cell timed out, say): no bar rather than a bar at 0%
        v: dict[str, Any] = {"value": rate, "color": colour}
        if lo is not None:
            v["ci"] = {"low": lo, "high": hi}
        values.append(v)
    chart.add("pass rate", values)
    return _svg(chart, title)


def cost(rows: Sequence[dict[str, Any]], key: str, title: str) -> Markup:
    """p50 and p95 of one cost figure across versions."""
    points = tuple((r["version"], r["cost"][key]["p50"], r["cost"][key]["p95"]) for r in rows)
    return _unique(_cost(points, title))


@functools.lru_cache(maxsize=CHARTS_KEPT)
def _cost(points: tuple[tuple[str, float | None, float | None], ...], title: str
          ) -> tuple[str, str]:
    pygal = _pygal()

    chart = pygal.Line(style=_style((INK, MUTED)), title=title, include_x_axis=True,
                       dots_size=4, stroke_style={"width": 2.5},
                       value_formatter=lambda v: f"{v:,.0f}" if v >= 10 else f"{v:g}",
                       **_config())
    chart.x_labels = [version for version, _, _ in points]
    chart.add("p50", [p50 for _, p50, _ in points])
    chart.add("p95", [p95 for _, _, p95 in points])
    return _svg(chart, title)


def coverage(rows: Sequence[dict[str, Any]], title: str = "cells answered / planned") -> Markup:
    bars = tuple((r["version"], r["answered"], max(r["planned"] - r["answered"], 0)) for r in rows)
    return _unique(_coverage(bars, title))


@functools.lru_cache(maxsize=CHARTS_KEPT)
def _coverage(bars: tuple[tuple[str, int, int], ...], title: str) -> tuple[str, str]:
    pygal = _pygal()

    chart = pygal.StackedBar(style=_style((PASS, "#cfd8dc")), title=title, **_config())
    chart.x_labels = [version for version, _, _ in bars]
    chart.add("answered", [answered for _, answered, _ in bars])
    chart.add("not answered", [missing for _, _, missing in bars])
    return _svg(chart, title)


def verdict_counts(cards: Sequence[dict[str, Any]], title: str = "verdicts") -> Markup:
    """Scorecard: pass / needs_human / fail / not answered, stacked: per category for one
    scorecard, per agent and version for several."""
    if len(cards) == 1:
        cats = cards[0]["categories"]
        labels = list(cats)
        rows = [{"pass": c.get("pass", 0), "needs_human": c.get("needs_human", 0),
                 "fail": c.get("fail", 0),
                 "other": sum(n for k, n in c.items() if k not in ("pass", "needs_human", "fail"))}
                for c in cats.values()]
        title = "verdicts by category"
    else:
        labels = [f"{c['agent']} {c['version']}" for c in cards]
        rows = [{**{k: c["verdicts"][k] for k in ("pass", "needs_human", "fail")},
                 "other": sum(n for k, n in c["run_status"].items() if k != "ok")} for c in cards]
    keys = ("pass", "needs_human", "fail", "other")
    counts = tuple(tuple(r[k] for k in keys) for r in rows)
    return _unique(_verdict_counts(tuple(labels), counts, title))


@functools.lru_cache(maxsize=CHARTS_KEPT)
def _verdict_counts(labels: tuple[str, ...], rows: tuple[tuple[int, int, int, int], ...],
                    title: str) -> tuple[str, str]:
    pygal = _pygal()

    chart = pygal.HorizontalStackedBar(style=_style((PASS, HUMAN, FAIL, MUTED)), title=title,
                                       **_config(height=max(150, 80 + 30 * len(labels)),
                                                 margin_left=_wide_margin(labels)))
    chart.x_labels = labels
    for n, name in enumerate(("pass", "needs human", "fail", "not answered")):
        chart.add(name, [r[n] for r in rows])
    return _svg(chart, title)


def compare_rates(report: dict[str, Any], title: str = "pass rate, old → new") -> Markup:
    """Compare: the share of graded replies passing, before and after, with intervals."""

    rows = []
    for side in ("old", "new"):
        rate = (report.get("rates") or {}).get(side)
        if rate:  # the mean of per-question rates (exam.reports.stats.version_rate)
            rows.append({"version": report[side], "pass_rate": rate["rate"],
                         "wilson": rate["interval"]})
            continue
        counts = report["counts"][side]
        graded = sum(counts.get(k, 0) for k in ("pass", "fail", "needs_human"))
        passes = counts.get("pass", 0)
        lo, hi = wilson(passes, graded) if graded else (None, None)
        rows.append({"version": report[side], "pass_rate": passes / graded if graded else None,
                     "wilson": [lo, hi]})
    return pass_rate(rows, title)


def discrimination(agent: dict[str, Any]) -> Markup:
    rows = [{"version": pv["version"], "pass_rate": pv["pass_rate"],
             "wilson": pv.get("bootstrap") or pv["wilson"]}
            for pv in agent["summary"]["per_version"]]
    return pass_rate(rows, f"{agent['agent']}: pass rate by version (95% interval)")


def roles(agent: dict[str, Any]) -> Markup:
    """Rebalance: how many questions hold each role."""
    from collections import Counter

    counts = Counter(q["role"] for q in agent["questions"])
    order = sorted(counts, key=lambda r: -counts[r])
    return _unique(_roles(tuple((r, counts[r]) for r in order),
                          f"{agent['agent']}: questions by role"))


@functools.lru_cache(maxsize=CHARTS_KEPT)
def _roles(bars: tuple[tuple[str, int], ...], title: str) -> tuple[str, str]:
    pygal = _pygal()

    chart = pygal.HorizontalBar(style=_style((INK,)), title=title, show_legend=False,
                                **_config(height=max(160, 60 + 26 * len(bars))))
    chart.x_labels = [role for role, _ in bars]
    chart.add("questions", [n for _, n in bars])
    return _svg(chart, title)
