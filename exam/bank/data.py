"""What a bank file may hold: JSON data (text keys; strings, finite numbers, booleans, null,
lists and objects), read from JSON or YAML without a hang or a traceback.

YAML can say more than JSON: a key ``1`` or ``yes`` that is not text, ``!!binary`` bytes, a
``!!set``, NaN, an alias that refers to itself, an alias bomb (nine aliases of nine aliases
of ...: a few lines that expand to billions of nodes, or a long text aliased thousands of
times: gigabytes from a file of kilobytes). JSON can say NaN, Infinity and ``1e999``.
None of these can be sent, digested or graded; each is named here by its question and field.
A date written unquoted (``2026-09-16``) stays the text written, as in a JSON bank.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from exam.textsafe import LONE_SURROGATE, nests_deeper

MAX_DEPTH = 100  # nesting of lists and objects; a real bank stays under 15
MAX_NODES = 1_000_000  # values once every YAML alias is expanded; a real bank stays far under
# characters of text once every YAML alias is expanded, or the file's own length if longer
# (a file is never refused for the text it writes out): few values of a long text, aliased
# 10,000 times, are gigabytes to digest, store and send from a file of kilobytes
MAX_CHARS = 50_000_000


class DataError(ValueError):
    """A file that cannot be read as a bank's data at all; the message is the one-line reason."""


class _Pairs(dict):
    """A JSON object that had a key more than once (json.loads keeps the last, silently)."""

    duplicates: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    out = _Pairs(pairs)
    if len(out) < len(pairs):
        seen: set[str] = set()
        out.duplicates = tuple(k for k, _ in pairs if k in seen or seen.add(k))
    return out


def load_json(text: str) -> Any:
    """A JSON bank's data; DataError for nesting too deep or a number Python cannot hold.
    json.JSONDecodeError (with its line and column) for text that is not JSON."""
    text = text.removeprefix("\ufeff")  # a byte order mark (Notepad's UTF-8) is not content
    if nests_deeper(text, MAX_DEPTH):  # found without parsing: json.loads would recurse
        raise DataError(f"nested deeper than {MAX_DEPTH} levels of lists and objects")
    try:
        return json.loads(text, object_pairs_hook=_pairs)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise DataError(f"nested deeper than {MAX_DEPTH} levels of lists and objects") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise DataError(f"invalid JSON: {exc}".split(";")[0]) from None


@functools.cache
def _yaml_loader():
    import yaml

    class BankLoader(yaml.SafeLoader):
        """Safe YAML, no implicit dates (``2026-09-16`` is the text written, as in JSON), and
        a key given twice in one mapping is an error (YAML would keep the last, silently)."""

        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue  # a merge's keys are overridden by the mapping's own
                    key = self.construct_object(key_node, deep=True)
                    try:
                        if key in seen:
                            raise yaml.constructor.ConstructorError(
                                None, None, f"duplicate key {key!r} (also on line "
                                            f"{seen[key]}): only one is read",
                                key_node.start_mark)
                    except TypeError:
                        continue  # unhashable: SafeConstructor says so
                    seen[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

    BankLoader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return BankLoader


def yaml_root(text: str):
    """The composed YAML node of a bank (None for an empty file); DataError for nesting too
    deep (found on the event stream, before any recursion) or aliases that expand too far."""
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise DataError(f"nested deeper than {MAX_DEPTH} levels of lists and mappings")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    root = yaml.compose(text, Loader=_yaml_loader())
    if root is not None:
        _check_expansion(root, max(MAX_CHARS, len(text)))
    return root


def _children(node: Any) -> list | None:
    """A YAML node's children (a mapping's keys and values), None for a scalar."""
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [x for pair in node.value for x in pair]
    return None


def load_yaml(text: str) -> Any:
    """A YAML bank's data: yaml.YAMLError (with its mark) for text that is not YAML,
    DataError for what is YAML but not a bank's data."""
    root = yaml_root(text)
    if root is None:
        return None
    loader = _yaml_loader()(text)
    try:
        return loader.construct_document(root)
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise DataError(f"invalid YAML: {exc}".split(";")[0]) from None
    finally:
        loader.dispose()


def _check_expansion(root: Any, max_chars: int) -> None:
    """Count the composed document's nodes and scalar characters as they would be once every
    shared (aliased) part is used as often as it is, without expanding it; DataError for an
    alias inside itself, past MAX_NODES, past ``max_chars`` characters of scalars, or nested
    (aliases within aliases) deeper than MAX_DEPTH."""
    sizes: dict[int, int] = {}
    chars: dict[int, int] = {}  # a collection's scalars' characters, expanded
    depths: dict[int, int] = {}
    on_path: set[int] = set()

    def chars_of(kid: Any) -> int:
        return chars.get(id(kid), len(kid.value) if isinstance(kid.value, str) else 0)

    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        kids = _children(node)
        if kids is None:
            continue
        if done:
            on_path.discard(id(node))
            size = 1 + sum(sizes.get(id(k), 1) for k in kids)
            if size > MAX_NODES:
                raise DataError(f"expands to more than {MAX_NODES:,} values (YAML aliases of "
                                f"aliases?): refused")
            text = sum(chars_of(k) for k in kids)
            if text > max_chars:
                raise DataError(f"expands to more than {max_chars:,} characters (YAML aliases "
                                f"of a long text?): refused")
            chars[id(node)] = text
            depth = 1 + max((depths.get(id(k), 0) for k in kids), default=0)
            if depth > MAX_DEPTH:
                raise DataError(f"nested deeper than {MAX_DEPTH} levels of lists and "
                                f"mappings once its aliases are expanded")
            sizes[id(node)], depths[id(node)] = size, depth
            continue
        if id(node) in sizes:
            continue
        if id(node) in on_path:
            raise DataError("an alias refers to a mapping or list that holds it: a value "
                            "without end")
        on_path.add(id(node))
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in sizes)


def _what(value: Any) -> str:
    if isinstance(value, bool):
        return (f"{str(value).lower()} is a boolean, not text (YAML reads yes, no, on, off, "
                f"true and false unquoted as booleans)")
    if value is None:
        return "null is not text (YAML reads ~, null and an empty key as null)"
    if isinstance(value, int | float):
        return f"{value!r} is a number, not text"
    return f"{value!r} is a {type(value).__name__}, not text"


_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def problems_in(data: Any) -> list[tuple[str, str]]:
    """(where, message) for every value JSON cannot hold: a key that is not text, a lone
    surrogate, NaN or an infinity, bytes, a set or a date from a YAML tag. Each is named by
    its question's case_no (else its place in the file) and its field."""
    found: list[tuple[str, str]] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, str):
            if LONE_SURROGATE.search(value):
                found.append((where, "holds a lone surrogate (a \\ud800-style escape without "
                                     "its pair), which is not text: write the character "
                                     "itself, or its escaped pair"))
        elif isinstance(value, dict):
            for key in getattr(value, "duplicates", ()):
                found.append((f"{where}.{key}" if where else key,
                              "given more than once in one object: only the last would be "
                              "read"))
            for key, item in value.items():
                if not isinstance(key, str):
                    found.append((f"{where}.{key}" if where else str(key),
                                  f"key {_what(key)}: quote it" + (
                                      f' ("{key}")' if isinstance(key, int | float)
                                      and not isinstance(key, bool) else "")))
                    continue
                if LONE_SURROGATE.search(key):
                    walk(key, f"{where}.{key!r}" if where else repr(key))
                    continue
                walk(item, f"{where}.{key}" if where else key)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]")
        elif isinstance(value, float) and not math.isfinite(value):
            found.append((where, f"{_NON_FINITE[repr(value)]} is not a number JSON can hold "
                                 f"(NaN, Infinity, or beyond ±1.8e308)"))
        elif value is not None and not isinstance(value, bool | int | float):
            found.append((where, f"a {type(value).__name__} value, which JSON cannot hold (a "
                                 f"YAML tag such as !!binary, !!set or !!timestamp?): write it "
                                 f"as a string"))

    questions = data.get("questions") if isinstance(data, dict) else data
    if isinstance(data, dict):
        top = _Pairs({k: v for k, v in data.items() if k != "questions"})
        top.duplicates = getattr(data, "duplicates", ())  # a _Pairs keeps them; a dict has none
        walk(top, "")
    for i, question in enumerate(questions if isinstance(questions, list) else []):
        case_no = question.get("case_no") if isinstance(question, dict) else None
        named = isinstance(case_no, str) and case_no and not LONE_SURROGATE.search(case_no)
        walk(question, case_no if named else f"questions[{i}]")
    return found
