"""Write the figures of bench/results.json into docs/performance.md, between markers."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "performance.md"
START, END = "<!-- figures:start -->", "<!-- figures:end -->"


def _row(what: str, figure: str, target: str, ok: bool | None) -> str:
    mark = "" if ok is None else (" ✓" if ok else " ✗ missed")
    return f"| {what} | {figure} | {target}{mark} |"


def _load(x: dict) -> str:
    """The load average the figure was taken under (the machine is shared)."""
    return f"; load {x['load']:.1f}" if "load" in x else ""


def _sections_machines(r: dict) -> str:
    """Which machine each section was measured on: a run with ``--only`` keeps the other
    sections' figures, which may come from another machine or day."""
    on = r.get("measured_on") or {}
    if not on:
        return ""
    by: dict[tuple, list[str]] = {}
    for section, m in sorted(on.items()):
        by.setdefault((m["host"], m["loop_s"], m["date"]), []).append(section)
    parts = [f"{', '.join(s)} on {host} ({date}, core {loop} s)"
             for (host, loop, date), s in by.items()]
    return " Sections measured: " + "; ".join(parts) + "."


def table(r: dict) -> str:
    t = r["targets"]
    rows = ["| figure | measured | target |", "|---|---|---|"]
    o = r.get("overhead", {})
    for latency in (50, 200, 500):
        for conc in (1, 8, 32):
            x = o.get(f"c{conc}_{latency}ms")
            if not x:
                continue
            target = t.get(f"overhead_c8_{latency}ms") if conc == 8 else None
            rows.append(_row(f"harness overhead, {latency} ms agent, concurrency {conc} "
                             f"(wall ÷ ideal, {x['repetitions']} run(s), median)",
                             f"{x['ratio']:.3f} ({x['wall_s']:.2f} s vs {x['ideal_s']:.2f} s"
                             f"{_load(x)})",
                             f"≤ {target}" if target else "–",
                             None if target is None else x["ratio"] <= target))
    x = o.get("c8_200ms")
    if x:
        rows.append(_row("CPU of the `exam run` process, 180 calls (200 ms, concurrency 8)",
                         f"{x['cpu_s']:.2f} s", f"< {t['cpu_s_180_calls']} s",
                         x["cpu_s"] < t["cpu_s_180_calls"]))
        peak = max(v["peak_mb"] for v in o.values())
        rows.append(_row("peak memory of `exam run` (max over all runs)", f"{peak:.0f} MB",
                         f"< {t['peak_mb']} MB", peak < t["peak_mb"]))
    p = r.get("pacing")
    if p:
        rows.append(_row("pacing: start rate with min_interval_s 0.1, concurrency 8",
                         f"{p['achieved_rate']:.2f}/s ({p['rate_error']:.1%} off)",
                         "within 5% of 10/s", p["rate_error"] <= t["pacing_rate_error"]))
        rows.append(_row("pacing: closest two request starts (as the runner started them)",
                         f"{p['min_gap_s'] * 1000:.1f} ms", "≥ 100 ms", p["min_gap_s"] >= 0.1))
        rows.append(_row("pacing: closest two arrivals at the agent (adds the agent server's own "
                         "accept and thread jitter)", f"{p['min_arrival_gap_s'] * 1000:.1f} ms",
                         "–", None))
    for backend, suffix in (("SQLite", ""), ("PostgreSQL", "_postgresql")):
        g = r.get(f"regrade{suffix}")
        if not g:
            continue
        if not suffix:
            rows.append(_row(f"re-grading on one core ({g['checks_per_reply']} checks per reply, "
                             "100–400 Chinese characters)",
                             f"{g['replies_per_s']:,} replies/s{_load(g)}",
                             f"≥ {t['regrade_per_s']:,}", g["replies_per_s"] >= t["regrade_per_s"]))
        cpu = (f", {g['discrimination_cpu_s']:.2f} s CPU" if "discrimination_cpu_s" in g else "")
        rows.append(_row(f"{backend}: discrimination report over {g['stored_replies']:,} stored "
                         "replies, end to end, grade cache empty",
                         f"{g['discrimination_s']:.2f} s{cpu}, "
                         f"{g['discrimination_peak_mb']:.0f} MB{_load(g)}",
                         f"≤ {t['discrimination_s']} s, ≤ {t['discrimination_mb']} MB",
                         g["discrimination_s"] <= t["discrimination_s"]
                         and g["discrimination_peak_mb"] <= t["discrimination_mb"]))
        if "discrimination_cached_s" in g:
            cpu = (f", {g['discrimination_cached_cpu_s']:.2f} s CPU"
                   if "discrimination_cached_cpu_s" in g else "")
            rows.append(_row(f"{backend}: the same report again, its graded runs kept",
                             f"{g['discrimination_cached_s']:.2f} s{cpu}{_load(g)}",
                             f"≤ {t.get('discrimination_cached_s', 1.0)} s",
                             g["discrimination_cached_s"] <= t.get("discrimination_cached_s", 1.0)))
    for backend, suffix in (("SQLite", ""), ("PostgreSQL", "_postgresql")):
        x = r.get(f"run10k{suffix}")
        if not x:
            continue
        runs = (f"median of {len(x['ratios'])}: " + " / ".join(f"{q:.3f}" for q in x["ratios"])
                + ", " if len(x.get("ratios", [])) > 1 else "")
        rows.append(_row(f"{backend}: `exam run` of {x['cells']:,} cells, {x['latency_ms']} ms "
                         f"agent, concurrency {x['concurrency']} (wall ÷ ideal)",
                         f"{x['ratio']:.3f} ({runs}{x['wall_s']:.2f} s vs {x['ideal_s']:.2f} s, "
                         f"{x['stored']:,} stored{_load(x)})", f"≤ {t['run10k_ratio']}",
                         x["ratio"] <= t["run10k_ratio"]))
        rows.append(_row(f"{backend}: its memory (peak; peak of the first and second half)",
                         f"{x['peak_mb']:.0f} MB; {x['first_half_peak_mb']:.0f} / "
                         f"{x['second_half_peak_mb']:.0f} MB", f"≤ {t['run10k_mb']} MB, flat",
                         x["peak_mb"] <= t["run10k_mb"]))
        y = x.get("split")
        if y:
            rows.append(_row(f"{backend}: the same run split with a second process "
                             "(`EXAM_RUN_PROCESSES=2`, not the default)",
                             f"{y['ratio']:.3f} (median of {len(y['ratios'])}: "
                             + " / ".join(f"{q:.3f}" for q in y["ratios"])
                             + f", {y['wall_s']:.2f} s; {y['peak_mb']:.0f} MB for both "
                             f"processes{_load(y)})", f"≤ {t['run10k_ratio']}, "
                             f"≤ {t['run10k_mb']} MB",
                             y["ratio"] <= t["run10k_ratio"] and y["peak_mb"] <= t["run10k_mb"]))
    s = r.get("startup")
    if s:
        rows.append(_row("`exam --help` (median of runs)", f"{s['help_s']:.3f} s",
                         f"≤ {t['help_s']} s", s["help_s"] <= t["help_s"]))
        rows.append(_row("`exam bank check bank/` (60 questions, 125 example replies)",
                         f"{s['bank_check_s']:.3f} s", f"≤ {t['bank_check_s']} s",
                         s["bank_check_s"] <= t["bank_check_s"]))
    for backend, suffix in (("SQLite", ""), ("PostgreSQL", "_postgresql")):
        for name, x in (r.get(f"service{suffix}") or {}).items():
            target = t.get("scorecard_p99_ms") if name == "api_scorecard" else None
            rows.append(_row(f"{backend}: service `{name}` under gunicorn (2 workers × 4 "
                             "threads, 8 clients)", f"{x['req_per_s']} req/s, p99 "
                             f"{x['p99_ms']:.0f} ms, {x['errors']} errors{_load(x)}",
                             f"p99 ≤ {target} ms" if target else "recorded",
                             None if target is None else x["p99_ms"] <= target))
    for key, backend in (("pages", "SQLite"), ("pages_postgresql", "PostgreSQL")):
        for n, x in sorted((r.get(key) or {}).get("sizes", {}).items(), key=lambda kv: int(kv[0])):
            rows += _pages_rows(backend, int(n), x)
    m = r["machine"]
    head = (f"Measured {m['date']} on {m['cpus']} cores ({m['processor']}), Python {m['python']}, "
            f"{m['platform']}" + (" — quick mode" if r.get("quick") else "") + "."
            + (f" Speed of one core: {m['loop_s']} s of CPU for 10 million additions in a "
               "Python loop (best of 5; lower is faster)." if m.get("loop_s") else "")
            + _sections_machines(r))
    return head + "\n\n" + "\n".join(rows)


PAGE_TARGETS = {"warm_p95_s": 0.2, "first_s": 1.0, "kb": 300}


def _pages_rows(backend: str, n: int, x: dict) -> list[str]:
    """Three rows per size: the slowest warm page, the slowest first view (each by the asking
    process's CPU and by the wall clock, which adds the database's own time and the machine's
    other work), the heaviest page (bench/pages.py; every page's figures are in
    bench/pages*.json). Within its target only when both are."""
    pages = x["pages"]

    def worst(figure: str) -> tuple[str, float]:
        path = max(pages, key=lambda p: pages[p].get(figure) or 0)
        return path, pages[path].get(figure) or 0

    warm, warm_wall = worst("warm_cpu_p95_s"), worst("warm_wall_p95_s")
    first, first_wall = worst("first_cpu_s"), worst("first_wall_s")
    heavy = max(pages, key=lambda p: pages[p]["kb"])
    at = f"{backend}, {n:,} stored replies" + (
        f" (measured {x['measured']} at {x['commit']})" if x.get("measured") else "")
    return [
        _row(f"{at}: slowest page or API route, warm (p95 of {len(pages)}: CPU; wall)",
             f"{warm[1] * 1000:.0f} ms `{warm[0]}`; {warm_wall[1] * 1000:.0f} ms "
             f"`{warm_wall[0]}`; each run kept at its end in {x['kept_cpu_s_per_run']} s"
             f"{_load(x)}", "≤ 200 ms",
             max(warm[1], warm_wall[1]) <= PAGE_TARGETS["warm_p95_s"]),
        _row(f"{at}: slowest first view (a fresh process: CPU; wall)",
             f"{first[1]:.2f} s `{first[0]}`; {first_wall[1]:.2f} s `{first_wall[0]}`",
             "≤ 1 s", max(first[1], first_wall[1]) <= PAGE_TARGETS["first_s"]),
        _row(f"{at}: heaviest answer", f"{pages[heavy]['kb']:.0f} KB `{heavy}`", "≤ 300 KB",
             pages[heavy]["kb"] <= PAGE_TARGETS["kb"]),
    ]


PAGES_START, PAGES_END = "<!-- pages:start -->", "<!-- pages:end -->"


def pages_table(results: dict) -> str:
    """Every page and route at every size and backend measured: first view and warm p95, CPU
    then wall, and its weight (bench/pages*.json, through results.json's pages sections)."""
    columns = [(backend, n, x) for key, backend in (("pages", "SQLite"),
                                                    ("pages_postgresql", "PostgreSQL"))
               for n, x in sorted((results.get(key) or {}).get("sizes", {}).items(),
                                  key=lambda kv: int(kv[0]))]
    if not columns:
        return "(not measured yet: `python bench/run.py --only pages --quick`)"
    head = ["page or route"] + [f"{b} {int(n):,}" for b, n, _ in columns] + ["KB (largest)"]
    paths = list(dict.fromkeys(p for _, _, x in columns for p in x["pages"]))

    def cell(x: dict, path: str) -> str:
        p = x["pages"].get(path)
        if p is None:
            return "–"
        return (f"{p['first_cpu_s']:.2f} / {p['first_wall_s']:.2f} s · "
                f"{p['warm_cpu_p95_s'] * 1000:.0f} / {p['warm_wall_p95_s'] * 1000:.0f} ms")

    rows = [[f"`{path}`"] + [cell(x, path) for _, _, x in columns]
            + [f"{max(x['pages'][path]['kb'] for _, _, x in columns if path in x['pages']):,.0f}"]
            for path in paths]
    said = [f"{b} {int(n):,}: measured {x.get('measured', '?')} at {x.get('commit', '?')}, load "
            f"{x.get('load', '?')}, each run kept at its end in {x['kept_cpu_s_per_run']} s CPU"
            for b, n, x in columns]
    lines = ["Each cell: first view (a fresh process), CPU / wall; then warm p95 of the views "
             "after it, CPU / wall. " + "; ".join(said) + ".", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _between(text: str, start: str, end: str, body: str) -> str:
    if start not in text:
        return text
    before, _, rest = text.partition(start)
    _, _, after = rest.partition(end)
    return f"{before}{start}\n{body}\n{end}{after}"


def write_performance_md(results: dict) -> None:
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else f"{START}\n{END}\n"
    text = _between(text, START, END, table(results))
    DOC.write_text(_between(text, PAGES_START, PAGES_END, pages_table(results)),
                   encoding="utf-8")
