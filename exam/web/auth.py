"""Bearer-token authentication, compared in constant time; dashboard sessions signed by Flask."""

from __future__ import annotations

import hmac

from flask import current_app, request, session


def token_ok(candidate: str | None) -> bool:
    expected = current_app.config.get("API_TOKEN")
    if not expected:
        return bool(current_app.config.get("LOCAL_DEV"))
    if not candidate:
        return False
    return hmac.compare_digest(candidate.encode(), expected.encode())


def bearer_ok() -> bool:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer":
        return token_ok(None)
    return token_ok(value.strip())


def session_ok() -> bool:
    return bool(session.get("auth")) or bearer_ok()
