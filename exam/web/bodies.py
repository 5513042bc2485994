"""Request bodies: the one place a JSON body is read, for every route.

``json.loads`` recurses once per level of nesting: 100,000 ``[`` posted to a route that read
its body was a RecursionError (a 500), and the same body anywhere else was read by whatever
route came next. A JSON body nested deeper than ``MAX_DEPTH`` is refused before any route
sees it, on every route (a 400 that says so), and ``request.get_json`` refuses it too.
"""

from __future__ import annotations

from typing import Any

from flask import Request as FlaskRequest
from flask import request
from werkzeug.exceptions import BadRequest

from exam.textsafe import nests_deeper

MAX_DEPTH = 64  # the API's bodies nest 2 levels; a LINE webhook's about 5


def refuse_deep(req: FlaskRequest) -> None:
    """A 400 for a JSON body nested deeper than MAX_DEPTH (found without parsing it)."""
    if nests_deeper(req.get_data(as_text=True), MAX_DEPTH):
        raise BadRequest(f"the JSON body is nested deeper than {MAX_DEPTH} levels")


class Request(FlaskRequest):
    """Flask's request, whose JSON body is never parsed deeper than MAX_DEPTH."""

    def get_json(self, force: bool = False, silent: bool = False,
                 cache: bool = True) -> Any | None:
        if force or self.is_json:
            refuse_deep(self)
        return super().get_json(force=force, silent=silent, cache=cache)


def check_body() -> None:
    """Every request (``before_request``): a JSON body too deep is a 400 before any route,
    whether the route reads JSON (the API), reads it through a library (the LINE webhook's
    SDK) or not at all (a form)."""
    if request.is_json and request.routing_exception is None:  # no route: its 404 or 405
        refuse_deep(request)


def init_app(app) -> None:
    app.request_class = Request
    app.before_request(check_body)
