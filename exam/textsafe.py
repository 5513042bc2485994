"""Text an agent or a label wrote, made safe for where it is shown: a spreadsheet, a terminal,
an XML file. Each function is the one place its rule lives (docs/reports.md says the rules).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# -- spreadsheets -----------------------------------------------------------------------

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """A cell a spreadsheet will not run: text starting with = + - @ tab or CR gets a leading
    ``'`` (and so does text already starting with ``'``, so ``csv_uncell`` can undo it).
    Plain numbers (``-0.12``) and non-text values are left alone."""
    if not isinstance(value, str) or not value or _NUMBER.fullmatch(value):
        return value
    if value.startswith(FORMULA_START) or value.startswith("'"):
        return "'" + value
    return value


def csv_uncell(value: str) -> str:
    """The value ``csv_cell`` was given (for reading the tool's own exports back)."""
    if value.startswith("'") and (value[1:].startswith(FORMULA_START)
                                  or value[1:].startswith("'")):
        return value[1:]
    return value


# -- web pages --------------------------------------------------------------------------

# the bidirectional overrides and isolates: they reorder what is shown after them, so a reply,
# a category or a review note could show a reviewer other words than it holds
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069]")


def page_text(value: Any) -> Any:
    """Every ``{{ }}`` of a page or HTML report (Jinja's ``finalize``): bidi controls shown as
    ``\\u202e``, as a terminal shows them; anything else as it is. Escaping stays Jinja's, and
    what is already markup stays markup (these characters are never part of a tag)."""
    if not isinstance(value, str) or not _BIDI.search(value):
        return value
    shown = _BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", value)
    return type(value)(shown) if hasattr(value, "__html__") else shown


# -- terminals --------------------------------------------------------------------------

# C0 and C1 controls, DEL, and the bidirectional overrides that reorder what is shown
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\x1b"}


def terminal(text: str) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``, ``\\n``), so a
    reply cannot move the cursor, clear the screen, retitle the window or fake a line."""
    return _CONTROL.sub(lambda m: _NAMED.get(m.group(), f"\\u{ord(m.group()):04x}"
                                             if ord(m.group()) > 0xFF
                                             else f"\\x{ord(m.group()):02x}"), text)


def terminal_data(value: Any) -> Any:
    """A report (dicts, lists, strings) with ``terminal`` applied to every string in it, the
    keys of its dicts too (a scorecard's categories are keys, and are shown).

    What holds nothing to escape is returned as it is, not copied: a scorecard of 10,000
    cells was copied whole (~15 MB) to print a page of text. Renderers only read it. A list
    or dict met again (the checks of identical replies are one list, see scorecard.build) is
    escaped once: the input is alive throughout, so its ids stay its own."""
    # (a printable key, as nearly all are, holds nothing to escape: no regex run for it)
    return _strings_mapped(value, terminal, lambda k: not k.isprintable(), {})


def _strings_mapped(value: Any, fn: Callable[[str], str], key_may_change: Callable[[str], bool],
                    seen: dict[int, Any]) -> Any:
    """``value`` with ``fn`` applied to every string in it and to the keys for which
    ``key_may_change``; copied only where something changed, each list or dict once."""
    if isinstance(value, str):
        return fn(value)
    if not isinstance(value, (list, dict, tuple)):
        return value
    done = seen.get(id(value), _NOT_SEEN)
    if done is not _NOT_SEEN:
        return done
    if isinstance(value, tuple):
        out: Any = [_strings_mapped(v, fn, key_may_change, seen) for v in value]
    elif isinstance(value, list):
        out = [_strings_mapped(v, fn, key_may_change, seen) for v in value]
        out = value if all(a is b for a, b in zip(out, value, strict=True)) else out
    else:
        pairs = [(fn(k) if isinstance(k, str) and key_may_change(k) else k,
                  _strings_mapped(v, fn, key_may_change, seen)) for k, v in value.items()]
        out = value if all(k2 is k and v2 is v for (k2, v2), (k, v)
                           in zip(pairs, value.items(), strict=True)) else dict(pairs)
    seen[id(value)] = out
    return out


# -- Markdown ---------------------------------------------------------------------------

# what a Markdown renderer would make markup of: HTML (tags, autolinks, entities), a link's
# destination or a reference definition after "]", and the controls a terminal would obey
_MARKDOWN = re.compile(r"[&<>\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\]"
                       r"(?=[(:])")
_MARKDOWN_SAFE = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "]": "]\\"}


def markdown_text(text: str) -> str:
    """``text`` as text in a Markdown file: ``& < >`` as entities (no tag, no ``<javascript:…>``
    autolink), ``](`` and ``]:`` broken by a backslash (no ``[click](javascript:…)`` link, no
    reference definition), bidi and control characters shown as escapes, as ``terminal``
    shows them. Lines stay lines; ``[`` alone stays (``fact[0]``)."""
    return _MARKDOWN.sub(lambda m: _MARKDOWN_SAFE.get(m.group()) or terminal(m.group()), text)


def markdown_data(value: Any) -> Any:
    """A report with ``markdown_text`` applied to every string in it, the keys of its dicts
    too; as ``terminal_data``, copied only where something changed."""
    return _strings_mapped(value, markdown_text, lambda k: _MARKDOWN.search(k) is not None, {})


_NOT_SEEN = object()


# -- decoded JSON -----------------------------------------------------------------------

LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads keeps a pair as one character


def clean_text(text: str) -> str:
    """Lone surrogates (from a JSON escape or an odd charset) cannot be encoded as UTF-8, so
    not stored or printed: each becomes U+FFFD."""
    return LONE_SURROGATE.sub("\ufffd", text) if LONE_SURROGATE.search(text) else text


def no_lone_surrogates(value: Any) -> Any:
    """Parsed JSON with every lone surrogate (``"\\ud800"`` decodes to one) replaced by
    U+FFFD (``clean_text`` of every string in it)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [no_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {no_lone_surrogates(k): no_lone_surrogates(v) for k, v in value.items()}
    return value


# -- XML --------------------------------------------------------------------------------

# what XML 1.0 allows: tab, LF, CR, and U+0020–U+D7FF, U+E000–U+FFFD, U+10000–U+10FFFF
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` with characters XML 1.0 cannot hold (ESC, NUL, lone surrogates, U+FFFE)
    replaced by a visible ``\\x1b``-style escape, so strict parsers accept the file."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) <= 0xFF
                        else f"\\u{ord(m.group()):04x}", text)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET_RUN = re.compile(r"[\[{]+|[\]}]+")


def nests_deeper(text: str, limit: int) -> bool:
    """Whether JSON ``text`` nests lists and objects deeper than ``limit``, found without
    parsing it: brackets outside strings, counted run by run. ``json.loads`` would find out
    by recursing until the interpreter's limit (a RecursionError, or finalizers run with no
    stack left). An agent's reply and a bank file are both checked with it."""
    if text.count("[") + text.count("{") <= limit:  # all but a hostile text
        return False
    depth = 0
    for run in _BRACKET_RUN.finditer(_JSON_STRING.sub("", text)):
        step = len(run.group())
        depth += step if run.group()[0] in "[{" else -step
        if depth > limit:
            return True
    return False
