"""The report registry: each report kind says, in one place, how it renders in each format.

A report is a plain dict (its json). A ``ReportKind`` gives the views of it: a flat table
(csv and markdown), the markdown sections above that table, junit testcases, terminal text
and the HTML body template. ``exam.reports.formats`` dispatches over this registry and never
names a kind, so a new report is its module in this package (build + renderings +
``register``): every module of ``exam.reports`` is imported before the registry is read.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from exam import reports
from exam.errors import ExamError

Report = dict[str, Any]
Table = tuple[list[str], list[list[Any]]]
# (suite, name, failure message or None, skipped message or None)
JunitCase = tuple[str, str, str | None, str | None]


@dataclass(frozen=True, slots=True)
class ReportKind:
    """Every rendering of one report. ``text`` is required (json needs nothing); a format whose
    rendering is None is not offered for this kind. Markdown without its own ``markdown``
    body shows the table under the common heading."""

    name: str
    text: Callable[[Report, bool], str]  # (report, colour) → terminal text
    table: Callable[[Report], Table] | None = None  # csv; markdown shows it too
    markdown: Callable[[Report], list[str]] | None = None  # the body; default: the table
    junit_cases: Callable[[Report], list[JunitCase]] | None = None
    html_template: str | None = None  # the body of report.html, e.g. "_compare.html"
    html_title: Callable[[Report], str] | None = None  # default: the kind's name
    html_heading: bool = True  # report.html shows the title as <h1> (False: the body has one)
    charts: Callable[[Report], dict[str, Any]] | None = None
    templates: dict[str, str] = field(default_factory=dict)  # template sources kept in code

    @property
    def formats(self) -> tuple[str, ...]:
        """The formats this kind renders in, in the order ``exam --format`` lists them."""
        has = {"text": True, "markdown": self.markdown is not None or self.table is not None,
               "json": True, "csv": self.table is not None,
               "junit": self.junit_cases is not None, "html": self.html_template is not None}
        return tuple(f for f, ok in has.items() if ok)


class ReportError(ExamError, ValueError):
    """No such report kind, or a format the kind does not render: bad input (exit 2)."""


_KINDS: dict[str, ReportKind] = {}
_loaded = False


def register(kind: ReportKind) -> ReportKind:
    """Add (or replace) a report kind; returns it, so a module can keep ``KIND = register(...)``."""
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    _KINDS.pop(name, None)


def _load() -> None:
    """Import every module of exam.reports once: a report module registers its kind."""
    global _loaded
    if not _loaded:
        _loaded = True

        for module in pkgutil.iter_modules(reports.__path__):
            importlib.import_module(f"exam.reports.{module.name}")


def get(name: str) -> ReportKind:
    _load()
    try:
        return _KINDS[name]
    except KeyError:
        raise ReportError(f"no report kind {name!r} (kinds: {', '.join(names())})") from None


def names() -> list[str]:
    _load()
    return list(_KINDS)


def charts(name: str, report: Report | None) -> dict[str, Any]:
    """The charts of a report of kind ``name`` (the dashboard's pages and the HTML file)."""
    kind = get(name)
    return kind.charts(report) if kind.charts and report else {}


def templates() -> dict[str, str]:
    """Template sources registered in code, for the HTML environment's loader."""
    _load()
    return {n: src for k in _KINDS.values() for n, src in k.templates.items()}


# -- small pieces every kind's renderings share -----------------------------------------

def digests(report: Report) -> str:
    return ", ".join(f"{agent} {d}" for agent, d in sorted(report.get("bank_digests", {}).items()))


def pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0%}"


def num(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}g}"


def frac(r: dict[str, Any]) -> str:
    return f"{r['passes']}/{r['graded']}" if r["graded"] else "–"


def ids(values: Iterable[Any]) -> str:
    return ", ".join(map(str, values))


def evidence(checks: Iterable[dict[str, Any]]) -> str:
    """The failing and undecided checks of a cell as one line: name, outcome, evidence, signs."""
    parts = []
    for c in checks:
        if c["outcome"] not in ("fail", "needs_human"):
            continue
        signs = [*(f"- {m}" for m in c.get("missing", [])),
                 *(f"+ {u}" for u in c.get("unexpected", []))]
        parts.append(f"{c['name']} {c['outcome']}: {c.get('evidence', '')}"
                     + (f" [{'; '.join(signs)}]" if signs else ""))
    return " | ".join(parts)


def md_table(head: list[str], rows: list[list[Any]]) -> list[str]:
    def cell(v: Any) -> str:
        return ("" if v is None else str(v)).replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return out


def missing_notes(report: Report) -> list[str]:
    """One line per run left out of a report because its bank cannot be loaded."""
    return [f"note: {m['message']}" for m in report.get("missing_banks", [])]


def with_notes(text: Callable[[Report, bool], str]) -> Callable[[Report, bool], str]:
    """A text rendering preceded by the notes about runs left out."""

    def render(report: Report, colour: bool = False) -> str:
        return "\n".join([*missing_notes(report), text(report, colour)])

    return render
