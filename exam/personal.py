"""Personal data and credentials found by their shape, for text captured from production.

``exam.redact`` removes the secrets the tool *knows* (every ``${VAR}`` value, the service's
own tokens). A work order captured from a customer's conversation holds what nobody
registered: a phone number, an e-mail address, a card number, somebody's API key pasted into
a chat. ``scrub`` replaces each by its kind (``[redacted phone]``) and says what it replaced
and where, never the value. Shapes are conservative on purpose: an order number (A10302), a
price (1,280) or a date (2026-09-16) is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# a key whose value is a credential whatever it looks like ("api_key", "X-Auth-Token")
SECRET_KEY = re.compile(r"(?i)(api[_-]?key|token|secret|passw(or)?d|authori[sz]ation|cookie|"
                        r"credential|private[_-]?key|session[_-]?id)")

_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # credentials first: a JWT's or a key's digits are no phone number
    ("token", re.compile(r"\beyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}")),  # a JWT (n8n's API keys)
    ("token", re.compile(r"(?i)\bbearer\s+[\w.~+/-]{8,}=*")),
    ("token", re.compile(r"\b(?:sk|pk|rk|ghp|gho|xox[abpr]|AKIA|AIza)[\w-]{12,}")),
    # a long run of ASCII letters and digits mixed (checked in _counts): a key, a session id,
    # a signature. Each pattern starts only where its run starts (the lookbehinds): tried at
    # every position of a long run it cost time squared (250,000 characters: minutes)
    ("long token", re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{32,}(?![A-Za-z0-9_-])")),
    ("email", re.compile(r"(?<![\w.%+-])[\w.%+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
                         r"\.[A-Za-z]{2,}")),
    ("card number", re.compile(r"(?<![\d-])\d{4}(?:[ -]?\d{4}){2}[ -]?\d{1,7}(?![\d-])")),
    ("national id", re.compile(r"\b[A-Z][12]\d{8}\b")),  # Taiwan's
    # +886 912 345 678, 0912-345-678, 0912345678, (02) 2345-6789, 02-23456789
    ("phone", re.compile(r"(?<![\w+])\+\d{1,3}[ -]?\(?\d{1,4}\)?(?:[ -]?\d{2,4}){2,4}(?!\d)")),
    ("phone", re.compile(r"(?<!\d)09\d{2}[ -]?\d{3}[ -]?\d{3}(?!\d)")),
    ("phone", re.compile(r"(?<![\w-])\(?0\d{1,2}\)?[ -]?\d{3,4}[ -]?\d{4}(?![\d-])")),
)


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        n = int(c) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def _counts(kind: str, found: str) -> bool:
    """A card number must pass the Luhn check (16 digits of an order are not one); a long
    token must mix letters and digits."""
    if kind == "long token":  # letters and digits mixed: not a word, not a number
        return any(c.isdigit() for c in found) and any(c.isalpha() for c in found)
    if kind == "card number":
        digits = re.sub(r"\D", "", found)
        return 13 <= len(digits) <= 19 and _luhn(digits)
    return True


def scrub_text(text: str) -> tuple[str, list[str]]:
    """``text`` with personal data and credentials replaced by their kind; the kinds found."""
    kinds: list[str] = []
    for kind, pattern in _SHAPES:
        def sub(m: re.Match[str], kind: str = kind) -> str:
            if not _counts(kind, m.group(0)):
                return m.group(0)
            shown = kind.removeprefix("long ")
            kinds.append(shown)
            return f"[redacted {shown}]"
        text = pattern.sub(sub, text)
    return text, kinds


@dataclass(frozen=True, slots=True)
class Scrubbed:
    """A value with what was taken out of it: ``found`` lines such as ``phone at question``."""

    value: Any
    found: tuple[str, ...]


MAX_DEPTH = 100  # what a bank may nest (exam.bank.data)


def scrub(value: Any, secrets: Callable[[str], str | None] = lambda s: s, where: str = "",
          ) -> Scrubbed:
    """``value`` (parsed JSON) with registered secrets (``secrets``: a Redactor's ``text``),
    credentials and personal data replaced in every string, a key named like a credential
    (``api_key``, ``Authorization``) with text in it emptied whatever the text looks like (a
    figure such as ``total_tokens: 1830`` is kept); ``found`` names
    each kind and where (``phone at contact.tel``), never the value."""
    found: list[str] = []

    def at(path: str) -> str:
        return path or "(the whole value)"

    def walk(v: Any, path: str, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise ValueError(f"nested deeper than {MAX_DEPTH} levels at {at(path)}")
        if isinstance(v, str):
            known = secrets(v) or ""
            if known != v:
                found.append(f"secret at {at(path)}")
            clean, kinds = scrub_text(known)
            found.extend(f"{k} at {at(path)}" for k in dict.fromkeys(kinds))
            return clean
        if isinstance(v, list):
            return [walk(x, f"{path}[{i}]", depth + 1) for i, x in enumerate(v)]
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                key = walk(k, path, depth + 1) if isinstance(k, str) else k
                sub = f"{path}.{key}" if path else str(key)
                if isinstance(k, str) and SECRET_KEY.search(k) and isinstance(x, str) and x:
                    found.append(f"credential at {sub}")
                    out[key] = "[redacted credential]"
                else:
                    out[key] = walk(x, sub, depth + 1)
            return out
        return v

    return Scrubbed(walk(value, where, 0), tuple(dict.fromkeys(found)))
