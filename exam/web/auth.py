"""Bearer-token authentication, compared in constant time; dashboard sessions signed by Flask.

Two roles: the *admin* (EXAM_API_TOKEN) queues runs, reviews and excludes runs; a *viewer*
(EXAM_VIEWER_TOKEN) opens every read page and nothing else. A browser that only opened share
links (exam/web/share.py) reads the pages they name, nothing more.
"""

from __future__ import annotations

import hmac

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
    """May read every page: an admin, or a viewer-token session or bearer."""
    return bool(is_admin() or session.get("viewer") or viewer_bearer_ok())


def shared_pages() -> dict[str, int]:
    """The pages this browser's unexpired share links opened (page → until)."""
    from exam.web.share import granted

    return granted(session.get("shared"))


def session_ok() -> bool:
    """Signed in, or holding a share link: may open some page."""
    return is_viewer() or bool(shared_pages())
