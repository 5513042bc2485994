"""Secrets out of everything the tool keeps or shows: one pattern per agent, every encoding.

Every value substituted from ``${VAR}`` in the registry is a secret, and so is every part of
a URL's userinfo and every query value. A hostile or careless agent (or a library's error
message) can hand a secret back in many forms; ``Redactor`` replaces each with
``[redacted]``:

- raw, and with any mix of JSON escapes per character (``\\u0041``, ``\\ud83d\\ude00``,
  ``\\/``, ``\\n``...), percent-encoding (``quote`` and ``quote_plus``, any hex case), ``\\x41``
  escapes and HTML character references (``&#65;``, ``&#x41;``, the ``;`` optional), so a
  partially escaped secret is caught too; each letter in either case (an upper- or
  lower-cased token is still the token) and ASCII in its full-width form (``Ｔｋ``);
- base64, standard and URL-safe alphabets, of the secret and of ``user:pass`` (Basic auth),
  at any of the three byte alignments inside a longer base64 string (the characters that
  depend only on the secret are matched; the one or two at each edge that mix in
  neighbouring bytes are left), with or without padding;
- hex, any letter case;
- every form above split by white space (also written ``\\n``), NULs or invisible
  characters (a line-wrapped base64, a token spaced out or broken by zero-width spaces,
  UTF-16 read as UTF-8) anywhere between two characters.

Not caught (documented in docs/agents.md): encodings stacked on base64 (base64 of base64),
a secret split across JSON strings, HTML's named character references (``&hyphen;``), or
transformed (reversed, rot13, base32, hashed, encrypted). Secrets shorter than
``MIN_SECRET_CHARS`` are not redacted: a 3-letter value would blank ordinary words; the
registry warns about them.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 8

_JSON_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n",
               "\r": "\\r", "\t": "\\t"}


def _hex_class(digits: str) -> str:
    """A hex string matched in any letter case: 'a1' → '[aA]1'."""
    return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in digits)


# what may stand between two characters of a secret that a person still reads as one: white
# space (a line wrapped, a token spaced out) and invisible format characters (zero-width space
# and joiners, word joiner, BOM, soft hyphen), NUL (UTF-16 or UTF-32 read as UTF-8), and a
# line break as an escape (\n in a body that is not JSON, so never decoded)
_GAP_CHARS = r"[\x00\s\u00ad\u200b-\u200d\u2060\ufeff]"
_GAP = rf"(?:{_GAP_CHARS}|\\[nrt])*"


def _variants(ch: str) -> list[str]:
    """A character of a secret as it may come back: either letter case (an upper- or
    lower-cased token is the token), and the full-width form of ASCII (CJK input methods)."""
    out = {ch, *(v for v in (ch.lower(), ch.upper()) if len(v) == 1)}
    out |= {chr(ord(v) + 0xFEE0) for v in out if "!" <= v <= "~"}
    return sorted(out)


def _escapes(ch: str) -> list[str]:
    """Every way one character can be written in JSON, a URL, HTML or a Python/C string."""
    alts = [re.escape(ch)]
    cp = ord(ch)
    if cp > 0xFFFF:  # JSON writes astral characters as a surrogate pair
        hi, lo = 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
        alts.append(rf"\\u{_hex_class(f'{hi:04x}')}\\u{_hex_class(f'{lo:04x}')}")
    else:
        alts.append(rf"\\u{_hex_class(f'{cp:04x}')}")
    if ch in _JSON_SHORT:
        alts.append(re.escape(_JSON_SHORT[ch]))
    # each UTF-8 byte percent-encoded (the % perhaps JSON-escaped, \u0025) or as \xHH
    alts.append("".join(rf"(?:%|\\u0025|\\x){_hex_class(f'{b:02x}')}"
                        for b in ch.encode("utf-8")))
    if ch == " ":
        alts.append(r"\+")
    # a character reference, its ; optional as browsers read it
    alts.append(rf"&#0*{cp};?")
    alts.append(rf"&#[xX]0*{_hex_class(f'{cp:x}')};?")
    return alts


def _char_pattern(ch: str) -> str:
    """The character itself in any of its variants, or escaped as it is (an escaped
    upper-cased secret is not a form anyone writes; leaving it out keeps the pattern small)."""
    same = "[" + "".join(re.escape(v) for v in _variants(ch)) + "]"
    return "(?:" + "|".join([same, *_escapes(ch)[1:]]) + ")"


def _spelled(form: str, exact: bool = True) -> str:
    """A literal form (base64, hex) matched with gaps between its characters (wrapped lines,
    zero-width spaces); hex digits in either case."""
    chars = [re.escape(c) if exact else _hex_class(c) for c in form]
    return f"{_GAP_CHARS}*".join(chars)


def base64_cores(secret: str) -> set[str]:
    """The parts of base64 text that only the secret's bytes decide, at every alignment."""
    raw = secret.encode("utf-8")
    cores = set()
    for align in range(3):
        enc = base64.b64encode(bytes(align) + raw).decode("ascii")
        front = (align * 8 + 5) // 6  # characters touched by the unknown bytes before
        back = (align + len(raw)) * 8 // 6  # characters wholly inside the secret's bits
        core = enc[front:back]
        if len(core) >= MIN_SECRET_CHARS:
            cores.add(core)
            cores.add(core.translate(str.maketrans("+/", "-_")))
    return cores


def _base64_forms(secret: str) -> set[str]:
    whole = base64.b64encode(secret.encode("utf-8")).decode("ascii")  # padding and all
    return {*base64_cores(secret), whole, whole.translate(str.maketrans("+/", "-_"))}


@functools.lru_cache(maxsize=64)
def _compiled(kept: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for every form of every secret, longest first. Kept per set of secrets: a
    registry is read afresh for every web request, and building the pattern costs milliseconds
    per secret."""
    alts = [_GAP.join(_char_pattern(ch) for ch in s) for s in kept]
    literals = sorted({f for s in kept for f in _base64_forms(s)}, key=len, reverse=True)
    alts += [_spelled(f) for f in literals]
    hexes = sorted({s.encode("utf-8").hex() for s in kept}, key=len, reverse=True)
    alts += [_spelled(h, exact=False) for h in hexes]
    # a cheap first-character test keeps a multi-megabyte body fast to scan
    first = ({v for s in kept for v in _variants(s[0])} | {f[0] for f in literals}
             | {c for h in hexes for c in (h[0].lower(), h[0].upper())} | set("\\%&+"))
    head = "[" + "".join(re.escape(c) for c in sorted(first)) + "]"
    return re.compile(f"(?={head})(?:{'|'.join(alts)})")


@dataclass(frozen=True, slots=True)
class Redactor:
    """Replaces every known secret, in every supported encoding, with ``[redacted]``."""

    secrets: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def of(cls, secrets: Iterable[str]) -> Redactor:
        return cls(tuple(sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS},
                                key=lambda s: (-len(s), s))))

    @property
    def pattern(self) -> re.Pattern[str] | None:
        """Built when first used (a registry makes a redactor per agent, then one for them
        all), and kept for the same secrets."""
        return _compiled(self.secrets) if self.secrets else None

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, value: str | None) -> str | None:
        """``value`` with every secret form replaced; None and "" pass through."""
        if not value or self.pattern is None:
            return value
        return self.pattern.sub(REDACTED, value)

    def body(self, value: str | None) -> str | None:
        """A reply body redacted as text and, when it is JSON, again after decoding: escapes
        can assemble a form the text did not show (a base64 written with \\u0041 escapes).
        Only then is the body re-serialised from the redacted data."""
        value = self.text(value)
        if not value or self.pattern is None or value.lstrip()[:1] not in ("{", "["):
            return value
        try:
            data = json.loads(value)
        except (ValueError, RecursionError):
            return value
        clean = self.data(data)
        return value if clean == data else json.dumps(clean, ensure_ascii=False)

    def data(self, value: Any) -> Any:
        """A parsed JSON value with every string (keys too) redacted. Walked with a stack of
        its own, not by recursion: a hostile body nesting 500 levels deep parses, and
        recursing into it ran out of Python's stack (the cell became a harness error)."""
        if self.pattern is None:
            return value
        pending: list[tuple[Any, Any]] = []

        def clean(v: Any) -> Any:
            if isinstance(v, str):
                return self.text(v)
            if isinstance(v, list):
                pending.append((v, out := [None] * len(v)))
                return out
            if isinstance(v, dict):
                pending.append((v, out := {}))
                return out
            return v

        top = clean(value)
        while pending:
            src, dst = pending.pop()
            if isinstance(src, list):
                for i, item in enumerate(src):
                    dst[i] = clean(item)
            else:
                for k, item in src.items():
                    dst[self.text(k)] = clean(item)
        return top


NO_SECRETS = Redactor()

_QUERY = re.compile(r"\?[^\s'\"()<>]+")
_USERINFO = re.compile(r"(?<=://)[^\s/@'\"]+@")


def url_secrets(url: str) -> list[str]:
    """Userinfo and query values: never stored or shown, whether from ``${VAR}`` or not."""
    parts = urlsplit(url)
    out = []
    if parts.username is not None or parts.password is not None:
        user, password = parts.username or "", parts.password or ""
        out += [user, password, unquote(user), unquote(password),
                f"{unquote(user)}:{unquote(password)}"]  # what Basic auth encodes
    for _, value in parse_qsl(parts.query, keep_blank_values=True):
        out.append(value)
    out += [v for _, _, v in (p.partition("=") for p in parts.query.split("&"))]
    return [v for v in out if v]


# the service's own secrets, read from the environment: an agent can know one (an n8n instance
# holds the team's LINE channel token, or the after-change workflow's EXAM_API_TOKEN) and echo it
SERVICE_SECRETS = ("EXAM_API_TOKEN", "EXAM_VIEWER_TOKEN", "EXAM_SECRET_KEY", "EXAM_WEBHOOK_AUTH",
                   "LINE_CHANNEL_ACCESS_TOKEN", "LINE_CHANNEL_SECRET")


def service_secrets(env: Mapping[str, str]) -> list[str]:
    """The values of ``SERVICE_SECRETS`` in ``env``, the credentials in ``EXAM_WEBHOOK_URL``,
    and the password in ``EXAM_DB``: never shown, whichever agent hands one back."""
    out = []
    for name in SERVICE_SECRETS:
        value = (env.get(name) or "").strip()
        out += [value, *value.split()[1:]]  # "Bearer xyz": the token alone too
    out += url_secrets((env.get("EXAM_WEBHOOK_URL") or "").strip())
    try:
        password = urlsplit((env.get("EXAM_DB") or "").strip()).password
    except ValueError:
        password = None
    out += [password, unquote(password)] if password else []
    return [v for v in out if v]


def safe_url(url: str, redactor: Redactor = NO_SECRETS) -> str:
    """``url`` without credentials or query string, other secrets in it redacted: safe to
    show and to store."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port:
        host = f"{host}:{port}"
    return redactor.text(urlunsplit((parts.scheme, host, parts.path, "", ""))) or ""


def scrub_urls(text: str) -> str:
    """Drop query strings and userinfo from URLs inside an error text (from a library)."""
    return _USERINFO.sub("", _QUERY.sub("?[redacted]", text))
