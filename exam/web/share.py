"""Read-only access: signed, expiring share links (itsdangerous), and who may do what.

A share link is ``{EXAM_PUBLIC_URL}/share/<token>``: the token signs a path on the
dashboard and the time it stops working. Opening it lets that browser read that page until
then, and for a scorecard the replies it links to: nothing else (not the other agents, the
runs, the review queue), and nothing that changes state. The signing key is the service's
``SECRET_KEY`` (``EXAM_SECRET_KEY``, else derived from ``EXAM_API_TOKEN``), so a CLI that
has the same environment (``exam notify``) makes links the service accepts.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

from itsdangerous import BadSignature, URLSafeSerializer

SALT = "agent-exam share link"
DEFAULT_DAYS = 7.0
MAX_GRANTS = 20  # shared pages one browser keeps open at once (the session is a cookie)


def secret_key(secret: str | None, api_token: str | None) -> str | None:
    """The dashboard's signing key: EXAM_SECRET_KEY, else derived from the API token."""
    if secret:
        return secret
    if not api_token:
        return None
    return hmac.new(api_token.encode(), b"agent-exam dashboard session",
                    hashlib.sha256).hexdigest()


def secret_from_env(env: Mapping[str, str]) -> str | None:
    return secret_key(env.get("EXAM_SECRET_KEY"), env.get("EXAM_API_TOKEN"))


def make_token(secret: str, path: str, days: float = DEFAULT_DAYS, now: float | None = None) -> str:
    until = int((time.time() if now is None else now) + days * 86400)
    return URLSafeSerializer(secret, salt=SALT).dumps({"path": path, "until": until})


def make_link(secret: str, public_url: str, path: str, days: float = DEFAULT_DAYS) -> str:
    return f"{public_url.rstrip('/')}/share/{make_token(secret, path, days)}"


class ShareError(ValueError):
    pass


def read_token(secret: str, token: str, now: float | None = None) -> tuple[str, int]:
    """(path, until) of a valid, unexpired token; ShareError saying why not otherwise."""
    try:
        data = URLSafeSerializer(secret, salt=SALT).loads(token)
    except BadSignature:
        raise ShareError("this share link is not valid (changed, or signed with another key)") \
            from None
    if not isinstance(data, dict) or not isinstance(data.get("path"), str) or \
            not isinstance(data.get("until"), int):
        raise ShareError("this share link is not valid")
    if data["until"] < (time.time() if now is None else now):
        raise ShareError("this share link has expired: ask for a new one")
    return data["path"], data["until"]


def page_of(path: str) -> str:
    """The page a signed path opens, as Flask sees a request for it (no query, %-decoded)."""
    return unquote(urlsplit(path).path)


def scorecard_page(agent: str, version: str) -> str:
    return f"/scorecard/{agent}/{version}"


def granted(grants: object, now: float | None = None) -> dict[str, int]:
    """The unexpired pages of a session's share grants (page → until); anything else dropped."""
    if not isinstance(grants, dict):
        return {}
    now = time.time() if now is None else now
    return {p: u for p, u in grants.items()
            if isinstance(p, str) and isinstance(u, int) and not isinstance(u, bool) and u >= now}


def grant(grants: object, path: str, until: int, now: float | None = None) -> dict[str, int]:
    """A session's grants with ``path`` added until ``until``; expired ones dropped, and the
    ones ending soonest when there are more than MAX_GRANTS."""
    kept = granted(grants, now)
    page = page_of(path)
    kept[page] = max(until, kept.get(page, until))
    return dict(sorted(kept.items(), key=lambda kv: kv[1])[-MAX_GRANTS:])
