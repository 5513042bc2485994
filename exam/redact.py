"""Secrets out of everything the tool keeps or shows: one pattern per agent, every encoding.

Every value substituted from ``${VAR}`` in the registry is a secret, and so is every part of
a URL's userinfo and every query value. A hostile or careless agent (or a library's error
message) can hand a secret back in many forms; ``Redactor`` replaces each with
``[redacted]``:

- raw, and with any mix of JSON escapes per character (``\\u0041``, ``\\ud83d\\ude00``,
  ``\\/``, ``\\n``...), ``\\u{41}`` and ``\\U00000041``, percent-encoding (``quote`` and
  ``quote_plus``, any hex case, percent-encoded twice: ``%252F``), quoted-printable (``=2F``,
  soft line breaks), ``\\x41`` escapes (of UTF-8 bytes, and of Latin-1 as Python's repr
  writes them), HTML character references (``&#65;``, ``&#x41;``, the ``;`` optional, and
  named: ``&sol;``, ``&hyphen;``), accents decomposed (``a`` + U+0308), so a partially
  escaped secret is caught too; each letter in either case (an upper- or lower-cased token is
  still the token) and in any form NFKC turns into it (full-width ``Ｔｋ``, mathematical
  ``𝐓𝐤``, circled ``Ⓣ``);
- reversed and rot13 (letters in any case, with gaps; not escaped as well);
- base64, standard and URL-safe alphabets, of the secret (its UTF-8 and its Latin-1 bytes)
  and of ``user:pass`` (Basic auth), at any of the three byte alignments inside a longer
  base64 string (the characters that depend only on the secret are matched; the one or two
  at each edge that mix in neighbouring bytes are left), with or without padding; and the
  secret's whole base64 encoded in base64 again, the same ways;
- base32 (RFC 4648), any letter case, at any of the five alignments;
- hex, any letter case, its bytes perhaps separated (``de:ad``, ``de-ad``, ``0xde, 0xad``);
- every form above split by white space (also written ``\\n``), NULs or invisible
  characters (a line-wrapped base64, a token spaced out or broken by zero-width spaces,
  UTF-16 read as UTF-8) anywhere between two characters.

Not caught (documented in docs/agents.md): other encodings stacked (hex of base64, reversed
base64, base64 of UTF-16), base85, a secret spelled out with separators that are not white
space (``T-k-9``), as decimal code points, split across JSON strings, or transformed beyond
reading (hashed, encrypted). Secrets shorter than
``MIN_SECRET_CHARS`` are not redacted: a 3-letter value would blank ordinary words; the
registry warns about them.
"""

from __future__ import annotations

import base64
import codecs
import functools
import html.entities
import json
import re
import sys
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from exam.channels import BUILT_IN as CHANNELS

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
# ... and quoted-printable's soft line break (= at the end of a line)
_GAP = rf"(?:{_GAP_CHARS}|\\[nrt]|=\r?\n)*"
# between two bytes of hex: also the separators hex dumps use (de:ad, de-ad, 0xde, 0xad)
_HEX_SEP = rf"(?:{_GAP_CHARS}|[:,\-]|0[xX])*"


@functools.cache
def _compatibility_table() -> dict[int, str]:
    """Each character NFKC turns into one other character (mathematical 𝐓, circled Ⓣ,
    superscript ², the Kelvin sign, full-width Ｔ) → that character: a reader sees the letter.
    Built once, on first use (every code point is looked at: ~0.2 s)."""
    out: dict[int, str] = {}
    for cp in range(0xA0, sys.maxunicode + 1):
        c = chr(cp)
        if unicodedata.decomposition(c) == "":
            continue
        n = unicodedata.normalize("NFKC", c)
        if len(n) == 1 and n != c:
            out[cp] = n
    return out


@functools.cache
def _entity_names() -> dict[str, tuple[str, ...]]:
    """Each character → its HTML named character references (``&sol;``, ``&hyphen;``), with
    their ``;`` where HTML requires it."""
    out: dict[str, list[str]] = {}
    for name, ch in html.entities.html5.items():
        if len(ch) == 1:
            out.setdefault(ch, []).append(name)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def _variants(ch: str) -> list[str]:
    """A character of a secret as it may come back: either letter case (an upper- or
    lower-cased token is the token), and the full-width form of ASCII (CJK input methods).
    The other characters NFKC makes it (𝐓, Ⓣ) are matched through ``Redactor.text``'s
    shadow text: in the pattern they made every character class a long list to scan."""
    out = {ch, *(v for v in (ch.lower(), ch.upper()) if len(v) == 1)}
    out |= {chr(ord(v) + 0xFEE0) for v in out if "!" <= v <= "~"}
    return sorted(out)


def _escapes(ch: str) -> list[str]:
    """Every way one character can be written in JSON, a URL, HTML or a Python/C string."""
    alts = [re.escape(ch)]
    cp = ord(ch)
    decomposed = unicodedata.normalize("NFD", ch)
    if decomposed != ch:  # ä as a + combining diaeresis
        alts.append(re.escape(decomposed))
    # \u{41} (JavaScript, Rust, Swift), \U00000041 (Python, C), \xe4 (Python's repr of Latin-1)
    alts.append(rf"\\u\{{0*{_hex_class(f'{cp:x}')}\}}")
    alts.append(rf"\\U0*{_hex_class(f'{cp:x}')}")
    if 0x80 <= cp <= 0xFF:
        alts.append(rf"\\x{_hex_class(f'{cp:02x}')}")
    if cp > 0xFFFF:  # JSON writes astral characters as a surrogate pair
        hi, lo = 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
        alts.append(rf"\\u{_hex_class(f'{hi:04x}')}\\u{_hex_class(f'{lo:04x}')}")
    else:
        alts.append(rf"\\u{_hex_class(f'{cp:04x}')}")
    if ch in _JSON_SHORT:
        alts.append(re.escape(_JSON_SHORT[ch]))
    # each UTF-8 byte percent-encoded (the % perhaps JSON-escaped, \u0025, or percent-encoded
    # again, %25), as \xHH, or quoted-printable (=C3=A4)
    alts.append("".join(rf"(?:%(?:25)?|\\u0025|\\x|=){_hex_class(f'{b:02x}')}"
                        for b in ch.encode("utf-8")))
    if ch == " ":
        alts.append(r"\+")
    # a character reference, its ; optional as browsers read it
    alts.append(rf"&#0*{cp};?")
    alts.append(rf"&#[xX]0*{_hex_class(f'{cp:x}')};?")
    alts += [re.escape(f"&{name}") for name in _entity_names().get(ch, ())]  # &sol; &hyphen;
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


def _encodings(secret: str) -> list[bytes]:
    """The secret's bytes as UTF-8 and, when it differs, as Latin-1 (how Basic auth sends a
    password with ä)."""
    out = [secret.encode("utf-8")]
    try:
        latin = secret.encode("latin-1")
    except UnicodeEncodeError:
        return out
    return out + [latin] if latin != out[0] else out


def _cores(raw: bytes, encode, block: int, bits: int) -> set[str]:
    """The characters of ``encode(bytes before + raw + bytes after)`` that only ``raw``
    decides, at each of the ``block`` alignments (``bits`` per character)."""
    cores = set()
    for align in range(block):
        enc = encode(bytes(align) + raw).decode("ascii")
        front = (align * 8 + bits - 1) // bits  # characters touched by the unknown bytes before
        back = (align + len(raw)) * 8 // bits  # characters wholly inside the secret's bits
        core = enc[front:back]
        if len(core) >= MIN_SECRET_CHARS:
            cores.add(core)
    return cores


def base64_cores(secret: str) -> set[str]:
    """The parts of base64 text that only the secret's bytes decide, at every alignment."""
    cores = {c for raw in _encodings(secret) for c in _cores(raw, base64.b64encode, 3, 6)}
    return cores | {c.translate(str.maketrans("+/", "-_")) for c in cores}


def _base64_forms(secret: str) -> set[str]:
    """The secret in base64 (standard and URL-safe, whole and inside a longer text), and its
    base64 in base64 again (a token base64-encoded twice, or inside an encoded header)."""
    wholes = {base64.b64encode(raw).decode("ascii") for raw in _encodings(secret)}
    wholes |= {w.translate(str.maketrans("+/", "-_")) for w in wholes}
    return {*base64_cores(secret), *wholes, *(c for w in wholes for c in base64_cores(w))}


def _base32_forms(secret: str) -> set[str]:
    """The secret in base32 (RFC 4648), whole and inside a longer text, matched in any case."""
    return {c for raw in _encodings(secret) for c in _cores(raw, base64.b32encode, 5, 5)}


def _any_case(c: str) -> frozenset[str]:
    return frozenset({c.lower(), c.upper()} if len(c.lower()) == len(c.upper()) == 1 else {c})


@functools.lru_cache(maxsize=64)
def _compiled(kept: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for every form of every secret, longest first. Kept per set of secrets: a
    registry is read afresh for every web request, and building the pattern costs milliseconds
    per secret.

    The forms are grouped by the characters they can start with, and each group is one branch
    that starts with that character class: the regex engine rejects a branch whose class does
    not match the next character in one step, so a position in the text costs a step per
    group (a few dozen), not one per form (hundreds, with base32 and the stacked base64)."""
    forms: list[tuple[int, frozenset[str], str]] = []  # (length, first characters, the rest)
    escapes: list[tuple[int, str]] = []  # a secret whose first character is written escaped
    for s in kept:
        rest = _GAP.join(_char_pattern(ch) for ch in s[1:])
        forms.append((len(s), frozenset(_variants(s[0])), rest))
        escapes.append((len(s), "(?:" + "|".join(_escapes(s[0])[1:]) + ")" + _GAP + rest))
    # reversed and rot13: what a model asked to "hide" a token writes; their letters in any
    # case and with gaps, not escaped (an escaped reversed token is two steps from the token)
    for t in {t for s in kept for t in (s[::-1], codecs.encode(s, "rot13"))} - set(kept):
        forms.append((len(t), frozenset(_variants(t[0])), _GAP.join(
            "[" + "".join(re.escape(v) for v in _variants(ch)) + "]" for ch in t[1:])))
    for f in {f for s in kept for f in _base64_forms(s)}:
        forms.append((len(f), frozenset(f[0]), _spelled(f[1:])))
    for f in {f for s in kept for f in _base32_forms(s)}:
        forms.append((len(f), _any_case(f[0]), _spelled(f[1:], exact=False)))
    for h in {raw.hex() for s in kept for raw in _encodings(s)}:
        pairs = [_spelled(h[i:i + 2], exact=False) for i in range(0, len(h), 2)]
        rest = _spelled(h[1], exact=False) + "".join(_HEX_SEP + p for p in pairs[1:])
        forms.append((len(h), _any_case(h[0]), rest))
    groups: dict[frozenset[str], list[tuple[int, str]]] = {}
    for length, first, rest in forms:
        groups.setdefault(first, []).append((length, rest))
    branches = []
    for first, rests in groups.items():
        rests.sort(key=lambda r: -r[0])
        cls = "[" + "".join(re.escape(c) for c in sorted(first)) + "]"
        branches.append((rests[0][0], cls + _GAP + "(?:" + "|".join(r for _, r in rests) + ")"))
    branches.sort(key=lambda b: -b[0])  # a longer form before a shorter one it may begin with
    escapes.sort(key=lambda e: -e[0])
    lead = "[" + "".join(re.escape(c) for c in sorted({"\\", "%", "&", "=", "+"})) + "]"
    branches.append((0, f"(?={lead})(?:" + "|".join(e for _, e in escapes) + ")"))
    # a cheap first-character test keeps a multi-megabyte body fast to scan
    first = set("\\%&+=").union(*groups)
    head = "[" + "".join(re.escape(c) for c in sorted(first)) + "]"
    return re.compile(f"(?={head})(?:{'|'.join(b for _, b in branches)})")


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
        """``value`` with every secret form replaced; None and "" pass through.

        A text with characters NFKC would change is matched through a shadow of it, each
        such character replaced by the one it stands for (𝐓 → T: one character for one, so
        the shadow's positions are the text's); the text's own spans are replaced."""
        if not value or self.pattern is None:
            return value
        if value.isascii() or unicodedata.is_normalized("NFKC", value):
            return self.pattern.sub(REDACTED, value)
        shadow = value.translate(_compatibility_table())
        out, last = [], 0
        for m in self.pattern.finditer(shadow):
            out += [value[last:m.start()], REDACTED]
            last = m.end()
        return "".join([*out, value[last:]]) if out else value

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


# the service's own secrets, read from the environment: an agent can know one (the
# after-change workflow's EXAM_API_TOKEN) and echo it; each notification channel declares its
# own (exam/channels.py: an n8n instance holds the team's LINE channel token)
SERVICE_SECRETS = ("EXAM_API_TOKEN", "EXAM_VIEWER_TOKEN", "EXAM_SECRET_KEY", "PGPASSWORD")

# the query keys of a store URL whose values are settings, shown as they are; any other value
# (``password=``, ``sslpassword=``, a key not known here) is taken for a credential: masked in
# messages (``exam.db.engine.shown``) and redacted wherever it turns up (``store_secrets``)
STORE_SETTINGS = frozenset({
    "sslmode", "connect_timeout", "application_name", "target_session_attrs", "gssencmode",
    "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
    "tcp_user_timeout", "client_encoding", "load_balance_hosts", "channel_binding",
    "require_auth", "sslcompression", "sslrootcert", "sslcert", "sslcrl"})


def store_secrets(target: str) -> list[str]:
    """The credentials a store URL carries: its password (``user:password@``) and every
    query value that is not a setting (``?password=…``), as written and decoded. Parsed by
    hand, so a URL too malformed for ``urlsplit`` still gives them up."""
    target = str(target or "")
    if "://" not in target:
        return []
    rest = target.partition("://")[2]
    out: list[str] = []
    if "@" in rest:
        userinfo, _, rest = rest.rpartition("@")
        out.append(userinfo.partition(":")[2])
    for pair in rest.partition("?")[2].split("&"):
        key, _, value = pair.partition("=")
        if unquote(key).strip().lower() not in STORE_SETTINGS:
            out.append(value)
    return [v for s in out if s for v in dict.fromkeys((s, unquote(s), unquote(s.replace("+", " "))))]


def service_secrets(env: Mapping[str, str]) -> list[str]:
    """The values of ``SERVICE_SECRETS`` in ``env`` (``PGPASSWORD``, the store's password as
    libpq reads it, among them), the secrets each notification channel declares
    (``exam.channels``: its tokens, the credentials in its URL), and those in ``EXAM_DB``
    (``store_secrets``): never shown, whichever agent hands one back."""
    names = [*SERVICE_SECRETS, *(name for c in CHANNELS.values() for name in c.secrets)]
    out = []
    for name in names:
        value = (env.get(name) or "").strip()
        out += [value, *value.split()[1:]]  # "Bearer xyz": the token alone too
    for name in (name for c in CHANNELS.values() for name in c.secret_urls):
        out += url_secrets((env.get(name) or "").strip())
    out += store_secrets((env.get("EXAM_DB") or "").strip())
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
