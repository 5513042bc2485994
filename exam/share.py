"""Read-only access: signed, expiring share links (itsdangerous), and who may do what.

A share link is ``{EXAM_PUBLIC_URL}/share/<token>``: the token signs a path on the
dashboard, the time it stops working and the time it was made. Opening it lets that browser
read that page until then, and for a scorecard the replies it links to: nothing else (not the
other agents, the runs, the review queue), and nothing that changes state. The signing key is
the service's ``SECRET_KEY`` (``EXAM_SECRET_KEY``, else derived from ``EXAM_API_TOKEN``), so a
CLI that has the same environment (``exam notify``) makes links the service accepts.

A link can be revoked (``exam share revoke``, the scorecard page's form): the store keeps its
*id*, a digest of what the token signs (never the token, nor its signature, from which a link
could be rebuilt), or a page whose links made before a time are all revoked. Every request
read through a link checks the store (``Store.share_revocations``), so a revocation holds on
every instance at once, a browser that opened the link before included.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar
from urllib.parse import unquote, urlsplit

from itsdangerous import BadSignature, URLSafeSerializer

from exam.errors import ExamError


class Revocation(Protocol):
    """What ``revoked`` reads of a revocation (the store's rows, ``exam.store.Revocation``):
    share links need no store, so they sit below both the web and notify."""

    @property
    def link(self) -> str | None: ...
    @property
    def page(self) -> str: ...
    @property
    def made_before(self) -> float | None: ...


R = TypeVar("R", bound=Revocation)

SALT = "agent-exam share link"
DEFAULT_DAYS = 7.0
MAX_GRANTS = 20  # share links one browser keeps open at once (the session is a cookie)
ID_CHARS = 32  # a link id: hex digits of a SHA-256 (128 bits)
# what a token is made of: itsdangerous's URL-safe base64 and its separator
SHARE_PATH = re.compile(r"(?:^|/)share/([^/?#\s]+)")  # the token in a pasted link
TOKEN_CHARS = re.compile(r"^[A-Za-z0-9_=-]+(?:\.[A-Za-z0-9_=-]+)+$")


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
    """A token for ``path``, working ``days`` from ``now``; it says when it was made (to the
    millisecond), so every link to a page made before a time can be revoked at once."""
    now = time.time() if now is None else now
    return URLSafeSerializer(secret, salt=SALT).dumps(
        {"path": path, "until": int(now + days * 86400), "made": round(now, 3)})


def make_link(secret: str, public_url: str, path: str, days: float = DEFAULT_DAYS,
              now: float | None = None) -> str:
    """A share link; the same arguments (``now`` included) always give the same link."""
    return f"{public_url.rstrip('/')}/share/{make_token(secret, path, days, now)}"


# the largest "until" and "made" a token signs before the year 2286 (ten digits of seconds;
# "made" is rounded to the millisecond, so never more than three decimals)
_LATEST = 9_999_999_999


def longest_link(public_url: str, path: str) -> int:
    """The most characters ``make_link(…, public_url, path, …)`` gives, whatever the key,
    the expiry or the time it is made: what a message is fitted to before its link is made
    (exam/notify). A token is the signed JSON in URL-safe base64 (zlib-compressed and marked
    with a leading "." only when that is shorter), ".", and the signature."""
    signed = URLSafeSerializer("", salt=SALT)
    text = signed.default_serializer.dumps({"path": path, "until": _LATEST,
                                            "made": _LATEST + 0.999})
    payload = -(-len(text.encode()) * 4 // 3)  # base64 without its "=" padding
    signature = len(signed.make_signer().get_signature(b""))
    return len(f"{public_url.rstrip('/')}/share/") + payload + 1 + signature


class ShareError(ExamError, ValueError):
    """A token that opens nothing: not one, not ours (changed, another key), expired."""


class ForeignLink(ShareError):
    """A token whose signature this key does not make: changed, or another service's."""


@dataclass(frozen=True, slots=True)
class Link:
    """What a valid token signs, and its id."""

    path: str  # as signed: perhaps %-encoded, perhaps with a query
    until: int  # epoch seconds it stops working
    made: float | None  # epoch seconds it was made; None for a link made before links said so
    id: str  # link_id(): what the store knows the link by

    @property
    def page(self) -> str:
        return page_of(self.path)

    def expired(self, now: float | None = None) -> bool:
        return self.until < (time.time() if now is None else now)


def link_id(token: str) -> str:
    """A link's id: a digest of the part of its token that is signed (the path, the expiry,
    when it was made), not of the token itself. itsdangerous reads a signature written in
    more than one way (with ``=`` padding added, say), so the same link has several tokens;
    its signed part has one spelling, and no key can be read back from its digest."""
    signed = token.rsplit(".", 1)[0]
    return hashlib.sha256(b"agent-exam share link\0" + signed.encode()).hexdigest()[:ID_CHARS]


def decode_token(secret: str, token: str) -> Link:
    """The link a token signs, expired or not; ShareError when it is not one of ours."""
    try:
        data = URLSafeSerializer(secret, salt=SALT).loads(token)
    except BadSignature:
        raise ForeignLink("this share link is not valid (changed, or signed with another key)") \
            from None
    if not isinstance(data, dict) or not isinstance(data.get("path"), str) or \
            not _whole(data.get("until")) or not (data.get("made") is None or
                                                  _number(data.get("made"))):
        raise ShareError("this share link is not valid")
    return Link(data["path"], data["until"], data.get("made"), link_id(token))


def read_token(secret: str, token: str, now: float | None = None) -> Link:
    """The link of a valid, unexpired token; ShareError saying why not otherwise."""
    link = decode_token(secret, token)
    if link.expired(now):
        raise ShareError("this share link has expired: ask for a new one")
    return link


def token_of(text: str) -> str:
    """The token in what someone pasted: a whole share link (``https://…/share/<token>``,
    perhaps with a query), its path, or the token alone; ShareError when it is none of those."""
    found = SHARE_PATH.search(text.strip())
    text = unquote(found.group(1) if found else text.strip())
    if not TOKEN_CHARS.match(text):
        raise ShareError("not a share link: expected PUBLIC_URL/share/<token> (or the token)")
    return text


def link_to_revoke(secret: str, pasted: str, now: float | None = None) -> Link:
    """The link someone pasted to be revoked; ShareError when it is not a share link, not
    this service's (changed, or signed with another key) or already expired."""
    link = decode_token(secret, token_of(pasted))
    if link.expired(now):
        raise ShareError(f"this share link expired on {when(link.until)}: it opens nothing "
                         f"already, there is nothing to revoke")
    return link


def when(epoch: float) -> str:
    """A time as messages show it: minutes, UTC (the same on every host)."""
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def page_of(path: str) -> str:
    """The page a signed path opens, as Flask sees a request for it (no query, %-decoded)."""
    return unquote(urlsplit(path).path)


def scorecard_page(agent: str, version: str) -> str:
    return f"/scorecard/{agent}/{version}"


@dataclass(frozen=True, slots=True)
class Grant:
    """A share link this browser opened, as its session keeps it."""

    id: str
    page: str
    until: int
    made: float | None


def granted(grants: object, now: float | None = None) -> dict[str, Grant]:
    """The unexpired grants of a session (link id → grant); anything else dropped, grants kept
    before links had ids (page → until) too: those browsers open their links again."""
    if not isinstance(grants, dict):
        return {}
    now = time.time() if now is None else now
    out = {}
    for key, value in grants.items():
        if isinstance(key, str) and isinstance(value, list) and len(value) == 3:
            page, until, made = value
            if isinstance(page, str) and _whole(until) and until >= now and \
                    (made is None or _number(made)):
                out[key] = Grant(key, page, until, made)
    return out


def grant(grants: object, link: Link, now: float | None = None) -> dict[str, list]:
    """A session's grants with ``link`` added; expired ones dropped, and the ones ending
    soonest when there are more than MAX_GRANTS."""
    kept = granted(grants, now)
    kept[link.id] = Grant(link.id, link.page, link.until, link.made)
    newest = sorted(kept.values(), key=lambda g: g.until)[-MAX_GRANTS:]
    return {g.id: [g.page, g.until, g.made] for g in newest}


def revoked(link: Link | Grant, revocations: Iterable[R]) -> R | None:
    """The revocation that holds for ``link`` (of the store's rows read for it), or None: its
    own, or its page's when it was made before then (a link that does not say when it was
    made is older than any revocation)."""
    for r in revocations:
        if r.link == link.id:
            return r
        if r.link is None and r.page == link.page and (link.made is None or
                                                       link.made < r.made_before):
            return r
    return None
