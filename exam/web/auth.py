"""Bearer-token authentication, compared in constant time; dashboard sessions signed by Flask.

Two roles: the *admin* (EXAM_API_TOKEN) queues runs, reviews and excludes runs; a *viewer*
(EXAM_VIEWER_TOKEN) opens every read page and nothing else. A browser that only opened share
links (exam/web/share.py) reads the pages they name, nothing more.
"""

from __future__ import annotations

import hashlib
import hmac

from flask import current_app, request, session

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


def open_session(role: str) -> None:
    """Log this browser in as ``admin`` or ``viewer``: a fresh session (nothing kept from
    before, a share link's pages included) marked with the role's current token."""
    session.clear()
    if role == "admin":
        session["auth"] = _mark(_admin_token() or "")
    else:
        session["viewer"] = _mark(current_app.config["VIEWER_TOKEN"])


def _holds(key: str, token: str | None) -> bool:
    """The session was opened with ``token``, still the configured one: changing
    EXAM_API_TOKEN or EXAM_VIEWER_TOKEN ends the sessions opened with the old one (a leaked
    token's sessions too), whatever EXAM_SECRET_KEY is."""
    mark = session.get(key)
    return bool(token) and isinstance(mark, str) and hmac.compare_digest(mark, _mark(token))


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


def shared_pages() -> dict[str, int]:
    """The pages this browser's unexpired share links opened (page → until)."""
    from exam.web.share import granted

    return granted(session.get("shared"))


def session_ok() -> bool:
    """Signed in, or holding a share link: may open some page."""
    return is_viewer() or bool(shared_pages())
