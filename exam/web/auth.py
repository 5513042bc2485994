"""Bearer-token authentication, compared in constant time; dashboard sessions the store knows.

Two roles: the *admin* (EXAM_API_TOKEN) queues runs, reviews and excludes runs; a *viewer*
(EXAM_VIEWER_TOKEN) opens every read page and nothing else. A browser that only opened share
links (exam/share.py) reads the pages they name, nothing more, while those links are
neither expired nor revoked.

A login is a row in the store's ``sessions`` (a digest of a random session id, the role, its
end by the store's clock, ``SESSION_HOURS`` after the login); Flask's signed cookie carries
the id. Every request looks it up (one indexed read), on whichever instance it reaches, so
``POST /logout`` (which deletes the row) ends the session everywhere at once: a copy of the
cookie kept from before reads nothing more.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flask import current_app, g, request, session

from exam.db.engine import shown
from exam.share import granted, revoked
from exam.web.context import store, store_time

if TYPE_CHECKING:
    from exam.share import Grant

LOCAL_DEV_MARK = "local-dev"  # what an admin session holds when LOCAL_DEV needs no token


def _same(candidate: str | None, expected: str | None) -> bool:
    if not expected or not candidate:
        return False
    return hmac.compare_digest(candidate.encode(), expected.encode())


def token_ok(candidate: str | None) -> bool:
    """The admin token (or no token needed: LOCAL_DEV without one)."""
    expected = current_app.config.get("API_TOKEN")
    if not expected:
        return bool(current_app.config.get("LOCAL_DEV"))
    return _same(candidate, expected)


def viewer_token_ok(candidate: str | None) -> bool:
    return _same(candidate, current_app.config.get("VIEWER_TOKEN"))


def _mark(token: str) -> str:
    """What a session keeps of the token it was opened with: a keyed digest (the cookie is
    signed, not secret), so a session lasts only as long as its token does."""
    key = str(current_app.config["SECRET_KEY"]).encode()
    return hmac.new(key, b"session of " + token.encode(), hashlib.sha256).hexdigest()[:32]


def _admin_token() -> str | None:
    token = current_app.config.get("API_TOKEN")
    return token or (LOCAL_DEV_MARK if current_app.config.get("LOCAL_DEV") else None)


def _session_key(session_id: str) -> str:
    """What the store keeps of a session id: a digest (a copy of the store opens no session)."""
    return hashlib.sha256(b"exam session " + session_id.encode()).hexdigest()


def open_session(role: str) -> None:
    """Log this browser in as ``admin`` or ``viewer``: a fresh session (nothing kept from
    before, a share link's pages included) marked with the role's current token, and kept in
    the store for ``SESSION_HOURS``."""

    session.clear()
    session_id = secrets.token_urlsafe(32)
    store().open_session(_session_key(session_id), role,
                         float(current_app.config["SESSION_HOURS"]) * 3600)
    session["sid"] = session_id
    if role == "admin":
        session["auth"] = _mark(_admin_token() or "")
    else:
        session["viewer"] = _mark(current_app.config["VIEWER_TOKEN"])
    g.session_role = role


def close_session() -> None:
    """Log this browser out: its session deleted from the store (every instance refuses the
    cookie from its next request, a copy of it too), then the cookie emptied. The cookie is
    emptied even when the store cannot be written (the error is raised after)."""

    session_id = session.get("sid")
    session.clear()
    g.session_role = None
    if isinstance(session_id, str):
        store().close_session(_session_key(session_id))


def _live_role() -> str | None:
    """The role of this browser's session as the store has it (logged out or past its end:
    None); read once per request. A read that fails raises (the store's 503 page), and the
    request counts as signed out after it."""

    if "session_role" in g:
        return g.session_role
    g.session_role = None
    session_id = session.get("sid")
    if isinstance(session_id, str) and session_id:
        g.session_role = store().session_role(_session_key(session_id))
    return g.session_role


def _holds(key: str, token: str | None) -> bool:
    """The session was opened with ``token``, still the configured one, and the store still
    has it open for that role: changing EXAM_API_TOKEN or EXAM_VIEWER_TOKEN ends the sessions
    opened with the old one (a leaked token's sessions too), whatever EXAM_SECRET_KEY is, and
    logging out ends it on every instance."""
    mark = session.get(key)
    if not (bool(token) and isinstance(mark, str) and hmac.compare_digest(mark, _mark(token))):
        return False
    return _live_role() == ("admin" if key == "auth" else "viewer")


def _bearer() -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def bearer_ok() -> bool:
    return token_ok(_bearer())


def viewer_bearer_ok() -> bool:
    return viewer_token_ok(_bearer())


def is_admin() -> bool:
    return _holds("auth", _admin_token()) or bearer_ok()


def is_viewer() -> bool:
    """May read every page: an admin, or a viewer-token session or bearer."""
    return bool(is_admin() or _holds("viewer", current_app.config.get("VIEWER_TOKEN"))
                or viewer_bearer_ok())


@dataclass(frozen=True, slots=True)
class SharedAccess:
    """This browser's unexpired share links, as the store says today."""

    live: dict[str, Grant] = field(default_factory=dict)  # link id → grant, not revoked
    revoked: dict[str, Grant] = field(default_factory=dict)

    def pages(self, revoked: bool = False) -> set[str]:
        return {x.page for x in (self.revoked if revoked else self.live).values()}


def shared_access() -> SharedAccess:
    """This browser's share links, each looked up among the store's revocations: one indexed
    read per request (``Store.share_revocations``), kept for the request; none for a browser
    that holds no link. A revocation made on any instance holds here from the next request.
    A read that fails raises (the store's 503 page) and the request holds no link after it."""

    found = g.get("shared_access")
    if found is not None:
        return found
    g.shared_access = SharedAccess()  # until the store has answered: nothing is open
    grants = granted(session.get("shared"), store_time()) if session.get("shared") else {}
    if grants:
        rows = store().share_revocations(sorted(grants), sorted({x.page for x in grants.values()}))
        out = (SharedAccess({k: x for k, x in grants.items() if not revoked(x, rows)},
                            {k: x for k, x in grants.items() if revoked(x, rows)}))
        g.shared_access = out
    return g.shared_access


def session_ok() -> bool:
    """Signed in, or holding a share link neither expired nor revoked: may open some page."""
    return is_viewer() or bool(shared_access().live)


# a store URL inside an error text (a run's, stored by a worker that may have had another
# EXAM_DB), up to white space or a quote, a trailing colon left out
_STORE_URL = re.compile(r"\b(?:postgres(?:ql)?(?:\+\w+)?|sqlite)://[^\s'\"]*[^\s'\":]")
# what a viewer reads for an error that named the store: the rest of it (the driver's words)
# names hosts, ports, users and files too
STORE_NAMED = "the store could not be used (the reason is shown to admins)"
STORE_AWAY = ("the store cannot be read just now (the reason is in the service log): try "
              "again in a moment")  # what a viewer reads instead of the store's error


def shown_error(message: str | None) -> str | None:
    """A stored error (a run's) as this reader may see it: a store URL's credentials masked
    for everyone (an error stored before they were); for anyone but an admin, an error that
    names a store (its user@host/db, a file's path) is only said to be the store's, as the
    503 page already hides it."""
    if not message:
        return message

    s = store()
    message = s.said(message.replace(s.target, s.path))
    if is_admin():
        return _STORE_URL.sub(lambda m: shown(m.group()), message)
    return STORE_NAMED if s.path in message or _STORE_URL.search(message) else message
