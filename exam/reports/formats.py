"""Every report in every format: text, markdown, json, csv, junit (for CI systems) and html.

Each report is a plain dict first (that *is* the json format); the other formats are views
of it, which each report kind provides (exam/reports/kinds.py). This module only frames
them (csv quoting, the markdown heading, the junit XML) and never names a kind.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from exam.reports import html, kinds
from exam.reports.kinds import digests, missing_notes
from exam.textsafe import csv_cell, markdown_data, xml_text

FORMATS = ("text", "markdown", "json", "csv", "junit", "html")

__all__ = ["FORMATS", "digests", "missing_notes", "render", "to_csv", "to_junit", "to_markdown"]


def _claimed(kind: kinds.ReportKind, fmt: str) -> None:
    if fmt not in kind.formats:
        raise kinds.ReportError(f"the {kind.name} report has no {fmt} format "
                         f"(formats: {', '.join(kind.formats)})")


def to_csv(kind: str, report: dict[str, Any]) -> str:
    k = kinds.get(kind)
    _claimed(k, "csv")
    head, rows = k.table(report)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([csv_cell(h) for h in head])  # version columns are labels
    writer.writerows(["" if v is None else csv_cell(v) for v in row] for row in rows)
    return buf.getvalue()


def to_markdown(kind: str, report: dict[str, Any]) -> str:
    k = kinds.get(kind)
    _claimed(k, "markdown")
    # every text of the report (a reply, a case number, a category) is text, not markup
    report = markdown_data(report)
    lines = [f"# agent-exam {kind}", "", f"Grader {report['grader_version']}"
             + (f" · bank {digests(report)}" if report.get("bank_digests") else ""),
             ""]
    if report.get("missing_banks"):
        lines += [f"> **{n}**" for n in missing_notes(report)] + [""]
    lines += k.markdown(report) if k.markdown else kinds.md_table(*k.table(report))
    return "\n".join(lines) + "\n"


def to_junit(kind: str, report: dict[str, Any]) -> str:
    k = kinds.get(kind)
    _claimed(k, "junit")
    suites: dict[str, list] = {}
    for suite, name, failure, skipped in k.junit_cases(report):
        # ESC, NUL or a lone surrogate in a reply would make the file unreadable to CI
        suites.setdefault(xml_text(suite), []).append(
            (xml_text(name), failure and xml_text(failure), skipped and xml_text(skipped)))
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites name={quoteattr("agent-exam " + kind)}>']
    for suite, cases in suites.items():
        failures = sum(1 for _, f, _ in cases if f)
        skips = sum(1 for _, _, s in cases if s)
        lines.append(f"  <testsuite name={quoteattr(suite)} tests=\"{len(cases)}\" "
                     f"failures=\"{failures}\" skipped=\"{skips}\">")
        for name, failure, skipped in cases:
            lines.append(f"    <testcase classname={quoteattr(suite)} name={quoteattr(name)}>")
            if failure:
                lines.append(f"      <failure message={quoteattr(failure[:500])}>"
                             f"{escape(failure)}</failure>")
            if skipped:
                lines.append(f"      <skipped message={quoteattr(skipped[:500])}/>")
            lines.append("    </testcase>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"


def render(kind: str, report: dict[str, Any], fmt: str, colour: bool = False,
           context: dict[str, Any] | None = None) -> str:
    """``report`` (of this kind) in ``fmt``; ``kinds.ReportError`` (an ExamError: one line and
    exit 2 on the CLI) for a format the kind does not offer. ``context``: what the HTML page
    shows besides the report (html.render)."""
    k = kinds.get(kind)
    _claimed(k, fmt)
    if fmt == "json":
        return json.dumps(report, ensure_ascii=False, indent=2)
    if fmt == "csv":
        return to_csv(kind, report)
    if fmt == "markdown":
        return to_markdown(kind, report)
    if fmt == "junit":
        return to_junit(kind, report)
    if fmt == "html":  # one self-contained file: the dashboard's templates, CSS and charts

        return html.render(kind, report, **(context or {}))
    return k.text(report, colour)
