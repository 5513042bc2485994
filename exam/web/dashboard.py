"""A small server-rendered dashboard: runs, scorecards, compare, the discrimination heatmap."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, abort, redirect, render_template, request, session, url_for

from exam.app import store
from exam.errors import ExamError
from exam.reports.regrade import select_runs
from exam.web.auth import session_ok, token_ok

bp = Blueprint("dashboard", __name__)
OPEN = {"dashboard.login", "dashboard.static"}


@bp.before_request
def require_login():
    if request.endpoint in OPEN or session_ok():
        return None
    return redirect(url_for("dashboard.login", next=request.full_path.rstrip("?")))


@bp.app_template_filter("heat")
def heat(rate: float | None) -> str:
    """Pass rate → cell colour: red (0) through amber to green (1); grey for no data."""
    if rate is None:
        return "#d0d0d0"
    return f"hsl({round(rate * 120)}, 65%, {48 + round(rate * 4)}%)"


@bp.app_template_filter("pct")
def pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0%}"


@bp.app_template_filter("num")
def num(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:,.0f}" if abs(v) >= 10 else f"{v:.3g}"


@bp.route("/login", methods=["GET", "POST"])
def login():
    error = None
    if request.method == "POST":
        if token_ok(request.form.get("token", "")):
            session["auth"] = True
            return redirect(local_path(request.args.get("next")) or url_for("dashboard.runs"))
        error = "wrong token"
    return render_template("login.html", error=error), 401 if error else 200


def local_path(target: str | None) -> str | None:
    """``target`` when it is a path on this site, else None (login's ``next=``).

    Browsers drop tabs and newlines inside URLs and read a backslash as ``/``, so
    ``/%09/evil.example`` would become ``//evil.example``: anything with white space,
    control characters or a backslash is refused, as is anything with a scheme or a host.
    """
    if not target or not target.startswith("/") or target.startswith("//"):
        return None
    if any(ch.isspace() or ch == "\\" or ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0
           for ch in target):
        return None
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return None
    return target


@bp.post("/logout")
def logout():
    session.clear()
    return redirect(url_for("dashboard.login"))


def _versions() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in sorted(store().list_runs(), key=lambda r: r.id):
        versions = out.setdefault(r.agent, [])
        if r.version not in versions:
            versions.append(r.version)
    return out


@bp.get("/")
def runs():
    from exam.reports.regrade import outcome

    rows = []
    for r in store().list_runs(limit=200):
        rows.append({"run": r, "done": store().count_cells(r.id), "outcome": outcome(store(), r)})
    return render_template("runs.html", rows=rows, versions=_versions())


@bp.get("/scorecard/<agent>/<version>")
def scorecard(agent: str, version: str):
    from exam.reports import scorecard as sc
    from exam.reports.regrade import regrade

    runs = select_runs(store(), agent, version)
    if not runs:
        abort(404)
    report = sc.build(regrade(store(), runs))
    cards = report["scorecards"]
    return render_template("scorecard.html", report=report, card=cards[0] if cards else None,
                           agent=agent, version=version, missing_banks=report["missing_banks"])


@bp.get("/compare")
def compare():
    from exam.reports import compare as cmp
    from exam.reports.regrade import regrade

    versions = _versions()
    agent = request.args.get("agent") or next(iter(versions), None)
    known = versions.get(agent or "", [])
    old = request.args.get("old") or (known[-2] if len(known) >= 2 else None)
    new = request.args.get("new") or (known[-1] if known else None)
    report, error = None, None
    if agent and old and new:
        runs = select_runs(store(), agent)  # every version: a guard's history is evidence
        try:
            report = cmp.build(regrade(store(), runs), agent, old, new)
        except ExamError as exc:
            error = str(exc)
    return render_template("compare.html", report=report, error=error, versions=versions,
                           agent=agent, old=old, new=new,
                           missing_banks=report["missing_banks"] if report else [])


@bp.get("/discrimination")
def discrimination():
    from exam.reports import discrimination as disc
    from exam.reports.regrade import regrade

    agent = request.args.get("agent") or None
    runs = select_runs(store(), agent)
    report = disc.build(regrade(store(), runs), agent) if runs else None
    return render_template("discrimination.html", report=report, agent=agent,
                           agents=sorted(_versions()),
                           missing_banks=report["missing_banks"] if report else [])


def _queue(agent: str | None, blind: bool):
    """(the review queue, runs left out for a missing bank)."""
    import random

    from exam import review
    from exam.reports.regrade import regrade

    runs = select_runs(store(), agent)
    if not runs:
        return [], []
    regraded = regrade(store(), runs)
    items = review.queue(regraded, agent)
    if blind:
        random.Random(session.get("blind_seed", 0)).shuffle(items)
    return items, regraded.missing_banks


@bp.get("/review")
def review_page():
    agent = request.args.get("agent") or None
    blind = request.args.get("blind") == "1"
    if blind and "blind_seed" not in session:
        import secrets

        session["blind_seed"] = secrets.randbelow(1 << 30)
    items, missing = _queue(agent, blind)
    return render_template("review.html", items=items, agent=agent, blind=blind,
                           reviewer=session.get("reviewer", ""), agents=sorted(_versions()),
                           message=request.args.get("message"), missing_banks=missing)


@bp.post("/review")
def review_decide():
    from exam import review

    agent = request.form.get("agent") or None
    blind = request.form.get("blind") == "1"
    key = request.form.get("key", "")
    reviewer = request.form.get("reviewer", "").strip()
    session["reviewer"] = reviewer
    item = next((i for i in _queue(agent, blind)[0] if i.key == key), None)
    if item is None:
        message = "that item is no longer in the queue"
    else:
        try:
            review.decide(store(), item, request.form.get("decision", ""), reviewer,
                          request.form.get("reason", ""))
            message = f"{item.case_no}: {request.form.get('decision')} stored"
        except ExamError as exc:
            message = str(exc)
    return redirect(url_for("dashboard.review_page", agent=agent or "",
                            blind="1" if blind else "", message=message))
