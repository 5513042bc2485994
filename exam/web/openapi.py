"""The OpenAPI document for /api (a test keeps it equal to the routes the app serves); each
report's entry is made from the registry (exam/reports/kinds.py), as its route is."""

from __future__ import annotations

import re
from typing import Any

from exam.records import RunState
from exam.reports import kinds

ERROR = {"type": "object", "properties": {"error": {"type": "string"},
                                          "field": {"type": "string"}}}


def _resp(desc: str, schema: dict | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"description": desc}
    if schema:
        out["content"] = {"application/json": {"schema": schema}}
    return out


def _errors(*codes: int) -> dict[str, Any]:
    text = {400: "bad request (the field is named)", 401: "missing or wrong bearer token",
            404: "not found", 413: "request body too large"}
    return {str(c): _resp(text[c], ERROR) for c in codes}


WATCHING = {"type": "object", "properties": {
    "watch_id": {"type": "integer"}, "agent": {"type": "string"}, "version": {"type": "string"},
    "status": {"type": "string", "enum": ["running", "done"]},
    "run_ids": {"type": "array", "items": {"type": "integer"}},
    "verdict": {"type": "string", "enum": ["ship", "hold", "incomplete", "undecided",
                                           "pending"]},
    "exit_code": {"type": "integer"}, "drift": {"type": "array", "items": {"type": "string"}},
    "decision": {"type": "object"}, "baseline": {"type": "object"}, "watch": {"type": "object"},
    "regressions": {"type": "array"},
    "notified": {"type": "array", "items": {"type": "object"}}}}

RUN = {"type": "object", "properties": {
    "run_id": {"type": "integer"}, "agent": {"type": "string"}, "version": {"type": "string"},
    "status": {"type": "string",
               "enum": list(RunState.ALL)},
    "repeats": {"type": "integer"}, "questions": {"type": "integer"},
    "progress": {"type": "object", "properties": {"done": {"type": "integer"},
                                                  "total": {"type": "integer"}}},
    "outcome": {"type": "string",
                "enum": ["complete", "blocked", "incomplete", "excluded", "queued", "running",
                         "interrupted", "failed"]},
    "run_status": {"type": "object", "additionalProperties": {"type": "integer"}},
    "excluded_reason": {"type": ["string", "null"]},
    "settle_of": {"type": ["object", "null"], "properties": {
        "old": {"type": "string"}, "new": {"type": "string"}}},
    "watch_of": {"type": ["object", "null"], "properties": {
        "watch": {"type": "integer"}, "round": {"type": "integer"}}},
    "error": {"type": ["string", "null"]}}}


CAPTURED = {"type": "object", "properties": {
    "case_no": {"type": "string"}, "bank": {"type": "string"}, "written": {"type": "boolean"},
    "redacted": {"type": "array", "items": {"type": "string"},
                 "description": "what was redacted, by kind and place (never the value)"},
    "question": {"type": "object"}}}
DECISION = {"type": "object", "properties": {
    "id": {"type": "integer"}, "agent": {"type": "string"}, "version": {"type": "string"},
    "shipped_at": {"type": "number"}, "shipped_by": {"type": "string"},
    "reason": {"type": "string"}, "source": {"type": "string"}}}
SHIPPED = {"type": "object", "properties": {
    "agent": {"type": "string"},
    "shipped": {"type": ["object", "null"], "properties": {
        "version": {"type": "string"}, "how": {"type": "string",
                                               "enum": ["first", "verdict", "by_hand"]},
        "label": {"type": "string"}, "why": {"type": "string"}}},
    "decisions": {"type": "array", "items": DECISION}}}


def spec() -> dict[str, Any]:
    q = {"in": "query", "schema": {"type": "string"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "agent-exam", "version": "1",
                 "description": "Queue exams of registered agents and read the reports."},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": {
            "/api/runs": {
                "post": {
                    "summary": "Queue a run of a registered agent",
                    "requestBody": {"required": True, "content": {"application/json": {"schema": {
                        "type": "object", "required": ["agent", "version"],
                        "additionalProperties": False,
                        "properties": {"agent": {"type": "string"}, "version": {"type": "string"},
                                       "repeats": {"type": "integer", "minimum": 1},
                                       "only": {"type": "array", "items": {"type": "string"}}}}}}},
                    "responses": {"202": _resp("queued", {"type": "object", "properties": {
                        "run_id": {"type": "integer"}, "status": {"type": "string"}}}),
                        **_errors(400, 401, 413)},
                },
                "get": {"summary": "List runs, newest first",
                        "parameters": [{"name": "agent", **q},
                                       {"name": "limit", "in": "query",
                                        "schema": {"type": "integer"}}],
                        "responses": {"200": _resp("runs", {"type": "object", "properties": {
                            "runs": {"type": "array", "items": RUN}}}), **_errors(401)}},
            },
            "/api/runs/{run_id}": {"get": {
                "summary": "Status and progress of a run",
                "parameters": [{"name": "run_id", "in": "path", "required": True,
                                "schema": {"type": "integer"}}],
                "responses": {"200": _resp("the run", RUN), **_errors(401, 404)}}},
            "/api/runs/{run_id}/exclude": {"post": {
                "summary": "Leave a run out of every report (body: {\"reason\"}); it stays "
                           "listed with outcome 'excluded'",
                "parameters": [{"name": "run_id", "in": "path", "required": True,
                                "schema": {"type": "integer"}}],
                "responses": {"200": _resp("the run", RUN), **_errors(400, 401, 404)}}},
            "/api/runs/{run_id}/include": {"post": {
                "summary": "Put an excluded run back into the reports",
                "parameters": [{"name": "run_id", "in": "path", "required": True,
                                "schema": {"type": "integer"}}],
                "responses": {"200": _resp("the run", RUN), **_errors(401, 404)}}},
            "/api/agents/{agent}/shipped": {"get": {
                "summary": "The agent's shipped version (the baseline of its next change), "
                           "why it is that one, and every decision recorded by hand",
                "parameters": [{"name": "agent", "in": "path", "required": True,
                                "schema": {"type": "string"}}],
                "responses": {"200": _resp("shipped", SHIPPED), **_errors(401, 404)}}},
            "/api/agents/{agent}/ship": {"post": {
                "summary": "Record that a version shipped (a decision by hand; body: "
                           "{\"version\", \"reason\"?, \"by\"?}); it is the baseline from "
                           "now on",
                "parameters": [{"name": "agent", "in": "path", "required": True,
                                "schema": {"type": "string"}}],
                "responses": {"201": _resp("recorded", SHIPPED), **_errors(400, 401, 404)}}},
            "/api/capture": {"post": {
                "summary": "A draft question in the agent's bank from a production failure: an "
                           "n8n execution (id or the editor's URL), or a work order and the "
                           "reply it got; its expectations are TODOs that exam bank check "
                           "names and exam run refuses until written",
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["agent"], "additionalProperties": False,
                    "properties": {
                        "agent": {"type": "string"},
                        "execution": {"type": ["string", "integer"]},
                        "work_order": {"type": "object"},
                        "reply": {"type": ["string", "object", "array"]},
                        "origin": {"type": "string", "maxLength": 200},
                        "dry_run": {"type": "boolean"}}}}}},
                "responses": {
                    "201": _resp("the draft, written", CAPTURED),
                    "200": _resp("the draft, not written (dry_run)", CAPTURED),
                    "502": _resp("the n8n API could not be read", ERROR),
                    **_errors(400, 401, 413)}}},
            "/api/watch": {"post": {
                "summary": "Watch an agent's shipped version: {agent, ...} asks it again (its "
                           "first round queued, 202, watch_id); {watch: ID} takes the watch a "
                           "step further: the next round queued (202, status running) or its "
                           "verdict against the version's runs at ship time (200; a drift is "
                           "a hold naming the questions, pushed to notify once)",
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "additionalProperties": False,
                    "properties": {
                        "agent": {"type": "string"},
                        "watch": {"type": "integer"},
                        "repeats": {"type": "integer", "minimum": 1},
                        "budget": {"type": "integer", "minimum": 0},
                        "max_repeats": {"type": "integer", "minimum": 2},
                        "notify": {"type": "string"},
                        "notify_on": {"type": "string", "enum": ["not_ship", "always"]}}}}}},
                "responses": {
                    "202": _resp("a round queued", WATCHING),
                    "200": _resp("the watch's verdict", WATCHING),
                    **_errors(400, 401, 413)}}},
            "/api/openapi.json": {"get": {"summary": "This document",
                                          "responses": {"200": _resp("OpenAPI 3.1"),
                                                        **_errors(401)}}},
            **{_path(k.api_path): {"get": _report(k)} for k in kinds.served()},
        },
    }


def _path(rule: str) -> str:
    """A Flask rule as an OpenAPI path: /api/runs/<int:run_id>/x → /api/runs/{run_id}/x."""
    return "/api" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule)


def _report(kind: kinds.ReportKind) -> dict[str, Any]:
    """A registered report's GET: its params (from the path, else the query) and answers."""
    in_path = set(re.findall(r"<(?:\w+:)?(\w+)>", kind.api_path or ""))
    params = []
    for p in kind.params:
        schema: dict[str, Any] = {"type": "integer" if p.type == "int" else "string"}
        if p.minimum is not None:
            schema["minimum"] = p.minimum
        default = kind.api_args.get(p.name, p.default)
        if default not in (None, ()):
            schema["default"] = default
        where = "path" if p.name in in_path else "query"
        if p.many and where == "query":
            schema = {"type": "array", "items": schema}
        params.append({"name": p.name, "in": where, "required": p.required or where == "path",
                       "description": p.help, "schema": schema})
    asked = any(p["in"] == "query" for p in params) or kind.refusal is not None
    return {"summary": kind.summary or f"The {kind.title} report",
            "parameters": params,
            "responses": {"200": _resp(kind.name, {"type": "object"}),
                          **_errors(*((400,) if asked else ()), 401, 404)}}
