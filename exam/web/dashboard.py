"""A small server-rendered dashboard: the agent overview, runs, scorecards, compare, the
discrimination heatmap, the reply viewer and the review queue.

Admins (EXAM_API_TOKEN) may also change state (start runs, review, revoke share links);
viewers (EXAM_VIEWER_TOKEN) read every page and change nothing; a share link
(exam/share.py) reads its page until it expires or is revoked.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    abort,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from jinja2 import FunctionLoader
from markupsafe import Markup

from exam.errors import ExamError, NoSuchRun, StoreError
from exam.records import RunState
from exam.reports import kinds
from exam.reports.html import FILTERS, _globals
from exam.reports.inputs import SERVICE
from exam.reports.selection import SelectionError, latest_pair, report_runs, select_runs
from exam.web.auth import (
    close_session,
    is_admin,
    is_viewer,
    open_session,
    session_ok,
    shared_access,
    shown_error,
    token_ok,
    viewer_token_ok,
)

if TYPE_CHECKING:
    from exam.store import Run
from exam.reports import answer_cache, baseline, changes, kept, reply_view
from exam.reports import compare as cmp
from exam.reports import overview as ov
from exam.reports.regrade import outcome, regrade
from exam.reports.selection import excluded_runs, excluded_words, never_started
from exam.share import ShareError, grant, link_to_revoke, make_link, read_token, revoked, scorecard_page, when
from exam.web.context import registry, store, store_time

bp = Blueprint("dashboard", __name__)
# the body templates a report kind keeps in code (ReportKind.templates), beside the package's
bp.jinja_loader = FunctionLoader(lambda name: kinds.templates().get(name))
OPEN = {"dashboard.login", "dashboard.static", "dashboard.share"}
RUNS_SHOWN = 200  # the newest runs the runs page lists; it says so when there are more
REPLY_GROUPS_SHOWN = 10  # different replies per version on the question page, a page at a time
OTHERS_SHOWN = 50  # the same reply's other cells listed under it (the rest counted)
REFRESH_S = 10  # a page showing a run not done yet reloads itself this often (_refresh.html)
MESSAGE_CHARS = 300  # the longest message a form leaves for the next page
# the only state-changing routes a viewer may use: to sign in and out
VIEWER_POSTS = {"dashboard.login", "dashboard.logout"}

for _name, _fn in FILTERS.items():
    bp.add_app_template_filter(_fn, _name)


bp.add_app_template_filter(shown_error, "run_error")


@bp.app_template_filter("when")
def _when(epoch: float | None) -> str:
    return "—" if epoch is None else when(epoch)


@bp.app_context_processor
def helpers():
    def href(endpoint: str, **values):
        return url_for(f"dashboard.{endpoint}", **values)

    role = ("admin" if is_admin() else "viewer" if is_viewer() else
            "shared" if session_ok() else None)
    # the menu's link to each report page made from the registry (made when the app was)
    pages = [k for k in kinds.pages()
             if f"dashboard.report_{k.name}" in current_app.view_functions]
    return {"href": href, "role": role, "admin": role == "admin", "report_pages": pages,
            **_globals()}


@bp.before_request
def require_login():
    if request.endpoint in OPEN:
        return None
    if not is_viewer() and request.endpoint != "dashboard.logout":  # logging out: always
        access = shared_access()
        if not _reads(access.pages()):
            if _reads(access.pages(revoked=True)):
                return revoked_page()
            if not access.live:
                return redirect(url_for("dashboard.login", next=request.full_path.rstrip("?")))
            return error_page(403, "Not shared", "A share link opens the page it names (a "
                              "scorecard: and the replies it links to), nothing else: log in "
                              "with a token for the rest of the dashboard.")
    if request.method not in ("GET", "HEAD") and request.endpoint not in VIEWER_POSTS \
            and not is_admin():
        return render_template("error.html", message="Read-only access: this needs the admin "
                               "token (EXAM_API_TOKEN)."), 403
    return None


def _reads(pages: set[str]) -> bool:
    """This request reads one of these pages (a browser's share links opened them): the page
    itself, or a reply of a shared scorecard's agent and version."""

    if not pages or request.method not in ("GET", "HEAD"):
        return False
    if request.path in pages:
        return True
    if request.endpoint == "dashboard.reply":
        try:
            run = store().get_run(request.view_args["run_id"])
        except NoSuchRun:  # refused like any other page: no telling which runs exist
            return False
        return scorecard_page(run.agent, run.version) in pages
    return False


@bp.route("/login", methods=["GET", "POST"])
def login():
    error = None
    if request.method == "POST":
        token = request.form.get("token", "")
        if token_ok(token) or viewer_token_ok(token):
            open_session("admin" if token_ok(token) else "viewer")
            return redirect(local_path(request.args.get("next")) or url_for("dashboard.overview"))
        error = "wrong token"
    return render_template("login.html", error=error), 401 if error else 200


@bp.get("/share/<token>")
def share(token: str):
    """A signed, expiring share link: its page (and a scorecard's replies) may be read in
    this browser until it expires or is revoked; then the page."""

    try:  # expired by the store's clock, as it was signed (exam.web.context.store_time)
        link = read_token(current_app.config["SECRET_KEY"], token, store_time())
    except ShareError as exc:
        return render_template("error.html", message=str(exc)), 403
    if revoked(link, store().share_revocations([link.id], [link.page])):
        return revoked_page()
    target = local_path(link.path)
    if target is None:  # a signed path that is not this site's: nothing to open
        return redirect(url_for("dashboard.overview"))
    if not is_viewer():
        session["shared"] = grant(session.get("shared"), link, store_time())
    return redirect(target)


def revoked_page():
    """What a revoked share link (or a page it opened) shows: why, and who can help. The
    reason an admin gave is for the team, not for whoever holds the link."""
    return render_template("error.html", heading="Link revoked", no_menu=not is_viewer(),
                           message="This share link was revoked by the team that sent it: "
                                   "ask them for a new one (or log in with a token)."), 403


@bp.post("/revoke-share")
def revoke_share():
    """Admins revoke a share link someone pasted, or every link to a page made until now:
    refused from the next request on every instance, by browsers that opened it too."""

    back = local_path(request.form.get("back")) or url_for("dashboard.overview")
    reason = request.form.get("reason", "").strip()[:500]
    page = request.form.get("page")
    if page is not None:
        target = local_path(page)
        if target is None:
            message = "page: expected a path of this dashboard, such as /scorecard/W1/v2"
        else:  # the page as Flask saw it (the form sends request.path): decoded already
            target = urlsplit(target).path
            store().revoke_share_page(target, store_time(), reason)
            message = (f"every share link to {target} made until now is revoked, on every "
                       f"instance (links made from now on work)")
    else:
        try:
            link = link_to_revoke(current_app.config["SECRET_KEY"], request.form.get("link", ""),
                                  store_time())
        except ShareError as exc:
            message = f"link: {exc}"
        else:
            done, new = store().revoke_share_link(link.id, link.page, link.until, reason)
            message = (f"the share link to {link.page} is revoked, on every instance (it would "
                       f"have worked until {when(link.until)})" if new else
                       f"the share link to {link.page} was already revoked on "
                       f"{when(done.revoked_at)}")
    _say(message)
    return redirect(back)


def error_page(status: int, heading: str, message: str):
    """A page for an error of the dashboard: the status, a heading, one line saying why."""
    return render_template("error.html", heading=heading, message=message), status


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
    close_session()
    return redirect(url_for("dashboard.login"))


def _versions() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in sorted(store().list_runs(), key=lambda r: r.id):
        versions = out.setdefault(r.agent, [])
        if r.version not in versions:
            versions.append(r.version)
    return out


@bp.get("/")
def overview():
    """Per agent, across versions: pass rate, the verdict of each change, cost, coverage."""
    agent = request.args.get("agent") or None
    report = kinds.build("overview", store(), SERVICE, agent=agent)
    return render_template("overview.html", report=report, excluded=_excluded_versions(agent),
                           charts=kinds.charts("overview", report), agent=agent,
                           agents=sorted(_versions()), missing_banks=report["missing_banks"])


def _excluded_versions(agent: str | None) -> dict[str, list[tuple[str, str]]]:
    """agent → (version, what excluded it) for the versions every run of which is excluded:
    the overview says they are missing, and why, rather than leaving them out unsaid."""

    by: dict[tuple[str, str], list] = {}
    counted: set[tuple[str, str]] = set()
    for r in sorted(store().list_runs(agent), key=lambda r: r.id):
        if never_started(r):
            continue
        if r.excluded_reason:
            by.setdefault((r.agent, r.version), []).append(r)
        else:
            counted.add((r.agent, r.version))
    out: dict[str, list[tuple[str, str]]] = {}
    for (a, v), gone in by.items():
        if (a, v) not in counted:
            out.setdefault(a, []).append((v, excluded_words(gone)))
    return out


@bp.get("/runs")
def runs():
    agent = request.args.get("agent") or None
    version = request.args.get("version") or None
    listed = store().list_runs(agent, version, limit=RUNS_SHOWN + 1)
    more, listed = len(listed) > RUNS_SHOWN, listed[:RUNS_SHOWN]
    asked = kinds.ask("overview", store(), SERVICE, agent=agent)
    tallied = asked.inputs.tallies()  # each run's own figures, beside its version's verdict
    rows = ov.run_rows(tallied, listed, asked.report())
    counts = store().status_counts_of([row["run"].id for row in rows])
    for row in rows:
        row["done"] = sum(counts[row["run"].id].values())
        row["outcome"] = outcome(store(), row["run"], counts[row["run"].id])
    rows = _settle_grouped(rows, store().settle_rounds_of([row["run"].id for row in rows]))
    following = _following(listed, counts)
    versions = _versions()
    choices = versions.get(agent, []) if agent else sorted({v for vs in versions.values()
                                                            for v in vs})
    return render_template("runs.html", rows=rows, versions=versions, agent=agent,
                           version_choices=choices,
                           version=version, more=more, shown=RUNS_SHOWN,
                           agents=_agent_names() if is_admin() else [],
                           max_repeats=current_app.config["MAX_REPEATS"],
                           missing_banks=tallied.missing_banks, **following)


def _following(runs: list[Run], counts: dict[int, dict[str, int]] | None = None) -> dict:
    """What a page showing ``runs`` needs to reload itself until the runs not done yet
    (queued, running) are done, or to say how to follow them (``?refresh=0`` stops it)."""
    going = [r for r in runs if r.shown_status in RunState.LIVE
             and not r.excluded_reason]
    if counts is None:
        counts = store().status_counts_of([r.id for r in going]) if going else {}
    args = {k: v for k, v in request.args.items() if k != "refresh"}
    here = {**(request.view_args or {}), **args}
    return {"unfinished": [{"id": r.id, "outcome": r.shown_status, "total": r.total_cells,
                            "stored": sum(counts.get(r.id, {}).values())} for r in going],
            "refresh": request.args.get("refresh") != "0", "refresh_s": REFRESH_S,
            "stop_url": url_for(request.endpoint, **here, refresh="0"),
            "reload_url": url_for(request.endpoint, **here)}


def _settle_grouped(rows: list[dict], rounds: dict[int, tuple[str, str]]) -> list[dict]:
    """The rounds `exam compare OLD NEW --settle` made, one row per comparison (at its newest
    round): runs of a few re-asked questions, each alone would read as a version's "0%"."""
    shown: list[dict] = []
    groups: dict[tuple[str, str, str], dict] = {}
    for row in rows:
        made_for = rounds.get(row["run"].id)
        if made_for is None:
            shown.append(row)
            continue
        key = (row["run"].agent, *made_for)
        if key in groups:
            groups[key]["rounds"].append(row)
            continue
        groups[key] = {**row, "settle": {"old": made_for[0], "new": made_for[1]},
                       "rounds": [row]}
        shown.append(groups[key])
    return shown


def _say(message: str) -> None:
    """What a form did, shown once on the page it leads to. Kept in the session (flash), never
    in the URL: a link of someone else's would put their words on the page (``?message=``);
    cut short, since a session cookie over 4 KB is dropped by the browser."""
    flash(message if len(message) <= MESSAGE_CHARS else message[:MESSAGE_CHARS - 1] + "…")


def _agent_names() -> list[str]:
    try:
        return sorted(registry().agents)
    except ExamError:
        return []


@bp.post("/runs")
def start_run():
    """Admins queue a run from the dashboard: the same queue as POST /api/runs."""
    from exam.pipeline.runner import queue_run

    name = request.form.get("agent", "")
    version = request.form.get("version", "").strip()
    limit = current_app.config["MAX_REPEATS"]
    raw = request.form.get("repeats", "1").strip()
    if not version:  # the label's own rule (exam.names) is checked where the run is created
        message = "version: expected a non-empty label"
    elif not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= limit:
        message = f"repeats: expected a whole number from 1 to {limit}"
    else:
        try:
            reg = registry()
            if name not in reg.agents:
                message = f"no agent named {name!r} in the registry"
            else:
                run_id = queue_run(store(), reg.get(name), version, repeats=int(raw),
                                   source="dashboard")
                message = f"run {run_id} queued: {name} {version} × {raw}"
        except StoreError:  # the service's trouble: a 503 page, never "queued" nor a line
            raise
        except ExamError as exc:
            message = str(exc)
    _say(message)
    return redirect(url_for("dashboard.runs"))


@bp.post("/agents/<agent>/ship")
def ship(agent: str):
    """Admins record that a version shipped (the same as `exam ship` and the API's): the
    baseline of the agent's next change from now on."""

    version = request.form.get("version", "").strip()
    reason = request.form.get("reason", "").strip()
    who = request.form.get("by", "").strip() or session.get("reviewer") or "dashboard"
    try:
        baseline.record_ship(store(), agent, version, who, reason, "dashboard")
        message = f"{agent} {version} shipped: the baseline of its next change"
    except StoreError:  # the service's trouble: a 503 page
        raise
    except ExamError as exc:
        message = str(exc)
    _say(message)
    return redirect(url_for("dashboard.overview") + f"#agent-{agent}")


@bp.post("/runs/<int:run_id>/exclude")
def exclude_run(run_id: int):
    """Admins leave a run out of every report (or put it back): the same as the API's."""
    include = request.form.get("include") == "1"
    reason = request.form.get("reason", "").strip()
    try:
        store().get_run(run_id)
    except NoSuchRun:
        abort(404)
    if include:
        store().set_excluded(run_id, None)
        message = f"run {run_id} is back in the reports"
    elif not reason:
        message = "reason: say why the run is excluded (it is shown with the run)"
    else:
        store().set_excluded(run_id, reason[:500])
        message = f"run {run_id} excluded from every report (the reason is shown with it)"
    _say(message)
    return redirect(url_for("dashboard.runs"))


def _kept_report(asked: kinds.Asked) -> dict:
    """The report asked for, kept per process while none of its inputs change and made once
    for every view asking at the same time (exam.reports.answer_cache, as the API's answers): ten
    views of a cold scorecard built it ten times. Kept as JSON text in the order it was
    built (the API's answer sorts its keys: a page shows them as made)."""
    import json

    return json.loads(answer_cache.page_answer(asked))


@bp.get("/scorecard/<agent>/<version>")
def scorecard(agent: str, version: str):
    # a run's link on the runs page opens its version: an excluded run is said to be
    # excluded there, with its reason and how to count it again, never a 404
    gone = excluded_runs(store(), agent, version)
    try:
        asked = kinds.ask("scorecard", store(), SERVICE, agent=agent, version=version)
    except SelectionError:
        if not gone:
            abort(404)
        asked = None
    runs = list(asked.runs) if asked else []
    report = _kept_report(asked) if asked else {"scorecards": [], "missing_banks": []}
    link, revocations = None, []
    days = current_app.config["SHARE_LINK_DAYS"]
    if is_admin():
        base = current_app.config.get("PUBLIC_URL") or request.host_url
        # signed by the store's clock, as every instance judges it
        link = make_link(current_app.config["SECRET_KEY"], base, request.path, days,
                         store_time())
        revocations = [r for r in store().all_share_revocations(request.path)
                       if r.link is None or (r.until or 0) >= store_time()]
    return render_template("scorecard.html", report=report,
                           charts=kinds.charts("scorecard", report), agent=agent,
                           version=version, missing_banks=report["missing_banks"],
                           share_link=link, share_days=days, revocations=revocations,
                           excluded=gone, excluded_said=excluded_words(gone) if gone else "",
                           version_verdict=_version_verdict(agent, version) if runs else None,
                           **_following(runs))


def _version_verdict(agent: str, version: str) -> dict:
    """The version's verdict as the compare page gives it by default (against the last
    version shipped before it), for the scorecard page: the same report, kept once for both
    (the same key in exam.reports.answer_cache). ``{"error": why}`` when there is none to
    give."""

    return changes.version_verdict(lambda: _kept_report(kinds.ask(
        "compare", store(), SERVICE, agent=agent, old=None, new=version)))


@bp.get("/reply/<int:run_id>/<path:case_no>/<int:repeat>")  # a bank may write W2/07
def reply(run_id: int, case_no: str, repeat: int):
    """One cell: the reply with its deciding words marked, checks, attempts, cost."""
    run, view = _cell_view(run_id, case_no, repeat)
    return render_template("reply.html", v=view, missing_banks=view["missing_banks"],
                           change=_changes_of(run.agent).get(run.version))


def _changes_of(agent: str) -> dict[str, dict]:
    """Each counted version's change as the overview says it (its verdict against the last
    version shipped before it, its critical failures): the pages that show a version say it
    too. Read from the overview's kept answer; none for a version with no counted run."""
    try:
        report = _kept_report(kinds.ask("overview", store(), SERVICE, agent=agent))
    except StoreError:
        raise
    except ExamError:  # nothing counted for the agent
        return {}
    return {v["version"]: v["change"] for a in report["agents"] for v in a["versions"]}


def _cell_view(run_id: int, case_no: str, repeat: int) -> tuple[Run, dict]:
    """A stored cell's run and the reply viewer's view of it, or a 404 (no such run, question
    or repeat)."""

    try:
        run = store().get_run(run_id)
    except NoSuchRun:
        abort(404)
    view = reply_view.cell(store(), run, case_no, repeat)
    if view is None:
        abort(404)
    return run, view


@bp.post("/reply/<int:run_id>/<path:case_no>/<int:repeat>/capture")
def capture_reply(run_id: int, case_no: str, repeat: int):
    """Admins make a reply a question: a draft in the agent's bank, its work order this
    question's, this reply its counterexample, its expectations TODOs (exam.pipeline.capture)."""
    import json

    from exam.pipeline import capture as cap

    run, view = _cell_view(run_id, case_no, repeat)
    body = next((a["body"] for a in reversed(view["attempts"]) if a["body"]), None)
    if view["work_order"] is None:
        message = f"{case_no} is not in today's bank: its work order is not known"
    elif body is None:
        message = "this cell holds no reply to make a question of"
    else:
        try:
            reply = json.loads(body)
        except ValueError:
            reply = body.strip()
        try:
            agent = registry().get(run.agent)
            draft = cap.capture(agent, cap.recorded(
                view["work_order"], reply,
                f"run {run.id} ({run.agent} {run.version}), {case_no} #{repeat}, "
                f"on the dashboard"))
            redacted = ", ".join(draft.redacted) or "nothing"
            message = (f"{draft.case_no} drafted in {draft.bank} (redacted: {redacted}): write "
                       f"its TODOs, exam bank check names them; exam run refuses it until then")
        except StoreError:
            raise
        except ExamError as exc:
            message = str(exc)
    _say(message)
    return redirect(url_for("dashboard.reply", run_id=run_id, case_no=case_no, repeat=repeat))


@bp.get("/question/<agent>/<path:case_no>")
def question(agent: str, case_no: str):
    """Every reply to one question; with old= and new=, the two versions side by side."""

    versions = tuple(v for v in (request.args.get("old"), request.args.get("new")) if v)
    raw = request.args.get("start", "0")
    start = int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 9 else 0
    # a year of varied replies: each version's most common ones, the rest a page at a time;
    # made once and kept while nothing it is made of changes (exam.reports.answer_cache)
    runs = [r for r in select_runs(store(), agent) if not versions or r.version in versions]
    view = json.loads(answer_cache.answer(
        store(), runs, lambda: answer_cache.page_text(reply_view.question_page(
            store(), agent, case_no, versions, start, REPLY_GROUPS_SHOWN, OTHERS_SHOWN)),
        "question", agent, case_no, versions, start, REPLY_GROUPS_SHOWN, OTHERS_SHOWN,
        # in the store: a question's first page, of every version or one (the links a page
        # gives); two versions side by side and later pages, by this process alone
        in_store=start == 0 and len(versions) <= 1))
    if not any(col["replies"] for col in view["columns"]):
        abort(404)
    for col in view["columns"]:
        for g in col["shown"]:
            g["cell"]["marked"] = Markup(g["cell"]["marked"])  # escaped when it was marked
    return render_template("question.html", q=view, missing_banks=view["missing_banks"],
                           start=start, shown=REPLY_GROUPS_SHOWN,
                           changes=_changes_of(agent))


@bp.get("/compare")
def compare():
    """A change's verdict; by default the agent's latest version against the last version
    shipped before it (exam/reports/baseline.py), and the page says which."""

    versions = _versions()
    agent = request.args.get("agent") or next(iter(versions), None)
    counted = latest_pair(store(), agent)
    old = request.args.get("old") or None
    new = request.args.get("new") or counted[1]
    report, error, status = None, None, 200
    if agent:
        try:
            if new and (old or counted[0] or request.args.get("new")):
                report = _kept_report(kinds.ask("compare", store(), SERVICE, agent=agent,
                                                old=old, new=new))
                old = report["old"]
            else:
                report_runs(store(), agent)  # an agent with no counted run: the one message
        except StoreError:  # the service's trouble: a 503 page (exam.web.app), not a line here
            raise
        except cmp.CompareError as exc:  # asked wrongly (a version against itself): the API's 400
            error, status = str(exc), 400
        except ExamError as exc:  # the same 404 as GET /api/compare, with the form kept
            error, status = str(exc), 404
    return render_template("compare.html", report=report, error=error, versions=versions,
                           charts=kinds.charts("compare", report),
                           agent=agent, old=old, new=new,
                           missing_banks=report["missing_banks"] if report else []), status


@bp.get("/discrimination")
def discrimination():
    agent = request.args.get("agent") or None
    report, error, status = None, None, 200
    try:
        report = _kept_report(kinds.ask("discrimination", store(), SERVICE, agent=agent))
    except SelectionError as exc:  # an agent with no run: 404 as the API; none at all: "No runs yet."
        error, status = (str(exc), 404) if agent else (None, 200)
    return render_template("discrimination.html", report=report, agent=agent, error=error,
                           charts=kinds.charts("discrimination", report),
                           agents=sorted(_versions()),
                           missing_banks=report["missing_banks"] if report else []), status


@bp.record
def _report_pages(state) -> None:
    """A page for every report the registry gives one (``ReportKind.page``), made when the
    app is: a report module registered by then has its page and menu link with no change
    here. The scorecard, compare and discrimination pages above are their own."""
    for kind in kinds.pages():
        state.add_url_rule(kind.page_path, f"report_{kind.name}", report_page,
                           defaults={"name": kind.name}, methods=["GET"])


def report_page(name: str):
    """A registered report: a form of its arguments, its body template and charts."""
    kind = kinds.get(name)
    report, error, status = None, None, 200
    try:
        args = kinds.parse(kind, request.args.getlist)
        report = _kept_report(kinds.ask(name, store(), SERVICE, **args))
    except kinds.ArgError as exc:  # a first visit gives nothing yet: the form alone
        error, status = (str(exc), 400) if request.args else (None, 200)
    except NoSuchRun as exc:
        error, status = str(exc), 404
    except StoreError:  # the service's trouble: a 503 page (exam.app)
        raise
    except ExamError as exc:  # asked wrongly: the API's 400; not stored: its 404
        wrong = kind.refusal is not None and isinstance(exc, kind.refusal[0])
        error, status = str(exc), 400 if wrong else 404
    title = kind.html_title(report) if report and kind.html_title else kind.title
    return render_template("report_page.html", kind=kind, report=report, error=error,
                           title=title, charts=kinds.charts(name, report),
                           shown={p.name: request.args.get(p.name, "") for p in kind.params},
                           missing_banks=report["missing_banks"] if report else []), status


def _queue(agent: str | None, blind: bool):
    """(the review queue, runs left out for a missing bank)."""
    import random

    from exam import review

    runs = select_runs(store(), agent)
    if not runs:
        return [], []
    # the queue is needs_human replies, whose texts are kept with their grades: no other
    # reply's text is read (a year of history: 100,000 texts read and digested for nothing),
    # and of a kept run only the questions whose head counts a needs_human cell are decoded
    regraded = regrade(store(), runs, texts=False, open_only=True)
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
                           missing_banks=missing)


@bp.post("/review")
def review_decide():
    from exam import review

    agent = request.form.get("agent") or None
    blind = request.form.get("blind") == "1"
    key = request.form.get("key", "")
    reviewer = request.form.get("reviewer", "").strip()
    if len(reviewer) <= review.REVIEWER_MAX_CHARS:  # a longer one is refused below; kept, it
        session["reviewer"] = reviewer  # could push the session cookie past what browsers keep
    item = next((i for i in _queue(agent, blind)[0] if i.key == key), None)
    if item is None:
        message = "that item is no longer in the queue"
    else:
        try:
            review.decide(store(), item, request.form.get("decision", ""), reviewer,
                          request.form.get("reason", ""))
            message = f"{item.case_no}: {request.form.get('decision')} stored"
            target = str(current_app.config["DB"])
            if target != ":memory:":  # another connection would be another empty database
                kept.keep_later(target, item.agent)  # the agent's pages, kept again behind
        except StoreError:  # the service's trouble: a 503 page, not a line saying why not
            raise
        except ExamError as exc:
            message = str(exc)
    _say(message)
    return redirect(url_for("dashboard.review_page", agent=agent or "",
                            blind="1" if blind else ""))
