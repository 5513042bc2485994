"""Bearer-token authentication, compared in constant time; dashboard sessions signed by Flask.

Two roles: the *admin* (EXAM_API_TOKEN) queues runs, reviews and excludes runs; a *viewer*
(EXAM_VIEWER_TOKEN, or a signed share link) opens every read page and nothing else.
"""

from __future__ import annotations

import hmac
import time

from flask import current_app, request, session


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


def _bearer() -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def bearer_ok() -> bool:
    return token_ok(_bearer())


def viewer_bearer_ok() -> bool:
    return viewer_token_ok(_bearer())


def is_admin() -> bool:
    return bool(session.get("auth")) or bearer_ok()


def is_viewer() -> bool:
    """May read: an admin, a viewer-token session or bearer, or an unexpired share link."""
    if is_admin() or session.get("viewer") or viewer_bearer_ok():
        return True
    until = session.get("viewer_until")
    return isinstance(until, int) and until >= time.time()


def session_ok() -> bool:
    return is_viewer()
