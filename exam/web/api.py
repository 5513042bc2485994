"""The JSON API: queue runs for registered agents, read their status and the reports.

Every route requires ``Authorization: Bearer <EXAM_API_TOKEN>``; the read-only routes (GET)
also accept ``EXAM_VIEWER_TOKEN``. The API never sends
to a URL a caller supplies: a run names an agent of the registry, nothing else.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from flask import Blueprint, abort, current_app, jsonify, request

from exam import names
from exam.errors import ExamError, NoSuchRun, StoreError
from exam.notify import names as channels
from exam.records import RunState
from exam.reports import answer_cache, baseline, changes, kinds
from exam.reports.inputs import SERVICE, Inputs
from exam.reports.regrade import outcome
from exam.reports.selection import SelectionError, report_runs, watch_of
from exam.web.auth import STORE_AWAY, bearer_ok, shown_error, viewer_bearer_ok
from exam.web.context import registry, store
from exam.web.openapi import spec

bp = Blueprint("api", __name__, url_prefix="/api")
RUN_KEYS = {"agent", "version", "repeats", "only"}
log = logging.getLogger("exam.api")


class BadRequest(Exception):
    def __init__(self, field: str | None, message: str):
        self.field, self.message = field, message


@bp.errorhandler(BadRequest)
def bad_request(err: BadRequest):
    body = {"error": err.message}
    if err.field:
        body["field"] = err.field
    return jsonify(body), 400


@bp.errorhandler(ExamError)
def exam_error(err: ExamError):
    if isinstance(err, StoreError):  # the service's trouble, not the caller's
        log.error("store: %s", err)
        # a viewer's token (perhaps handed around) is not told where the store lives
        return jsonify(error=str(err) if bearer_ok() else STORE_AWAY), 503
    return jsonify(error=str(err)), 400


@bp.before_request
def authenticate():
    if bearer_ok():
        return None
    if viewer_bearer_ok():  # the viewer token reads; it never queues a run
        if request.method in ("GET", "HEAD"):
            return None
        return jsonify(error="the viewer token is read-only: queueing a run needs the admin "
                             "token"), 403
    return jsonify(error="missing or wrong bearer token"), 401, {
        "WWW-Authenticate": 'Bearer realm="agent-exam"'}


def run_json(run, counts: dict[str, int] | None = None,
             rounds: dict[int, tuple[str, str]] | None = None) -> dict[str, Any]:
    """``counts``: the run's ``status_counts``, ``rounds``: the settle rounds among the runs
    (``settle_rounds_of``), when read with other runs' in one query."""

    if counts is None:
        counts = store().status_counts(run.id)
    if rounds is None:
        rounds = store().settle_rounds_of([run.id])
    made_for = rounds.get(run.id)
    done = sum(counts.values())  # every stored cell has a run status
    return {
        "run_id": run.id, "agent": run.agent, "version": run.version, "status": run.shown_status,
        # complete unless cells did not arrive (blocked / incomplete) or the run is excluded
        "outcome": (lambda o: "complete" if o == RunState.DONE else o)(outcome(store(), run, counts)),
        "run_status": counts, "excluded_reason": run.excluded_reason,
        "repeats": run.repeats, "questions": len(run.plan), "source": run.source,
        "progress": {"done": done, "total": run.total_cells},
        "bank_digest": run.bank_digest, "created_at": run.created_at,
        "started_at": run.started_at, "finished_at": run.finished_at,
        "error": shown_error(run.error),
        "owner": run.owner,  # the process that holds (or last held) it: host id:pid
        # a round `exam compare OLD NEW --settle` made: a run of NEW, counted in its verdict
        "settle_of": {"old": made_for[0], "new": made_for[1]} if made_for else None,
        # a round of `exam watch`: a run of the shipped version, never counted as its own
        "watch_of": watch_of(run),
    }


def _get_run(run_id: int):
    try:
        return store().get_run(run_id)
    except NoSuchRun:  # any other StoreError is a 503 (a store migrated underneath, say)
        abort(404)


def _json_object(keys: set[str], shape: str) -> dict:
    """The request's body as a JSON object with only ``keys``, or a 400 naming what is wrong
    (a body nested too deep is a 400 already: exam.web.bodies)."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise BadRequest(None, f"expected a JSON object: {shape}")
    unknown = sorted(set(body) - keys)
    if unknown:
        raise BadRequest(unknown[0], f"unknown field {unknown[0]!r} (fields: "
                                     f"{', '.join(sorted(keys))})")
    return body


@bp.post("/runs")
def create_run():
    from exam.pipeline.runner import queue_run

    body = _json_object(RUN_KEYS, '{"agent", "version", "repeats"?, "only"?}')
    agent_name = body.get("agent")
    if not isinstance(agent_name, str) or not agent_name:
        raise BadRequest("agent", "expected the name of an agent in the registry")
    version = body.get("version")
    if not isinstance(version, str) or not version.strip():
        raise BadRequest("version", "expected a non-empty label")
    if names.problem(version):  # the one rule for labels, length included
        raise BadRequest("version", f"{names.problem(version)}: use {names.RULE}")
    repeats = body.get("repeats", 1)
    limit = current_app.config["MAX_REPEATS"]
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= limit:
        raise BadRequest("repeats", f"expected a whole number from 1 to {limit}")
    only = body.get("only", [])
    if not isinstance(only, list) or not all(isinstance(c, str) for c in only):
        raise BadRequest("only", "expected a list of case_no strings")
    reg = registry()
    if agent_name not in reg.agents:
        raise BadRequest("agent", f"no agent named {agent_name!r} in the registry "
                                  f"(agents: {', '.join(sorted(reg.agents))})")
    try:
        run_id = queue_run(store(), reg.get(agent_name), version, repeats=repeats, only=only,
                           source="api")
    except StoreError:  # the service's trouble: a 503, which a client may retry
        raise
    except ExamError as exc:
        raise BadRequest("only" if only else None, str(exc)) from None
    return jsonify(run_id=run_id, status=RunState.QUEUED), 202, {"Location": f"/api/runs/{run_id}"}


@bp.get("/runs")
def list_runs():
    agent = request.args.get("agent") or None
    raw = request.args.get("limit", "100")
    # ASCII digits only: "²".isdigit() is true, and int() of 5,000 digits raises
    if not re.fullmatch(r"[0-9]{1,4}", raw) or not 1 <= int(raw) <= 1000:
        raise BadRequest("limit", f"limit: expected a whole number from 1 to 1000, "
                                  f"found {raw[:20]!r}")
    limit = int(raw)
    listed = store().list_runs(agent, limit=limit)
    counts = store().status_counts_of([r.id for r in listed])
    rounds = store().settle_rounds_of([r.id for r in listed])
    return jsonify(runs=[run_json(r, counts[r.id], rounds) for r in listed])


@bp.get("/runs/<int:run_id>")
def get_run(run_id: int):
    return jsonify(run_json(_get_run(run_id)))


@bp.post("/runs/<int:run_id>/exclude")
def exclude_run(run_id: int):
    """Leave a run out of every report (the API token is the admin's)."""
    _get_run(run_id)
    body = request.get_json(silent=True)
    reason = body.get("reason") if isinstance(body, dict) else None
    if not isinstance(reason, str) or not reason.strip():
        raise BadRequest("reason", "expected {\"reason\": \"why the run is excluded\"}")
    store().set_excluded(run_id, reason.strip()[:500])
    return jsonify(run_json(_get_run(run_id)))


@bp.post("/runs/<int:run_id>/include")
def include_run(run_id: int):
    _get_run(run_id)
    store().set_excluded(run_id, None)
    return jsonify(run_json(_get_run(run_id)))


@bp.record
def _report_routes(state) -> None:
    """A route for every report the registry serves on the API (``ReportKind.api``), made
    when the app is: a report module registered by then is served with no change here."""
    for kind in kinds.served():
        state.add_url_rule(kind.api_path, f"report_{kind.name}", report,
                           defaults={"name": kind.name}, methods=["GET"])


def report(name: str, **path: Any):
    """Any registered report as JSON: its arguments from the path and the query, built
    through the registry (the service's grade source) and kept while its inputs hold."""
    kind = kinds.get(name)
    try:
        args = {**kind.api_args, **kinds.parse(kind, request.args.getlist, path)}
    except kinds.ArgError as exc:
        raise BadRequest(exc.field, str(exc)) from None
    try:
        asked = kinds.ask(name, store(), SERVICE, **args)
        return _kept_json(asked)
    except NoSuchRun:  # a run asked for by id: not there (any other StoreError is a 503)
        abort(404)
    except StoreError:
        raise
    except ExamError as exc:
        if kind.refusal and isinstance(exc, kind.refusal[0]):  # asked wrongly: not missing
            raise BadRequest(kind.refusal[1], str(exc)) from None
        return jsonify(error=str(exc)), 404


def _kept_json(asked):
    """The report as ``jsonify`` writes it; kept per process while none of its inputs change
    (exam.reports.answer_cache), so asking again does not build it again."""

    return current_app.response_class(answer_cache.api_answer(asked),
                                      mimetype=current_app.json.mimetype)


def _shipped_json(agent: str, status: int = 200):
    try:
        runs = report_runs(store(), agent)
    except SelectionError as exc:
        return jsonify(error=str(exc)), 404
    records = store().ship_records(agent)
    # the agent's walk as the overview keeps it: read under its key, made only when not kept
    inputs = Inputs(store(), runs, SERVICE)
    _, shipped = changes.walked(inputs.tallies(), agent, records, inputs.cells)
    return jsonify(agent=agent, shipped=shipped,
                   decisions=[r.as_dict() for r in records]), status


@bp.get("/agents/<agent>/shipped")
def shipped(agent: str):
    return _shipped_json(agent)


@bp.post("/agents/<agent>/ship")
def ship(agent: str):
    """Record a decision by hand that a version shipped (the API token is the admin's)."""

    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise BadRequest(None, "expected a JSON object: {\"version\", \"reason\"?, \"by\"?}")
    unknown = sorted(set(body) - {"version", "reason", "by"})
    if unknown:
        raise BadRequest(unknown[0], f"unknown field {unknown[0]!r} (fields: version, reason, by)")
    version, reason, by = body.get("version"), body.get("reason", ""), body.get("by", "api")
    if not isinstance(version, str) or not version.strip():
        raise BadRequest("version", "expected the version label that shipped")
    for name, value in (("reason", reason), ("by", by)):
        if not isinstance(value, str):
            raise BadRequest(name, f"{name}: expected text")
    try:
        baseline.record_ship(store(), agent, version.strip(), by, reason, "api")
    except StoreError:
        raise
    except SelectionError as exc:
        return jsonify(error=str(exc), field="version"), 404
    except ExamError as exc:
        field = ("reason" if str(exc).startswith("reason") else
                 "version" if str(exc).startswith("version") else None)
        raise BadRequest(field, str(exc)) from None
    return _shipped_json(agent, 201)


CAPTURE_KEYS = {"agent", "execution", "work_order", "reply", "origin", "dry_run"}


@bp.post("/capture")
def capture():
    """A draft question from a production failure: an n8n execution of the agent's, or a work
    order and the reply it got (exam.pipeline.capture; the same as `exam capture`)."""
    from exam.pipeline import capture as cap

    body = _json_object(CAPTURE_KEYS,
                        '{"agent", "execution"} or {"agent", "work_order", "reply"}')
    reg = registry()
    agent_name = body.get("agent")
    if not isinstance(agent_name, str) or agent_name not in reg.agents:
        raise BadRequest("agent", f"expected the name of an agent in the registry "
                                  f"(agents: {', '.join(sorted(reg.agents))})")
    agent = reg.get(agent_name)
    origin = body.get("origin", "")
    if not isinstance(origin, str) or len(origin) > 200:
        raise BadRequest("origin", "expected a short text (at most 200 characters)")
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise BadRequest("dry_run", "expected true or false")
    execution = body.get("execution")
    has_reply = "work_order" in body or "reply" in body
    try:
        if execution is not None and has_reply:
            raise BadRequest("execution", "give execution, or work_order and reply, not both")
        if execution is not None:
            if not isinstance(execution, str | int) or isinstance(execution, bool):
                raise BadRequest("execution", "expected an execution id or the n8n editor's "
                                              "URL of it")
            cfg = cap.n8n_of(agent)
            try:
                exec_id = cap.execution_ref(str(execution))
            except cap.CaptureError as exc:
                raise BadRequest("execution", str(exc)) from None
            captured = cap.from_execution(cap.fetch_execution(cfg, exec_id), agent.reply,
                                          cfg.safe_url)
        elif has_reply:
            if not isinstance(body.get("work_order"), dict):
                raise BadRequest("work_order", "expected the work order the agent was sent "
                                               "(a JSON object)")
            if body.get("reply") in (None, ""):
                raise BadRequest("reply", "expected the reply as it was (text or the agent's "
                                          "JSON body)")
            captured = cap.recorded(body["work_order"], body["reply"],
                                    f"a reply filed through the API{': ' if origin else ''}"
                                    f"{origin}")
        else:
            raise BadRequest(None, "give execution (an n8n execution id or URL), or "
                                   "work_order and reply")
        draft = cap.capture(agent, captured, write_it=not dry_run)
    except cap.N8nApiError as exc:  # n8n's trouble or its configuration, not the caller's
        return jsonify(error=str(exc)), 502
    return jsonify(case_no=draft.case_no, bank=draft.bank, written=not dry_run,
                   redacted=list(draft.redacted), question=draft.question), \
        200 if dry_run else 201


WATCH_KEYS = {"agent", "watch", "repeats", "budget", "max_repeats", "notify", "notify_on"}


@bp.post("/watch")
def watch():
    """Start a watch of an agent's shipped version (``{"agent", ...}``: its first round queued),
    or take one a step further (``{"watch": ID}``: the next round queued, or its verdict)."""
    import os

    from exam.decide import watch as w

    body = _json_object(WATCH_KEYS, '{"agent", "repeats"?, "budget"?, "max_repeats"?, '
                                    '"notify"?, "notify_on"?} or {"watch": ID}')
    if "watch" in body:
        watch_id = body["watch"]
        if len(body) > 1:
            raise BadRequest(sorted(set(body) - {"watch"})[0],
                             "a watch goes on as it started: give only {\"watch\": ID}")
        if isinstance(watch_id, bool) or not isinstance(watch_id, int):
            raise BadRequest("watch", "expected the watch_id its start answered")
        try:
            now = w.advance(store(), registry(), watch_id)
        except NoSuchRun:
            raise BadRequest("watch", f"no watch {watch_id}") from None
        except StoreError:
            raise
        except ExamError as exc:
            raise BadRequest("watch", str(exc)) from None
        out = {"watch_id": watch_id, "agent": now.plan.agent, "version": now.plan.version,
               "status": now.status, "run_ids": [r.id for r in now.rounds]}
        if now.status != "done":
            return jsonify(out), 202
        try:
            out["notified"] = [{"id": n["id"], "channel": n["channel"], "status": n["status"],
                                "outcome": n["outcome"]} for n in w.notify(store(), now,
                                                                             os.environ)]
        except StoreError:
            raise
        except ExamError as exc:  # the verdict stands; the channel's trouble is said
            out["notified"] = [{"channel": now.plan.notify, "status": "failed",
                                "outcome": str(exc)}]
        report = now.report
        return jsonify(**out, verdict=report["verdict"], exit_code=report["exit_code"],
                       drift=report["watch"]["drift"], decision=report["decision"],
                       baseline=report["baseline"], watch=report["watch"],
                       regressions=report["regressions"]), 200
    reg = registry()
    agent_name = body.get("agent")
    if not isinstance(agent_name, str) or agent_name not in reg.agents:
        raise BadRequest("agent", f"expected the name of an agent in the registry "
                                  f"(agents: {', '.join(sorted(reg.agents))})")
    limit = current_app.config["MAX_REPEATS"]
    options = {}
    for key, low, high in (("repeats", 1, limit), ("budget", 0, 100 * limit),
                           ("max_repeats", 2, 10 * limit)):
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise BadRequest(key, f"expected a whole number from {low} to {high}")
        options[key] = value
    notify = body.get("notify")
    if notify is not None and notify not in channels():
        raise BadRequest("notify", f"expected a notification channel ({', '.join(channels())})")
    notify_on = body.get("notify_on", "not_ship")
    if notify_on not in w.NOTIFY_ON:
        raise BadRequest("notify_on", f"expected one of {', '.join(w.NOTIFY_ON)}")
    if notify is not None:  # a channel without its settings: said before any call
        from exam import notify as notifications

        try:
            notifications.get(notify).settings(os.environ)
        except ExamError as exc:
            raise BadRequest("notify", str(exc)) from None
    try:
        watch_id = w.start(store(), reg, agent_name, notify=notify, notify_on=notify_on,
                           queue=True, **options)
    except StoreError:
        raise
    except ExamError as exc:  # nothing shipped, its runs unfinished, the agent moved
        raise BadRequest("agent", str(exc)) from None
    run = store().get_run(watch_id)
    return jsonify(watch_id=watch_id, agent=agent_name, version=run.version, status="running",
                   run_ids=[watch_id]), 202, {"Location": f"/api/runs/{watch_id}"}


@bp.get("/openapi.json")
def openapi():
    return jsonify(spec())


