"""The report registry: each report kind says, in one place, how it is built and how it
renders in each format, and every surface asks it.

A report is a plain dict (its json). A ``ReportKind`` gives how it is assembled (which runs
it reads from its arguments, ``runs``; what it makes of them once graded, ``build``; the
arguments people may give it, ``params``) and the views of it: a flat table (csv and
markdown), the markdown sections above that table, junit testcases, terminal text and the
HTML body template. ``ask``/``build`` assemble a report for any surface (the CLI, the API,
the dashboard, notifications): the surface brings only its grade source
(exam/reports/inputs.py). From ``params`` the CLI makes ``exam report NAME``, the API
``GET /api/reports/NAME`` and its OpenAPI entry, the dashboard a page and a menu link, for
every kind that has no command or page of its own. ``exam.reports.formats`` dispatches over
this registry and never names a kind, so a new report is its module in this package (build
+ renderings + ``register``): every module of ``exam.reports`` is imported before the
registry is read.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from exam import reports
from exam.errors import ExamError
from exam.reports.inputs import GradeSource, Inputs
from exam.reports.selection import report_runs

if TYPE_CHECKING:
    from exam.store import Run, Store

Report = dict[str, Any]
Args = dict[str, Any]
Table = tuple[list[str], list[list[Any]]]
# (suite, name, failure message or None, skipped message or None)
JunitCase = tuple[str, str, str | None, str | None]
OWN = "/reports/{name}"  # where a kind's API route and dashboard page are, unless it says


@dataclass(frozen=True, slots=True)
class Param:
    """One argument people give a report: ``--name`` on the CLI, a query parameter of the
    API and of the dashboard's page (or a part of the API's path, ``<int:name>``)."""

    name: str
    help: str
    type: Literal["text", "int"] = "text"
    required: bool = False
    default: Any = None
    minimum: int | None = None  # a whole number at least this
    many: bool = False  # given any number of times: a tuple

    def value(self, raw: str) -> Any:
        """The argument from its text (a query parameter's); ``ArgError`` naming it."""
        if self.type == "text":
            return raw
        # ASCII digits only: "²".isdigit() is true, and int() of 5,000 digits raises
        low = self.minimum
        if not re.fullmatch(r"[0-9]{1,9}", raw) or (low is not None and int(raw) < low):
            raise ArgError(self.name, f"{self.name}: expected a whole number"
                                      + (f" ≥ {low}" if low is not None else "")
                                      + f", found {raw[:20]!r}")
        return int(raw)


def _report_runs(store: Store, args: Args) -> list[Run]:
    """The default selection: every counted run, of the agent and version when given."""
    return report_runs(store, args.get("agent"), args.get("version"))


AGENT = Param("agent", "Only runs of this agent.")
VERSION = Param("version", "Only runs of this version label.")


@dataclass(frozen=True, slots=True)
class ReportKind:
    """One report: how it is assembled, where it is served and every rendering of it.

    ``text`` is required for the CLI and the text format (json needs nothing); a format whose
    rendering is None is not offered for this kind. Markdown without its own ``markdown``
    body shows the table under the common heading. A kind without ``build`` is rendered only
    (its report made elsewhere)."""

    name: str
    text: Callable[[Report, bool], str] | None  # (report, colour) → terminal text
    table: Callable[[Report], Table] | None = None  # csv; markdown shows it too
    markdown: Callable[[Report], list[str]] | None = None  # the body; default: the table
    junit_cases: Callable[[Report], list[JunitCase]] | None = None
    html_template: str | None = None  # the body of report.html, e.g. "_compare.html"
    html_title: Callable[[Report], str] | None = None  # default: the kind's name
    html_heading: bool = True  # report.html shows the title as <h1> (False: the body has one)
    charts: Callable[[Report], dict[str, Any]] | None = None
    templates: dict[str, str] = field(default_factory=dict)  # template sources kept in code
    # what its template shows of it, made once (kept with a page's answer, not at every view):
    # (report, capped) → the view; ``capped`` for a dashboard page (lists cut, the rest a
    # link away), not for an HTML file (kept, no dashboard to link to). None: the report
    shown: Callable[[Report, bool], Report] | None = None
    # -- how it is assembled: the one place, for every surface --
    build: Callable[[Inputs, Args], Report] | None = None  # (graded runs, arguments) → report
    runs: Callable[[Store, Args], list[Run]] = _report_runs  # which runs: SelectionError if none
    params: tuple[Param, ...] = (AGENT, VERSION)
    # other stored inputs it reads (a compare: the ship decisions), read once: added to its
    # arguments, and so to the key a kept answer is kept under (exam.reports.answer_cache)
    stored: Callable[[Store, Args], Args] | None = None
    # the error that means it was asked wrongly (a version against itself) and the argument
    # to name: the API's 400, not the 404 of what is not stored
    refusal: tuple[type[Exception], str] | None = None
    # -- where it is served, besides its own command or page --
    summary: str = ""  # one line: the CLI's help, the OpenAPI summary
    label: str = ""  # its name as people read it (the menu, the page's heading)
    cli: bool = True  # `exam report NAME` (False: a command of its own elsewhere, `exam compare`)
    api: str | None = OWN  # its route under /api; None: not on the API
    # arguments the API asks with unless its query gives them (a page, not every cell)
    api_args: Args = field(default_factory=dict)
    page: str | None = OWN  # its dashboard page; None: none, or a page of its own

    @property
    def formats(self) -> tuple[str, ...]:
        """The formats this kind renders in, in the order ``exam --format`` lists them."""
        has = {"text": self.text is not None,
               "markdown": self.markdown is not None or self.table is not None,
               "json": True, "csv": self.table is not None,
               "junit": self.junit_cases is not None, "html": self.html_template is not None}
        return tuple(f for f, ok in has.items() if ok)

    @property
    def title(self) -> str:
        return self.label or self.name.replace("_", " ").capitalize()

    @property
    def api_path(self) -> str | None:
        return self.api and self.api.replace("{name}", self.name)

    @property
    def page_path(self) -> str | None:
        return self.page and self.page.replace("{name}", self.name)


class ReportError(ExamError, ValueError):
    """No such report kind, or a format the kind does not render: bad input (exit 2)."""


class ArgError(ReportError):
    """An argument of a report given wrongly: the API's 400 naming ``field``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


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


def served() -> list[ReportKind]:
    """The kinds the API serves, each at its ``api_path``."""
    _load()
    return [k for k in _KINDS.values() if k.build and k.api]


def pages() -> list[ReportKind]:
    """The kinds with a dashboard page made from the registry (and a link in its menu)."""
    _load()
    return [k for k in _KINDS.values() if k.build and k.page and k.html_template]


def commands() -> list[ReportKind]:
    """The kinds `exam report` offers (a command written for one takes its place)."""
    _load()
    return [k for k in _KINDS.values() if k.build and k.text and k.cli]


# -- assembling a report: every surface comes through here --------------------------------

@dataclass(frozen=True, slots=True)
class Asked:
    """A report asked for: its kind, its runs (graded on first use) and its arguments."""

    kind: ReportKind
    inputs: Inputs
    args: Args

    @property
    def runs(self) -> list[Run]:
        return self.inputs.runs

    def report(self) -> Report:
        return self.kind.build(self.inputs, self.args)

    def key(self) -> tuple:
        """What, besides its runs, a kept answer of it is keyed by: the kind and arguments."""
        return (self.kind.name, tuple(sorted(self.args.items(), key=lambda kv: kv[0])))


def _built(name: str) -> ReportKind:
    kind = get(name)
    if kind.build is None:
        raise ReportError(f"the {name} report is not built from stored runs")
    return kind


def _completed(kind: ReportKind, store: Store, runs: Sequence[Run] | None,
               args: Mapping[str, Any]) -> tuple[list[Run], Args]:
    out = {**{p.name: p.default for p in kind.params}, **args}
    chosen = kind.runs(store, out) if runs is None else list(runs)
    if kind.stored is not None:
        out.update(kind.stored(store, out))
    return chosen, out


def ask(name: str, store: Store, grades: GradeSource, runs: Sequence[Run] | None = None,
        **args: Any) -> Asked:
    """Report ``name`` asked with ``args``: its runs (the kind's selection, unless the caller
    has them: a notification's, a run just made), graded by ``grades`` when it is built."""
    kind = _built(name)
    chosen, args = _completed(kind, store, runs, args)
    return Asked(kind, Inputs(store, chosen, grades), args)


def ask_of(name: str, inputs: Inputs, **args: Any) -> Asked:
    """Report ``name`` of runs graded already: several reports, one grading (the demo)."""
    kind = _built(name)
    _, args = _completed(kind, inputs.store, inputs.runs, args)
    return Asked(kind, inputs, args)


def build(name: str, store: Store, grades: GradeSource, runs: Sequence[Run] | None = None,
          **args: Any) -> Report:
    """Report ``name``, built: ``ask(...).report()``."""
    return ask(name, store, grades, runs, **args).report()


def parse(kind: ReportKind, given: Callable[[str], list[str]],
          fixed: Mapping[str, Any] | None = None) -> Args:
    """A kind's arguments from text (``given(name)``: a query parameter's values), white space
    trimmed; ``fixed``: those read from the path already. ``ArgError`` names the first wrong
    one."""
    args: Args = dict(fixed or {})
    for p in kind.params:
        if p.name in args:
            if p.many and not isinstance(args[p.name], tuple):
                args[p.name] = (args[p.name],)
            continue
        raw = [v.strip() for v in given(p.name) if v.strip()]
        if not raw:
            if p.required:
                raise ArgError(p.name, f"query parameter {p.name!r} is required")
            continue
        args[p.name] = tuple(map(p.value, raw)) if p.many else p.value(raw[0])
    return args


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
