"""Load and validate question banks (``bank/*.json``) into graders.Question objects.

Every problem becomes a Problem naming the file, the case_no and the field; all of a
file's problems are reported together so one ``exam bank check`` finds them all.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from exam.bank.data import DataError, load_json, load_yaml, problems_in, yaml_root
from exam.errors import PLACEHOLDER, BankError, Problem, is_placeholder
from graders import Question, normalize
from graders.kinds import ABSENT, KINDS, PATTERNS_SCHEMA, KeyProblems, patterns, unknown_keys

# a question's own keys; what it is graded on comes from the check kinds (graders/checks.py)
DATA_KEYS = ("case_no", "category", "severity", "input", "golden", "counterexamples", "tags",
             "notes")
FILE_KEYS = ("agent", "description", "options", "defaults", "questions")
OPTION_KEYS = ("fold_script",)
# Keys that do not change how a reply is graded: left out of the question digest.
UNGRADED_KEYS = ("golden", "counterexamples", "tags", "notes", "category", "severity")


@dataclass(frozen=True, slots=True)
class Item:
    """A question as the bank holds it: the grading spec plus what surrounds it."""

    question: Question
    golden: tuple[Any, ...] = ()
    counterexamples: tuple[Any, ...] = ()
    tags: tuple[str, ...] = ()
    notes: str = ""
    digest: str = ""  # of what affects grading: a change re-flags stored runs
    raw: Mapping[str, Any] = field(default_factory=dict)
    # of the same, exactly as the grader reads it: the digest sorts keys and writes 1 and "1"
    # alike, but the checks of fields, budget and tool arguments come in the bank's order, and
    # a YAML key 1 is not "1" to a tool argument (the grade cache's question key)
    graded_key: str = ""

    @property
    def case_no(self) -> str:
        return self.question.case_no

    @property
    def category(self) -> str:
        return self.question.category


@dataclass(frozen=True, slots=True)
class Bank:
    path: str
    agent: str
    items: tuple[Item, ...]
    digest: str  # of what affects grading (each question's digest)
    # of the whole text as read from its file: any edit, even one no grade reads (a category,
    # a note), gives another ("" for a bank not read from a file)
    content_digest: str = ""

    def by_case(self) -> dict[str, Item]:
        return {i.case_no: i for i in self.items}


def question_keys() -> tuple[str, ...]:
    """Every key a question may have: its own and each registered check kind's."""
    return DATA_KEYS + _kind_keys()


def _kind_keys() -> tuple[str, ...]:
    return tuple(key for kind in KINDS.values() for key in kind.keys)


def default_keys() -> tuple[str, ...]:
    """The keys ``defaults`` may give every question."""
    return tuple(k for k in question_keys()
                 if k not in ("case_no", "input", "golden", "counterexamples"))


def _registered() -> tuple[tuple[str, str], ...]:
    """Each check kind's keys and their schemas, as text (what the validators are kept by)."""
    return tuple((key, json.dumps(schema, sort_keys=True)) for kind in KINDS.values()
                 for key, schema in ((kind.key, kind.schema), *kind.also.items()))


def json_schema() -> dict[str, Any]:
    """The whole JSON Schema of a bank file: the file's (a question's own keys) and every
    check kind's keys (``exam bank schema`` prints it for editors)."""
    schema = json.loads(resources.files("exam").joinpath("schema/bank.schema.json").read_text())
    properties = schema["$defs"]["question"]["properties"]
    for key, fragment in _registered():
        properties[key] = json.loads(fragment)
    return schema


def _validators():
    return _validators_for(_registered())


@lru_cache(maxsize=4)
def _validators_for(registered: tuple[tuple[str, str], ...]):
    """The validators of a question and of a budget, for this set of check kinds."""
    from jsonschema import Draft202012Validator

    defs = json_schema()["$defs"]

    def sub(name: str):
        return Draft202012Validator({"$defs": defs, "$ref": f"#/$defs/{name}"})

    return sub("question"), Draft202012Validator(dict(defs["question"]["properties"]["budget"]))


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _describe(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _schema_message(err) -> str:
    found = _describe(err.instance)
    if err.validator == "type":
        want = err.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        return f"expected {want}, found {found}"
    if err.validator == "enum":
        return f"expected one of {', '.join(map(str, err.validator_value))}, found {found}"
    if err.validator in ("minimum", "exclusiveMinimum"):
        return f"expected a number ≥ {err.validator_value}, found {found}"
    if err.validator == "minLength":
        return "expected a non-empty string, found \"\""
    if err.validator == "required":
        return err.message.replace("is a required property", "is required")
    return err.message


def _digest(obj: Any) -> str:
    data = json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def input_text(work_order: Mapping[str, Any], *, fold: bool = True) -> str:
    """Every string in the work order, normalised: what quoting and numbers are checked against."""
    return normalize("\n".join(_strings(work_order)), fold=fold)


class _Collector:
    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []

    def add(self, where: str, message: str) -> None:
        self.problems.append(Problem(self.file, where, message))


def _merge(defaults: Mapping[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
    merged = {**defaults, **raw}
    if isinstance(defaults.get("budget"), dict) and isinstance(raw.get("budget"), dict):
        merged["budget"] = {**defaults["budget"], **raw["budget"]}
    if isinstance(defaults.get("tags"), list) and isinstance(raw.get("tags"), list):
        merged["tags"] = list(dict.fromkeys([*defaults["tags"], *raw["tags"]]))
    return merged


def _build(col: _Collector, label: str, q: Mapping[str, Any], fold: bool) -> Item | None:
    """The question, each check kind reading its keys (graders/checks.py); None when any
    of them is a problem."""
    before = len(col.problems)
    built: dict[str, Any] = {}  # Question field → value, for the built-in kinds
    registered: dict[str, Any] = {}
    graded = False
    for kind in KINDS.values():
        try:
            value = kind.value_in(q, fold)
        except KeyProblems as exc:
            for where, message in exc.problems:
                col.add(f"{label}.{where}", message)
            graded = True  # given, only wrong: "nothing to grade" would say too much
            continue
        except ValueError as exc:
            col.add(f"{label}.{kind.key}", str(exc))
            graded = True
            continue
        if value is ABSENT:
            continue
        if kind.attribute:
            built[kind.attribute] = value
        else:
            registered[kind.key] = value
        graded = graded or (kind.grades is not None and kind.grades(value))
    if not graded:
        col.add(label, "nothing to grade: give " + _or([kind.named or kind.key
                                                       for kind in KINDS.values()
                                                       if kind.grades is not None]))
    if len(col.problems) > before:
        return None
    question = Question(
        case_no=q["case_no"], input=q["input"], category=q.get("category", ""),
        severity=q.get("severity", "major"), fold_script=fold, registered_checks=registered,
        input_text=input_text(q["input"], fold=fold), **built,
    )
    graded_raw = {k: v for k, v in q.items() if k not in UNGRADED_KEYS}
    return Item(question, tuple(q.get("golden", ())), tuple(q.get("counterexamples", ())),
                tuple(q.get("tags", ())), q.get("notes", ""), _digest(graded_raw), dict(q),
                hashlib.blake2b(repr(graded_raw).encode(), digest_size=8).hexdigest())


def _or(words: list[str]) -> str:
    return ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else "".join(words)


def _pattern_problems(col: _Collector, label: str, q: Mapping[str, Any]) -> None:
    """Every bad pattern of a question the schema found wrong, so one pass reports them all."""
    for kind in KINDS.values():
        for key, schema in ((kind.key, kind.schema), *kind.also.items()):
            if schema == PATTERNS_SCHEMA:
                problems: list[tuple[str, str]] = []
                patterns(q.get(key, []), key, False, problems)
                for where, message in problems:
                    col.add(f"{label}.{where}", message)


def _looks(case_no: str) -> str:
    """A case number as a reader tells case numbers apart: ``T-01``, ``t-01``, ``T-０１`` and
    ``T-01 `` (and an accented letter written either way) read the same."""
    return " ".join(unicodedata.normalize("NFKC", case_no).casefold().split())


def parse_bank(data: Any, file: str) -> tuple[Bank | None, list[Problem]]:
    """Validate a parsed bank (JSON or YAML): the bank (None if any problem), every problem."""
    if not_data := problems_in(data):
        return None, [Problem(file, where, message) for where, message in not_data]
    col = _Collector(file)
    qvalidator, _ = _validators()
    stem = Path(file).stem
    if isinstance(data, list):
        agent, defaults, options, questions = stem, {}, {}, data
    elif isinstance(data, dict):
        misspelt = unknown_keys(data, FILE_KEYS)
        for key, msg in misspelt:
            col.add(key, msg)
        agent = data.get("agent", stem)
        defaults = data.get("defaults", {})
        options = data.get("options", {})
        questions = data.get("questions")
        if not isinstance(agent, str) or not agent:
            col.add("agent", f"expected a non-empty string, found {_describe(agent)}")
        if not isinstance(defaults, dict):
            col.add("defaults", f"expected object, found {_describe(defaults)}")
            defaults = {}
        if not isinstance(options, dict):
            col.add("options", f"expected object, found {_describe(options)}")
            options = {}
        for key, msg in unknown_keys(options, OPTION_KEYS):
            col.add(f"options.{key}", msg)
        if not isinstance(options.get("fold_script", False), bool):
            col.add("options.fold_script", "expected true or false")
        for key, msg in unknown_keys(defaults, default_keys()):
            col.add(f"defaults.{key}", msg)
        bad_defaults = set()
        for err in qvalidator.iter_errors(defaults):
            col.add(_path(["defaults", *err.absolute_path]), _schema_message(err))
            if err.absolute_path:
                bad_defaults.add(err.absolute_path[0])
        # reported once above, not again in every question that inherits it
        defaults = {k: v for k, v in defaults.items() if k not in bad_defaults}
        if questions is None:
            if not any("'questions'" in msg for _, msg in misspelt):
                col.add("questions", "is required: the list of questions")
            questions = []
        elif not isinstance(questions, list):
            col.add("questions", f"expected array, found {_describe(questions)}")
            questions = []
    else:
        col.add("", f"expected a JSON array of questions or an object with 'questions', "
                    f"found {type(data).__name__}")
        return None, col.problems

    fold = bool(options.get("fold_script", True))
    items: list[Item] = []
    seen: dict[str, int] = {}
    looks: dict[str, str] = {}  # a case number as a reader tells them apart → as written
    for index, raw in enumerate(questions):
        if not isinstance(raw, dict):
            col.add(f"questions[{index}]", f"expected object, found {_describe(raw)}")
            continue
        case_no = raw.get("case_no")
        label = case_no if isinstance(case_no, str) and case_no else f"questions[{index}]"
        if "case_no" not in raw:
            col.add(label, "missing 'case_no' (each question needs a unique id, e.g. \"W1-01\")")
        elif isinstance(case_no, str) and case_no in seen:
            col.add(f"{label}.case_no",
                    f"duplicate case_no {case_no!r} (also questions[{seen[case_no]}])")
        elif isinstance(case_no, str) and (other := looks.get(_looks(case_no))) is not None:
            col.add(f"{label}.case_no",
                    f"case_no {case_no!r} reads as {other!r} (questions[{seen[other]}]) once "
                    f"width, case and spaces are set aside: reports and --only would show two "
                    f"questions that look the same; give each a case number of its own")
        elif isinstance(case_no, str):
            seen[case_no] = index
            looks[_looks(case_no)] = case_no
        if "input" not in raw:
            col.add(label, "missing 'input' (the work order POSTed to the agent)")
        for key, msg in unknown_keys(raw, question_keys()):
            col.add(f"{label}.{key}", msg)
        q = _merge(defaults, raw)
        errors = list(qvalidator.iter_errors(q))
        for err in errors:
            col.add(_path([label, *err.absolute_path]), _schema_message(err))
        if errors or "input" not in q or "case_no" not in q:
            _pattern_problems(col, label, q)
            continue
        item = _build(col, label, q, fold)
        if item is not None:
            items.append(item)
    if col.problems:
        return None, col.problems
    digest = _digest([{"case_no": i.case_no, "d": i.digest} for i in items])
    return Bank(file, agent, tuple(items), digest), []


YAML_SUFFIXES = (".yaml", ".yml")
BANK_SUFFIXES = (".json", *YAML_SUFFIXES)


def _yaml_lines(text: str) -> dict[str, int]:
    """Line of every place a problem can name (``W2-07.expect_facts[0]``), from YAML's nodes."""
    import yaml

    lines: dict[str, int] = {}

    def walk(node, where: str) -> None:
        lines.setdefault(where, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = str(key.value)
                lines.setdefault(f"{where}.{name}" if where else name, key.start_mark.line + 1)
                walk(value, f"{where}.{name}" if where else name)
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                walk(value, f"{where}[{i}]")

    root = yaml_root(text)
    if root is None:
        return lines
    questions = root
    if isinstance(root, yaml.MappingNode):
        walk(root, "")
        questions = next((v for k, v in root.value if k.value == "questions"), None)
    if isinstance(questions, yaml.SequenceNode):
        for i, q in enumerate(questions.value):
            walk(q, f"questions[{i}]")
            case_no = next((v.value for k, v in getattr(q, "value", ())
                            if isinstance(q, yaml.MappingNode) and k.value == "case_no"
                            and isinstance(v, yaml.ScalarNode)), None)
            if case_no:
                walk(q, str(case_no))
    return lines


def _locate(problems: list[Problem], lines: dict[str, int]) -> list[Problem]:
    """Give each problem the line of the deepest place of its ``where`` the file has."""
    out = []
    for p in problems:
        where = p.where
        while where and where not in lines:
            cut = max(where.rfind("."), where.rfind("["))
            where = where[:cut] if cut > 0 else ""
        out.append(Problem(p.file, p.where, p.message, lines.get(where)))
    return out


def _read_yaml(text: str, file: str) -> tuple[Bank | None, list[Problem]]:
    import yaml

    try:
        data = load_yaml(text)
    except DataError as exc:
        return None, [Problem(file, "", str(exc))]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return None, [Problem(file, "", f"invalid YAML at line {mark.line + 1}, column "
                                        f"{mark.column + 1}: {problem}" if mark else
                                        f"invalid YAML: {problem}")]
    bank, problems = parse_bank(data, file)
    return bank, _locate(problems, _yaml_lines(text)) if problems else problems


def read_bank(path: str | Path) -> tuple[Bank | None, list[Problem]]:
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [Problem(file, "", "no such file")]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem(file, "", f"cannot read: {exc}")]
    return bank_from_text(text, file)


def bank_from_text(text: str, file: str) -> tuple[Bank | None, list[Problem]]:
    """A bank file's text, parsed as ``file`` (its suffix says JSON or YAML) and validated."""
    if Path(file).suffix.lower() in YAML_SUFFIXES:
        return _read_yaml(text, file)
    try:
        data = load_json(text)
    except DataError as exc:
        return None, [Problem(file, "", str(exc))]
    except json.JSONDecodeError as exc:
        return None, [Problem(file, "", f"invalid JSON at line {exc.lineno}, column {exc.colno}: "
                                        f"{exc.msg}")]
    return parse_bank(data, file)


PLACEHOLDER_KEYS = ("expect_status", "expect_facts", "expect_forbidden", "golden",
                    "counterexamples")


def placeholders(file: str, item: Item) -> list[Problem]:
    """Every field still holding a ``TODO`` placeholder (``exam init`` and ``exam capture``
    write them), one problem each: bank check names them, ``exam run`` refuses them."""
    out = []
    for key in PLACEHOLDER_KEYS:
        value = item.raw.get(key)
        values = value if isinstance(value, list) else [value]
        for i, v in enumerate(values):
            if is_placeholder(v):
                where = f"{item.case_no}.{key}" + (f"[{i}]" if isinstance(value, list) else "")
                out.append(Problem(file, where, f"still a placeholder: "
                                                f"{v.strip()[len(PLACEHOLDER):].strip(' :')}"))
    return out


def bank_mismatch(bank_path: str, bank_agent: str, agent_name: str) -> str | None:
    """One line when the registry attaches a bank to an agent its ``agent:`` does not name
    (W2's bank under W1 sends W2's work orders to W1); None when they agree."""
    if bank_agent == agent_name:
        return None
    return (f"{bank_path}: agent: the bank is for agent {bank_agent!r}, but "
            f"agents.{agent_name}.bank points at it: {bank_agent}'s questions are sent to "
            f"{agent_name} (point {agent_name}'s bank: at its own file, or set \"agent\": "
            f"\"{agent_name}\" in this one)")


def load_bank(path: str | Path) -> Bank:
    """Load one bank file or raise BankError with every problem in it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        _, problems = read_bank(path)  # says why it cannot be read
        raise BankError(problems) from None
    return parsed_bank(str(path), text)


def parsed_bank(file: str, text: str) -> Bank:
    """A bank file's text parsed and validated once per content (an ``exam run`` read its bank
    three times: creating the run, running it and grading it) and per set of registered check
    kinds (their keys, schemas and parsers are part of what is parsed); BankError when it is
    not valid (not kept: it is raised again each time). Callers share the Bank: never change
    it, nor its questions' ``input``."""
    kinds = (_registered(), tuple((k.parse, k.read) for k in KINDS.values()))
    return _parsed_bank(file, text, kinds)


@lru_cache(maxsize=64)
def _parsed_bank(file: str, text: str, _kinds: tuple) -> Bank:
    bank, problems = bank_from_text(text, file)
    if problems:
        raise BankError(problems)
    assert bank is not None
    return replace(bank, content_digest=hashlib.blake2b(text.encode(), digest_size=16).hexdigest())


def bank_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand directories to their bank files (``*.json``, ``*.yaml``, ``*.yml``), sorted;
    files are kept as given."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(f for f in p.iterdir() if f.suffix.lower() in BANK_SUFFIXES))
        else:
            out.append(p)
    return out
