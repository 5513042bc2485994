"""Charts as inline SVG, drawn on the server by pygal: no network and no script at view time.

The same SVG goes into the dashboard and into the single-file HTML report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

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


def _svg(chart: Any, label: str) -> Markup:
    svg = chart.render(is_unicode=True, disable_xml_declaration=True)
    return Markup(f'<figure class="chart" role="img" aria-label="{Markup.escape(label)}">'
                  f"{svg}</figure>")


def pass_rate(rows: Sequence[dict[str, Any]], title: str = "pass rate (95% interval)") -> Markup:
    """One bar per version, with its Wilson interval; coloured by the change's verdict."""
    pygal = _pygal()

    chart = pygal.Bar(style=_style(), title=title, show_legend=False, range=(0, 1),
                      value_formatter=lambda v: f"{v:.0%}", y_labels=[0, .25, .5, .75, 1],
                      **_config())
    chart.x_labels = [r["version"] for r in rows]
    values = []
    for r in rows:
        lo, hi = r["wilson"]
        verdict = (r.get("change") or {}).get("verdict")
        # no graded reply (every cell timed out, say): no bar rather than a bar at 0%
        v: dict[str, Any] = {"value": r["pass_rate"], "color": VERDICT_COLOUR.get(verdict, INK)}
        if lo is not None:
            v["ci"] = {"low": lo, "high": hi}
        values.append(v)
    chart.add("pass rate", values)
    return _svg(chart, title)


def cost(rows: Sequence[dict[str, Any]], key: str, title: str) -> Markup:
    """p50 and p95 of one cost figure across versions."""
    pygal = _pygal()

    chart = pygal.Line(style=_style((INK, MUTED)), title=title, include_x_axis=True,
                       dots_size=4, stroke_style={"width": 2.5},
                       value_formatter=lambda v: f"{v:,.0f}" if v >= 10 else f"{v:g}",
                       **_config())
    chart.x_labels = [r["version"] for r in rows]
    for q in ("p50", "p95"):
        chart.add(q, [r["cost"][key][q] for r in rows])
    return _svg(chart, title)


def coverage(rows: Sequence[dict[str, Any]], title: str = "cells answered / planned") -> Markup:
    pygal = _pygal()

    chart = pygal.StackedBar(style=_style((PASS, "#cfd8dc")), title=title, **_config())
    chart.x_labels = [r["version"] for r in rows]
    chart.add("answered", [r["answered"] for r in rows])
    chart.add("not answered", [max(r["planned"] - r["answered"], 0) for r in rows])
    return _svg(chart, title)


def verdict_counts(cards: Sequence[dict[str, Any]], title: str = "verdicts") -> Markup:
    """Scorecard: pass / needs_human / fail / not answered, stacked: per category for one
    scorecard, per agent and version for several."""
    pygal = _pygal()

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
    chart = pygal.HorizontalStackedBar(style=_style((PASS, HUMAN, FAIL, MUTED)), title=title,
                                       **_config(height=max(150, 80 + 30 * len(labels)),
                                                 margin_left=_wide_margin(labels)))
    chart.x_labels = labels
    for key, name in (("pass", "pass"), ("needs_human", "needs human"), ("fail", "fail"),
                      ("other", "not answered")):
        chart.add(name, [r[key] for r in rows])
    return _svg(chart, title)


def compare_rates(report: dict[str, Any], title: str = "pass rate, old → new") -> Markup:
    """Compare: the share of graded replies passing, before and after, with intervals."""
    from exam.reports.stats import wilson

    rows = []
    for side in ("old", "new"):
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

    pygal = _pygal()

    counts = Counter(q["role"] for q in agent["questions"])
    chart = pygal.HorizontalBar(style=_style((INK,)), title=f"{agent['agent']}: questions by role",
                                show_legend=False,
                                **_config(height=max(160, 60 + 26 * len(counts))))
    order = sorted(counts, key=lambda r: -counts[r])
    chart.x_labels = order
    chart.add("questions", [counts[r] for r in order])
    return _svg(chart, f"{agent['agent']}: questions by role")
