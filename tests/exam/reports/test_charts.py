"""Charts are drawn once per distinct set of figures and kept; a kept chart is the chart."""

from __future__ import annotations

import re

from exam.reports import charts

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def rows(rate: float = 0.5, answered: int = 8) -> list[dict]:
    return [{"version": "v1", "pass_rate": 0.9, "wilson": [0.7, 0.97], "answered": 10,
             "planned": 10, "cost": {"latency_ms": {"p50": 120, "p95": 300},
                                     "tokens": {"p50": 900, "p95": 1500}}},
            {"version": "v2 新版", "pass_rate": rate, "wilson": [rate - 0.2, rate + 0.2],
             "answered": answered, "planned": 10, "change": {"verdict": "hold"},
             "cost": {"latency_ms": {"p50": 140, "p95": 380},
                      "tokens": {"p50": 950, "p95": 1700}}}]


def draw_all(r: list[dict]) -> list[str]:
    card = {"categories": {"物流": {"pass": 3, "fail": 1}, "付款": {"needs_human": 2}}}
    return [charts.pass_rate(r), charts.coverage(r), charts.cost(r, "latency_ms", "latency ms"),
            charts.cost(r, "tokens", "tokens"), charts.verdict_counts([card]),
            charts.roles({"agent": "W2", "questions": [{"role": "anchor"}, {"role": "hard"},
                                                       {"role": "anchor"}]})]


def ids(svg: str) -> set[str]:
    return set(UUID.findall(svg))


def test_a_kept_chart_equals_one_drawn_afresh_under_an_id_of_its_own():
    first = draw_all(rows())
    kept = draw_all(rows())
    for cached in (charts._pass_rate, charts._coverage, charts._cost, charts._verdict_counts,
                   charts._roles):
        assert cached.cache_info().hits >= 1
        cached.cache_clear()
    fresh = draw_all(rows())
    for a, b, c in zip(first, kept, fresh, strict=True):
        assert len(ids(a)) == len(ids(b)) == 1 and ids(a) != ids(b) != ids(c)
        assert UUID.sub("ID", a) == UUID.sub("ID", b) == UUID.sub("ID", c)
        assert "<svg" in a and "</figure>" in a


def test_any_changed_figure_is_drawn_again():
    before = [UUID.sub("ID", s) for s in draw_all(rows())]
    after = [UUID.sub("ID", s) for s in draw_all(rows(rate=0.25, answered=6))]
    assert before[0] != after[0]  # pass rate
    assert before[1] != after[1]  # coverage
    assert before[2:] == after[2:]  # the cost figures did not change
    assert UUID.sub("ID", charts.pass_rate(rows(), "another title")) != before[0]


def test_a_chart_holds_no_script_and_its_labels_are_text():
    """pygal writes an inline <script> (its config) into every chart; the dashboard's CSP
    forbids scripts and the HTML file promises none, so it is dropped. A label a bank wrote
    (a category) stays text, never markup."""
    hostile = {"categories": {"</script><script>alert(1)</script>": {"pass": 1}}}
    for svg in [*draw_all(rows()), charts.verdict_counts([hostile])]:
        assert "<script" not in svg.lower()
        assert "<svg" in svg and "</figure>" in svg
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in charts.verdict_counts([hostile])
