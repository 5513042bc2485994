"""The service: ``create_app(config=None)`` (Flask's factory pattern).

Configuration comes from defaults, then a TOML file named by ``EXAM_CONFIG``, then
``EXAM_*`` environment variables (``EXAM_API_TOKEN`` → ``API_TOKEN``), then ``config``
(tests). Served by ``exam serve`` in development and by gunicorn in production::

    gunicorn "exam.web.app:create_app()"
"""

from __future__ import annotations

import hmac
import logging
import os
import tomllib
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, current_app, has_request_context, jsonify, request
from flask.sessions import SecureCookieSessionInterface
from flask_wtf.csrf import CSRFError, CSRFProtect
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from exam.errors import ExamError, NoSuchRun, StoreError
from exam.share import secret_key
from exam.store import DEFAULT_DB
from exam.textsafe import page_text
from exam.web import api, bodies, context, dashboard, line
from exam.web.auth import STORE_AWAY, bearer_ok, is_admin

log = logging.getLogger("exam.web.app")

DEFAULTS: dict[str, Any] = {
    "DB": DEFAULT_DB,
    "AGENTS": "webhooks/agents.yaml",
    "API_TOKEN": None,  # required unless LOCAL_DEV
    "VIEWER_TOKEN": None,  # read-only dashboard access (never queues, reviews or excludes)
    "SHARE_LINK_DAYS": 7,  # how long a share link made by the dashboard keeps working
    "SESSION_HOURS": 12,  # how long a dashboard login lasts (POST /logout ends it at once)
    "LOCAL_DEV": False,  # true: no token needed (never expose such a service)
    "MAX_CONTENT_LENGTH": 1_000_000,  # request bodies larger than this get 413
    "MAX_REPEATS": 20,
    "PUBLIC_URL": None,  # where the dashboard is reachable, for links in LINE messages
    "SECRET_KEY": None,  # signs dashboard sessions; derived from API_TOKEN when unset
    "LINE_ALLOWED_GROUPS": "",  # comma-separated group ids allowed to send commands
    "LINE_RUN_GROUPS": "",  # of those, the groups allowed to start runs ("exam run W1 v3")
    "LINE_SWEEP_SECONDS": 10,  # how often each process looks for LINE events left unhandled
    "LINE_EVENTS_KEEP_DAYS": 30,  # handled LINE events (ids only) deleted after this; 0: never
    "TRUSTED_PROXIES": 0,  # proxies in front whose X-Forwarded-* headers are believed
    # Flask's own keys, set here (not with setdefault: Flask already defines them)
    "SESSION_COOKIE_HTTPONLY": True,
    "SESSION_COOKIE_SAMESITE": "Lax",
    "SESSION_COOKIE_SECURE": False,  # false: Secure only on requests that arrived over HTTPS
    "WTF_CSRF_TIME_LIMIT": None,  # a form's token lives as long as the session
}
# the dashboard needs its inline CSS, data: images (the favicon) and forms to itself: no script
# runs, nothing is fetched, no page frames it (a stored reply that slipped past escaping would
# still run nothing)
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
       "base-uri 'none'; frame-ancestors 'none'")
STRING_KEYS = ("API_TOKEN", "VIEWER_TOKEN", "SECRET_KEY", "DB", "AGENTS", "PUBLIC_URL", "LINE_ALLOWED_GROUPS",
               "LINE_RUN_GROUPS")
# whole numbers: key → smallest allowed
INT_KEYS = {"MAX_CONTENT_LENGTH": 1, "MAX_REPEATS": 1, "TRUSTED_PROXIES": 0, "SHARE_LINK_DAYS": 1,
            "SESSION_HOURS": 1, "LINE_SWEEP_SECONDS": 0, "LINE_EVENTS_KEEP_DAYS": 0}
# booleans not found by their default being a bool (Flask's default is None, or unset here)
OTHER_BOOL_KEYS = ("PROPAGATE_EXCEPTIONS", "TRAP_BAD_REQUEST_ERRORS", "TEMPLATES_AUTO_RELOAD",
                   "WTF_CSRF_ENABLED")
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def create_app(config: dict[str, Any] | None = None) -> Flask:
    app = Flask(__name__, template_folder="../templates")  # exam/templates: the reports use them too
    app.json.ensure_ascii = False  # UTF-8 as the CLI prints it: 貨到付款, not \u8ca8\u5230...
    _configure(app, config)
    _check_tokens(app)
    if app.config["TRUSTED_PROXIES"]:
        n = app.config["TRUSTED_PROXIES"]
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n)  # type: ignore
    app.session_interface = _Sessions()
    bodies.init_app(app)  # a JSON body nested too deep: a 400 on every route, before it
    app.jinja_env.finalize = page_text  # before any template is compiled
    _register_blueprints(app)
    app.after_request(security_headers)
    app.get("/healthz")(healthz)
    _register_error_pages(app)
    context.init_app(app)
    _log_like_gunicorn()
    line.start_sweeping(app)  # in the process that serves: a gunicorn worker, not its master
    return app


def _configure(app: Flask, config: dict[str, Any] | None) -> None:
    """Defaults, then the EXAM_CONFIG file, then EXAM_* variables, then ``config``; checked."""
    app.config.update(DEFAULTS)
    app.config["WTF_CSRF_CHECK_DEFAULT"] = False  # checked by forms_from_this_site below
    app.config["WTF_CSRF_SSL_STRICT"] = False  # the Origin/Referer check below covers it
    defaults = dict(app.config)
    file_keys: set[str] = set()
    path = os.environ.get("EXAM_CONFIG")
    if path:
        file_keys = _load_file(app, path)
    app.config.from_prefixed_env("EXAM")
    if config:
        app.config.update(config)
    _check_settings(app, defaults, path, file_keys)


def _check_tokens(app: Flask) -> None:
    """No service without a token (unless LOCAL_DEV), no viewer token that is the admin's; the
    session key derived from the token when none is set."""
    token = app.config.get("API_TOKEN")
    if not token and not app.config["LOCAL_DEV"]:
        raise ExamError("EXAM_API_TOKEN is not set: the service will not start without a token "
                        "(set EXAM_LOCAL_DEV=true for local development only)")
    viewer = app.config.get("VIEWER_TOKEN")
    if viewer and token and hmac.compare_digest(viewer.encode(), token.encode()):
        raise ExamError("EXAM_VIEWER_TOKEN is the same as EXAM_API_TOKEN: a viewer would be an "
                        "admin; choose a different viewer token")
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = secret_key(None, token or "local-dev")


def _register_blueprints(app: Flask) -> None:
    """The API, the dashboard and the LINE webhook; CSRF protection for the dashboard's forms
    (the API answers a bearer token only, the webhook LINE's signature)."""
    csrf = CSRFProtect(app)
    app.register_blueprint(api.bp)
    app.register_blueprint(dashboard.bp)
    app.register_blueprint(line.bp)
    csrf.exempt(api.bp)  # bearer token only: a browser never sends it by itself
    csrf.exempt(line.bp)  # signed by LINE
    app.before_request(forms_from_this_site)


def forms_from_this_site():
    """Every state-changing form: same origin (Origin, else Referer) and a CSRF token.
    Not on a path no route takes (or not by this method): that is the 404 or 405 it is,
    whatever the method, never a 400 "Form refused" for a form no page has."""
    if request.method not in current_app.config["WTF_CSRF_METHODS"] or \
            request.blueprint in ("api", "line") or request.routing_exception is not None:
        return None
    if current_app.config.get("API_TOKEN") and _bearer_sent() and bearer_ok():
        return None  # a script with the token, not a browser riding a cookie
    origin = request.headers.get("Origin")
    source = origin if origin is not None else request.headers.get("Referer")
    if source is not None and not _same_origin(source):
        raise CSRFError("the form was sent from another site")
    current_app.extensions["csrf"].protect()
    return None


def security_headers(resp: Response) -> Response:
    resp.headers["X-Frame-Options"] = "DENY"
    resp.headers["Content-Security-Policy"] = CSP
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Referrer-Policy"] = "same-origin"
    # replies, raw bodies and review notes: kept by no browser cache or proxy on the way
    resp.headers.setdefault("Cache-Control", "no-store")
    return resp


def healthz():
    try:
        schema = context.store().schema_version()
        context.store().list_runs(limit=1)  # reads a table, not only the file's header
        return jsonify(ok=True, schema=schema)
    except StoreError as exc:  # every database error, on either backend
        log.error("healthz: %s", exc)
        return jsonify(ok=False, error="the store cannot be opened (see the service log)"), 503


def _answer(status: int, error: str, heading: str, page_message: str | None = None):
    """JSON for the API, the LINE webhook and /healthz; a page for the dashboard."""
    if _json_wanted():
        return jsonify(error=error), status
    return dashboard.error_page(status, heading, page_message or error)


def _csrf_refused(err: CSRFError):
    message = (f"refused: {err.description} — reload the page and send the form again")
    return _answer(400, message, "Form refused")


def _store_trouble(err: StoreError):
    if isinstance(err, NoSuchRun):  # what was asked for is not there: not the store's fault
        return _answer(404, "not found", "Not found", str(err))
    log.error("store: %s", err)
    # a viewer (a share link, perhaps forwarded) is not told where the store lives
    said = str(err) if is_admin() else STORE_AWAY
    return _answer(503, said, "The store is not available", said)


def _bad_request(err: HTTPException):
    return _answer(400, err.description or "bad request", "Bad request")


def _too_large(_err):
    return _answer(413, f"request body larger than {current_app.config['MAX_CONTENT_LENGTH']:,} "
                        "bytes", "Too large")


def _not_found(_err):
    return _answer(404, "not found", "Not found", "there is no such page: the run, agent, "
                   "version or question may not be stored (or the address is mistyped)")


def _not_allowed(err: HTTPException):
    resp = current_app.make_response(_answer(405, "method not allowed", "Method not allowed"))
    methods = getattr(err, "valid_methods", None)
    if methods:  # what the path takes (RFC 9110: a 405 must say)
        resp.headers["Allow"] = ", ".join(sorted(methods))
    return resp


def _server_error(_err):
    return _answer(500, "internal error (logged by the service)", "Internal error")


def _register_error_pages(app: Flask) -> None:
    """Errors as JSON for the API, the webhook and /healthz, as a page for the dashboard."""
    for code, handler in ((CSRFError, _csrf_refused), (StoreError, _store_trouble),
                          (400, _bad_request), (413, _too_large), (404, _not_found),
                          (405, _not_allowed), (500, _server_error)):
        app.register_error_handler(code, handler)


def _log_like_gunicorn() -> None:
    """The service's own lines (a LINE command from a group not allowed, a redelivery, store
    trouble) at INFO and up; under gunicorn through its error log's handlers, in its format.
    Without a handler Python would print warnings only, without a time, and drop the rest."""
    ours = logging.getLogger("exam")
    ours.setLevel(logging.INFO)
    gunicorn = logging.getLogger("gunicorn.error")
    if gunicorn.handlers and not ours.handlers:
        for handler in gunicorn.handlers:
            ours.addHandler(handler)
        ours.propagate = False  # a root handler someone added would print every line twice


class _Sessions(SecureCookieSessionInterface):
    """The session cookie is Secure whenever the request came over HTTPS (behind a proxy:
    with TRUSTED_PROXIES set, X-Forwarded-Proto says so), or always with SESSION_COOKIE_SECURE."""

    def get_cookie_secure(self, app: Flask) -> bool:
        return bool(app.config["SESSION_COOKIE_SECURE"]) or (
            has_request_context() and request.is_secure)


def _json_wanted() -> bool:
    """Errors of the JSON API, the LINE webhook and /healthz are JSON; of anything else (the
    dashboard, an unknown path a browser opened) a page."""
    return any(request.path == p or request.path.startswith(p + "/")
               for p in ("/api", "/line", "/healthz"))


def _bearer_sent() -> bool:
    return request.headers.get("Authorization", "").lower().startswith("bearer ")


def _same_origin(url: str) -> bool:
    """Origin or Referer → same scheme and host as this request (as the proxy fix sees it)."""
    parts = urlsplit(url)
    return _origin(parts.scheme, parts.netloc) == _origin(request.scheme, request.host)


def _origin(scheme: str, host: str) -> tuple[str, str]:
    """(scheme, host) with a default port dropped: http://h:80 is http://h."""
    scheme, host = scheme.lower(), host.lower()
    default = {"http": ":80", "https": ":443"}.get(scheme)
    if default and host.endswith(default):
        host = host[: -len(default)]
    return scheme, host


def _load_file(app: Flask, path: str) -> set[str]:
    """The TOML file named by EXAM_CONFIG; returns the keys it set."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ExamError(f"EXAM_CONFIG: {path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ExamError(f"EXAM_CONFIG: {path}: not valid TOML: {exc}") from None
    keys = {k for k in data if k.isupper()}
    app.config.from_mapping({k: data[k] for k in keys})
    return keys


def _setting_name(key: str, path: str | None, file_keys: set[str]) -> str:
    """Where a setting came from, as the user wrote it."""
    if f"EXAM_{key}" in os.environ:
        return f"EXAM_{key}"
    if key in file_keys:
        return f"{path}: {key}"
    return key


def parse_bool(value: Any) -> bool | None:
    """1/0/true/false/yes/no/on/off in any case (and real booleans); None for anything else."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    return None


def _check_settings(app: Flask, defaults: dict[str, Any], path: str | None,
                    file_keys: set[str]) -> None:
    """Fail closed: a setting of the wrong kind stops the service, naming the variable."""
    cfg = app.config

    def name(key: str) -> str:
        return _setting_name(key, path, file_keys)

    for key in STRING_KEYS:  # from_prefixed_env reads JSON: a numeric token must stay a string
        if cfg.get(key) is not None:
            cfg[key] = str(cfg[key])
    bools = {k for k, v in defaults.items() if isinstance(v, bool)} | set(OTHER_BOOL_KEYS)
    for key in sorted(bools):
        if cfg.get(key) is None and defaults.get(key) is None:
            continue  # unset, where Flask means "decide for me"
        parsed = parse_bool(cfg.get(key))
        if parsed is None:
            raise ExamError(f"{name(key)}: expected one of 1, 0, true, false, yes, no, on, off "
                            f"(any case), found {str(cfg.get(key))[:40]!r}")
        cfg[key] = parsed
    for key, low in INT_KEYS.items():
        value = cfg.get(key)
        if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ExamError(f"{name(key)}: expected a whole number ≥ {low}, "
                            f"found {str(cfg.get(key))[:40]!r}")
        cfg[key] = value
    # Flask-WTF compares it with a number: a string let the service start and made every form
    # a 500, and 0 or less refused every form as expired
    limit = cfg.get("WTF_CSRF_TIME_LIMIT")
    if isinstance(limit, str) and limit.strip().lower() == "none":
        limit = None
    elif isinstance(limit, str) and limit.strip().isascii() and limit.strip().isdigit():
        limit = int(limit.strip())
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ExamError(f"{name('WTF_CSRF_TIME_LIMIT')}: expected a whole number of seconds ≥ 1, "
                        "or none (a form's token lives as long as the session), found "
                        f"{str(cfg.get('WTF_CSRF_TIME_LIMIT'))[:40]!r}")
    cfg["WTF_CSRF_TIME_LIMIT"] = limit
    if cfg["SESSION_COOKIE_SAMESITE"] not in ("Lax", "Strict"):
        raise ExamError(f"{name('SESSION_COOKIE_SAMESITE')}: expected Lax or Strict, found "
                        f"{str(cfg['SESSION_COOKIE_SAMESITE'])[:40]!r}")
