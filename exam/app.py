"""The service: ``create_app(config=None)`` (Flask's factory pattern).

Configuration comes from defaults, then a TOML file named by ``EXAM_CONFIG``, then
``EXAM_*`` environment variables (``EXAM_API_TOKEN`` → ``API_TOKEN``), then ``config``
(tests). Served by ``exam serve`` in development and by gunicorn in production::

    gunicorn "exam.app:create_app()"
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import tomllib
from typing import Any

from flask import Flask, g, jsonify

from exam.errors import ExamError

DEFAULTS: dict[str, Any] = {
    "DB": "results/exam.db",
    "AGENTS": "webhooks/agents.yaml",
    "API_TOKEN": None,  # required unless LOCAL_DEV
    "LOCAL_DEV": False,  # true: no token needed (never expose such a service)
    "MAX_CONTENT_LENGTH": 1_000_000,  # request bodies larger than this get 413
    "MAX_REPEATS": 20,
    "PUBLIC_URL": None,  # where the dashboard is reachable, for links in LINE messages
    "SECRET_KEY": None,  # signs dashboard sessions; derived from API_TOKEN when unset
    "LINE_ALLOWED_GROUPS": "",  # comma-separated group ids allowed to send commands
    "LINE_RUN_GROUPS": "",  # of those, the groups allowed to start runs ("exam run W1 v3")
}
STRING_KEYS = ("API_TOKEN", "SECRET_KEY", "DB", "AGENTS", "PUBLIC_URL", "LINE_ALLOWED_GROUPS",
               "LINE_RUN_GROUPS")


def create_app(config: dict[str, Any] | None = None) -> Flask:
    app = Flask(__name__)
    app.config.update(DEFAULTS)
    path = os.environ.get("EXAM_CONFIG")
    if path:
        app.config.from_file(path, load=tomllib.load, text=False)
    app.config.from_prefixed_env("EXAM")
    if config:
        app.config.update(config)
    for key in STRING_KEYS:  # from_prefixed_env reads JSON: a numeric token must stay a string
        if app.config.get(key) is not None:
            app.config[key] = str(app.config[key])
    token = app.config.get("API_TOKEN")
    if not token and not app.config.get("LOCAL_DEV"):
        raise ExamError("EXAM_API_TOKEN is not set: the service will not start without a token "
                        "(set EXAM_LOCAL_DEV=true for local development only)")
    if not app.config.get("SECRET_KEY"):
        seed = (token or "local-dev").encode()
        app.config["SECRET_KEY"] = hmac.new(seed, b"agent-exam dashboard session",
                                            hashlib.sha256).hexdigest()
    app.config.setdefault("SESSION_COOKIE_HTTPONLY", True)
    app.config.setdefault("SESSION_COOKIE_SAMESITE", "Lax")

    from exam.web import api, dashboard, line

    app.register_blueprint(api.bp)
    app.register_blueprint(dashboard.bp)
    app.register_blueprint(line.bp)

    @app.get("/healthz")
    def healthz():
        return jsonify(ok=True, schema=store().schema_version())

    @app.errorhandler(413)
    def too_large(_err):
        return jsonify(error=f"request body larger than {app.config['MAX_CONTENT_LENGTH']:,} "
                             "bytes"), 413

    @app.errorhandler(404)
    def not_found(_err):
        return jsonify(error="not found"), 404

    @app.errorhandler(405)
    def not_allowed(_err):
        return jsonify(error="method not allowed"), 405

    @app.teardown_appcontext
    def close_store(_exc):
        s = g.pop("store", None)
        if s is not None:
            s.close()

    logging.getLogger("exam").setLevel(logging.INFO)
    return app


def store():
    """The request's store (one SQLite connection per request)."""
    from flask import current_app

    from exam.store import Store

    if "store" not in g:
        g.store = Store(current_app.config["DB"])
    return g.store


def registry():
    from flask import current_app

    from exam.registry import load_registry

    return load_registry(current_app.config["AGENTS"])
