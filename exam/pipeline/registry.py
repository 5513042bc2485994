"""The agent registry (``webhooks/agents.yaml``): where each specialist lives and how to read it.

Every value substituted from ``${VAR}`` is a secret, and so are a URL's userinfo and query
values. They are resolved at load time, kept out of ``repr`` and redacted (in every encoding,
see ``exam.redact``) from whatever an agent or a library hands back before it is stored or
shown; only header *names* are ever shown. Each agent's replies are redacted of every agent's
secrets and of the service's own (``exam.redact.SERVICE_SECRETS``: the LINE channel token, the
API token...), since an agent may know any of them. A value with white space around it (a file's
trailing newline) is trimmed with a warning naming the variable. An agent whose secret is
missing, or holds a control character (or, in a header or n8n's API key, one outside Latin-1), is not an error
for the whole registry: it is *blocked*, and its cells are recorded as such (blocked is not
failed).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from exam import names
from exam.errors import RegistryError, is_placeholder
from exam.reading import DEFAULT_MAPPING, ReplyMapping, StepsMapping
from exam.redact import (
    MIN_SECRET_CHARS,
    NO_SECRETS,
    Redactor,
    safe_url,
    service_secrets,
    url_secrets,
)
from graders.kinds import unknown_keys
from graders.model import BUDGET_KEYS

DEFAULT_PATH = "webhooks/agents.yaml"
AGENT_KEYS = ("url", "bank", "headers", "timeout_s", "retries", "concurrency", "min_interval_s",
              "reply", "budget", "n8n", "description")
REPLY_KEYS = ("format", "text", "status", "model_calls", "tokens", "truncated", "steps", "error")
N8N_KEYS = ("api_url", "api_key", "execution_id", "wait_s")
STEPS_KEYS = ("path", "tool", "args")
ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class N8nUsage:
    """Where to read an n8n agent's model calls and tokens: its executions, by the public API."""

    api_url: str  # the instance's base URL; /api/v1/executions/<id> is added
    api_key: str = field(repr=False)  # a secret: never stored, printed or logged
    execution_id: str = "executionId"  # dot path in the reply carrying $execution.id
    wait_s: float = 10.0  # how long to wait for the execution to finish

    @property
    def safe_url(self) -> str:
        return safe_url(self.api_url)


@dataclass(frozen=True, slots=True)
class Agent:
    name: str
    url: str
    bank: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # secret values
    timeout_s: float = 60.0
    retries: int = 0
    concurrency: int = 4
    min_interval_s: float = 0.0
    reply: ReplyMapping = DEFAULT_MAPPING
    reply_format: str = "json"  # "json", or "text" for agents answering with a plain body
    budget: Mapping[str, float] = field(default_factory=dict)
    n8n: N8nUsage | None = None  # usage read from n8n executions instead of the reply
    blocked: str = ""  # why nothing can be sent (e.g. a missing secret), "" when fine
    redactor: Redactor = field(default=NO_SECRETS, repr=False, compare=False)
    warnings: tuple[str, ...] = ()  # e.g. a secret trimmed of a trailing newline (names only)

    def __post_init__(self) -> None:
        if not self.redactor and self.headers:  # built in code, not from a registry file
            object.__setattr__(self, "redactor", Redactor.of(self.headers.values()))

    @property
    def safe_url(self) -> str:
        """The URL without credentials or query string, secrets in it redacted: safe to show."""
        return safe_url(self.url, self.redactor)

    def settings(self) -> dict[str, Any]:
        """What a run records about the agent: everything but the secrets."""
        return {
            "url": self.safe_url, "bank": self.bank, "header_names": sorted(self.headers),
            "timeout_s": self.timeout_s, "retries": self.retries, "concurrency": self.concurrency,
            "min_interval_s": self.min_interval_s, "reply_format": self.reply_format,
            "reply": mapping_to_dict(self.reply), "budget": dict(self.budget),
            **({"n8n": {"api_url": safe_url(self.n8n.api_url, self.redactor),
                        "execution_id": self.n8n.execution_id,
                        "wait_s": self.n8n.wait_s}} if self.n8n else {}),
        }


def mapping_to_dict(m: ReplyMapping) -> dict[str, Any]:
    steps = None if m.steps is None else {"path": m.steps.path, "tool": m.steps.tool,
                                          "args": m.steps.args}
    def figure(paths):
        return list(paths) if isinstance(paths, tuple) else paths

    return {"text": list(m.text), "status": m.status, "model_calls": figure(m.model_calls),
            "tokens": figure(m.tokens), "truncated": m.truncated, "steps": steps,
            "error": m.error}


@dataclass(frozen=True, slots=True)
class Registry:
    path: str
    agents: Mapping[str, Agent]

    def get(self, name: str) -> Agent:
        if name not in self.agents:
            known = ", ".join(sorted(self.agents)) or "none"
            raise RegistryError(f"{self.path}: no agent named {name!r} (agents: {known})")
        return self.agents[name]


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class _Secrets:
    """What ``${VAR}`` substitution found while parsing one agent."""

    values: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _expand(value: str, where: str, env: Mapping[str, str], missing: list[str],
            found: _Secrets | None = None) -> str:
    def sub(m: re.Match[str]) -> str:
        var = m.group(1)
        if var not in env:
            missing.append(f"environment variable {var} is not set (needed by {where})")
            return ""
        secret = env[var].strip()
        if found is None:
            return secret
        if secret != env[var]:
            found.warnings.append(f"{where}: environment variable {var} has white space around "
                                  "its value (a trailing newline from a file?): trimmed")
        if _CONTROL.search(secret):
            missing.append(f"environment variable {var} contains a control character "
                           f"(line break, NUL...), which {where} cannot carry")
            return ""
        if 0 < len(secret) < MIN_SECRET_CHARS:
            found.warnings.append(f"{where}: environment variable {var} is shorter than "
                                  f"{MIN_SECRET_CHARS} characters: too short to be redacted "
                                  "from what agents send back")
        found.values.append(secret)
        return secret

    return ENV_VAR.sub(sub, value)


def _bounded_number(path: str, where: str, value: Any, *, minimum: float, integer: bool,
            strict: bool = False) -> float:
    ok_type = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok_type or value < minimum or (strict and value == minimum):
        kind = "a whole number" if integer else "a number"
        bound = f"> {minimum:g}" if strict else f"≥ {minimum:g}"
        raise RegistryError(f"{path}: {where}: expected {kind} {bound}, found {value!r}")
    return value


def _reply_mapping(path: str, where: str, raw: Any) -> tuple[ReplyMapping, str]:
    if raw is None:
        return DEFAULT_MAPPING, "json"
    if not isinstance(raw, Mapping):
        raise RegistryError(f"{path}: {where}: expected a mapping of dot paths, found {raw!r}")
    for key, msg in unknown_keys(raw, REPLY_KEYS):
        raise RegistryError(f"{path}: {where}.{key}: {msg}")
    fmt = raw.get("format", "json")
    if fmt not in ("json", "text"):
        raise RegistryError(f"{path}: {where}.format: expected json or text, found {fmt!r}")
    for key in ("status", "truncated", "error"):
        if key in raw and raw[key] is not None and not isinstance(raw[key], str):
            raise RegistryError(f"{path}: {where}.{key}: expected a dot path string or null, "
                                f"found {raw[key]!r}")
    figures = {}
    for key in ("model_calls", "tokens"):
        value = raw.get(key, getattr(DEFAULT_MAPPING, key))
        if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
            value = tuple(value)
        elif value is not None and not isinstance(value, str):
            raise RegistryError(f"{path}: {where}.{key}: expected a dot path, a list of dot paths "
                                f"(summed) or null, found {value!r}")
        figures[key] = value
    text = raw.get("text", list(DEFAULT_MAPPING.text))
    text = [text] if isinstance(text, str) else text
    if not isinstance(text, list) or not text or not all(isinstance(t, str) for t in text):
        raise RegistryError(f"{path}: {where}.text: expected a dot path or a list of them")
    steps_raw = raw.get("steps", "intermediateSteps")
    if steps_raw is None:
        steps = None
    elif isinstance(steps_raw, str):
        steps = StepsMapping(path=steps_raw)
    elif isinstance(steps_raw, Mapping):
        for key, msg in unknown_keys(steps_raw, STEPS_KEYS):
            raise RegistryError(f"{path}: {where}.steps.{key}: {msg}")
        steps = StepsMapping(**{k: str(v) for k, v in steps_raw.items()})
    else:
        raise RegistryError(f"{path}: {where}.steps: expected a dot path or "
                            f"{{path, tool, args}}, found {steps_raw!r}")
    d = DEFAULT_MAPPING
    return ReplyMapping(
        text=tuple(text), status=raw.get("status", d.status),
        model_calls=figures["model_calls"], tokens=figures["tokens"],
        truncated=raw.get("truncated", d.truncated), steps=steps,
        error=raw.get("error", d.error),
    ), fmt


def _n8n_usage(path: str, where: str, raw: Any, env: Mapping[str, str], missing: list[str],
               found: _Secrets) -> N8nUsage | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise RegistryError(f"{path}: {where}: expected a mapping with api_url and api_key, "
                            f"found {raw!r}")
    for key, msg in unknown_keys(raw, N8N_KEYS):
        raise RegistryError(f"{path}: {where}.{key}: {msg}")
    for key in ("api_url", "api_key"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise RegistryError(f"{path}: {where}.{key}: required (a string; the key is best "
                                f"given as \"${{N8N_API_KEY}}\"), found {raw.get(key)!r}")
    n_missing = len(missing)
    api_url = _expand(raw["api_url"], f"{where}.api_url", env, missing, found)
    api_key = _expand(raw["api_key"], f"{where}.api_key", env, missing, found)
    try:
        api_key.encode("latin-1")
    except UnicodeEncodeError:  # sent as a header: http.client would raise at every cell
        missing.append(f"{where}.api_key: its value has a character outside Latin-1, which an "
                       "HTTP header cannot carry")
    if len(missing) == n_missing:
        parts = urlsplit(api_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RegistryError(f"{path}: {where}.api_url: expected the n8n instance's http(s) "
                                "base URL, e.g. https://n8n.example.com")
        if re.search(r"/webhook(-test)?(/|$)", parts.path):
            raise RegistryError(f"{path}: {where}.api_url: {raw['api_url']!r} is a webhook URL; "
                                "expected the n8n instance's base URL, e.g. "
                                "https://n8n.example.com (/api/v1/executions/<id> is added)")
    # n8n's API docs give the base as https://<n8n>/api/v1: the part the exam adds itself
    api_url = re.sub(r"/api/v1/*$", "", api_url.rstrip("/"))
    execution_id = raw.get("execution_id", "executionId")
    if not isinstance(execution_id, str) or not execution_id:
        raise RegistryError(f"{path}: {where}.execution_id: expected a dot path, "
                            f"found {execution_id!r}")
    wait_s = _bounded_number(path, f"{where}.wait_s", raw.get("wait_s", 10), minimum=0, integer=False)
    return N8nUsage(api_url, api_key, execution_id, wait_s)


def resolve_bank(registry_path: str, name: str, bank: str | None) -> str:
    """Where an agent's bank is: a relative ``bank:`` is read against the registry file's folder
    (so ``/etc/agent-exam/agents.yaml`` works from any directory); without ``bank:``,
    ``bank/<name>.json`` beside the registry or beside its folder (the repository's layout,
    ``webhooks/agents.yaml`` + ``bank/``). For files written before this rule, a path that exists
    only relative to the working directory is still found. When nothing exists, the first
    candidate is returned and the run names it."""
    if bank is not None and os.path.isabs(bank):
        return bank
    here = os.path.dirname(registry_path)
    if bank is None:
        default = os.path.join("bank", f"{name}.json")
        candidates = [os.path.join(here, default), os.path.join(here, os.pardir, default), default]
    else:
        candidates = [os.path.join(here, bank), bank]
    candidates = [os.path.normpath(c) for c in candidates]
    return next((c for c in candidates if os.path.isfile(c)), candidates[0])


def _placeholders(path: str, where: str, raw: Any) -> list[str]:
    """A line per field of a reply mapping still holding `exam init`'s TODO: nothing read
    through it could ever be graded, so the agent is blocked until a person fills it in."""
    out = []
    for key, value in (raw or {}).items():
        values = value.items() if isinstance(value, Mapping) else (
            enumerate(value) if isinstance(value, list) else [(None, value)])
        for sub, v in values:
            field = f"{where}.{key}" + ("" if sub is None else
                                        f"[{sub}]" if isinstance(sub, int) else f".{sub}")
            if is_placeholder(v):
                out.append(f"{path}: {field} is still a placeholder ({str(v).strip()!r}): "
                           f"write the dot path there (exam init showed the reply, and "
                           f"`format: text` reads a plain-text reply)")
    return out


def parse_agent(path: str, name: str, raw: Any, env: Mapping[str, str]) -> Agent:
    where = f"agents.{name}"
    if not isinstance(raw, Mapping):
        raise RegistryError(f"{path}: {where}: expected a mapping with at least 'url', found {raw!r}")
    for key, msg in unknown_keys(raw, AGENT_KEYS):
        raise RegistryError(f"{path}: {where}.{key}: {msg}")
    if "url" not in raw:
        raise RegistryError(f"{path}: {where}: missing 'url' (the agent's webhook)")
    missing: list[str] = []
    found = _Secrets()
    url = _expand(str(raw["url"]), f"{where}.url", env, missing, found)
    if not missing:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            # the registry's own text, not the expanded one: that may hold a secret
            raise RegistryError(f"{path}: {where}.url: expected an http(s) URL, "
                                f"found {str(raw['url'])!r}")
        try:
            unquote(f"{parts.username or ''}:{parts.password or ''}").encode("latin-1")
        except UnicodeEncodeError:  # requests' Basic auth would raise it at every send
            missing.append(f"{where}.url: its user name or password has a character outside "
                           "Latin-1, which Basic auth cannot carry")
    headers_raw = raw.get("headers") or {}
    if not isinstance(headers_raw, Mapping):
        raise RegistryError(f"{path}: {where}.headers: expected a mapping of header: value")
    headers = {}
    for key, value in headers_raw.items():
        if not isinstance(value, str | int):
            raise RegistryError(f"{path}: {where}.headers.{key}: expected a string value")
        headers[str(key)] = _expand(str(value), f"{where}.headers.{key}", env, missing, found)
        try:
            headers[str(key)].encode("latin-1")
        except UnicodeEncodeError:  # http.client would raise it, quoting a character of it
            missing.append(f"{where}.headers.{key}: its value has a character outside Latin-1, "
                           "which an HTTP header cannot carry")
    budget = raw.get("budget") or {}
    if not isinstance(budget, Mapping):
        raise RegistryError(f"{path}: {where}.budget: expected a mapping")
    for key, msg in unknown_keys(budget, BUDGET_KEYS):
        raise RegistryError(f"{path}: {where}.budget.{key}: {msg}")
    for key, value in budget.items():
        _bounded_number(path, f"{where}.budget.{key}", value, minimum=0, integer=key != "latency_ms")
    bank = raw.get("bank")
    if bank is not None and (not isinstance(bank, str) or not bank):
        raise RegistryError(f"{path}: {where}.bank: expected a path, found {bank!r}")
    bank = resolve_bank(path, name, bank)
    mapping, fmt = _reply_mapping(path, f"{where}.reply", raw.get("reply"))
    missing += _placeholders(path, f"{where}.reply", raw.get("reply"))
    n8n = _n8n_usage(path, f"{where}.n8n", raw.get("n8n"), env, missing, found)
    return Agent(
        name=name, url=url, bank=bank, headers=headers,
        timeout_s=_bounded_number(path, f"{where}.timeout_s", raw.get("timeout_s", 60), minimum=0,
                          integer=False, strict=True),
        retries=int(_bounded_number(path, f"{where}.retries", raw.get("retries", 0), minimum=0,
                            integer=True)),
        concurrency=int(_bounded_number(path, f"{where}.concurrency", raw.get("concurrency", 4), minimum=1,
                                integer=True)),
        min_interval_s=_bounded_number(path, f"{where}.min_interval_s", raw.get("min_interval_s", 0),
                               minimum=0, integer=False),
        reply=mapping, reply_format=fmt, budget=dict(budget), n8n=n8n,
        blocked="; ".join(missing),
        redactor=Redactor.of([*found.values, *url_secrets(url),
                              *(url_secrets(n8n.api_url) if n8n else ()), *service_secrets(env)]),
        warnings=tuple(dict.fromkeys(found.warnings)),
    )


def parse_registry(data: Any, path: str, env: Mapping[str, str] | None = None) -> Registry:
    env = os.environ if env is None else env
    if not isinstance(data, Mapping) or "agents" not in data:
        raise RegistryError(f"{path}: expected a mapping with 'agents:' at the top")
    for key, msg in unknown_keys(data, ("agents",)):
        raise RegistryError(f"{path}: {key}: {msg}")
    agents_raw = data["agents"]
    if not isinstance(agents_raw, Mapping) or not agents_raw:
        raise RegistryError(f"{path}: agents: expected a mapping of agent name to settings")
    for n in agents_raw:
        if names.problem(str(n)):
            raise RegistryError(f"{path}: agents: agent name {str(n)[:80]!r} is not usable: "
                                f"{names.problem(str(n))} (use {names.RULE})")
    agents = {str(n): parse_agent(path, str(n), raw, env) for n, raw in agents_raw.items()}
    # one agent's secret is a secret in every agent's reply (each holds the service's own)
    shared = Redactor.of([s for a in agents.values() for s in a.redactor.secrets])
    return Registry(path, {n: replace(a, redactor=shared) for n, a in agents.items()})


def load_registry(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> Registry:
    """Load the registry from ``path``, else ``$EXAM_AGENTS``, else ``webhooks/agents.yaml``."""
    import yaml

    env = os.environ if env is None else env
    path = str(path or env.get("EXAM_AGENTS") or DEFAULT_PATH)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RegistryError(f"{path}: no such file (give --agents or set EXAM_AGENTS)") from None
    except OSError as exc:
        raise RegistryError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise RegistryError(f"{path}: invalid YAML{at}: {problem}") from None
    return parse_registry(data, path, env)
