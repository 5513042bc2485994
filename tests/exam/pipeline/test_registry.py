from __future__ import annotations

import pytest

from exam.errors import RegistryError
from exam.pipeline.registry import load_registry, parse_registry

GOOD = {"agents": {"W1": {"url": "http://127.0.0.1:5678/webhook/w1-orders"}}}


def parse(data, env=None):
    return parse_registry(data, "webhooks/agents.yaml", env or {})


def test_defaults():
    agent = parse(GOOD).get("W1")
    assert agent.bank == "bank/W1.json"
    assert (agent.timeout_s, agent.retries, agent.concurrency, agent.min_interval_s) == (60, 0, 4, 0)
    assert agent.reply.text == ("answer", "output", "text")
    assert agent.reply.steps.path == "intermediateSteps"


def test_env_variables_fill_headers_and_never_show_in_repr():
    data = {"agents": {"W1": {**GOOD["agents"]["W1"], "headers": {"X-Exam-Token": "${W1_TOKEN}"}}}}
    agent = parse(data, {"W1_TOKEN": "s3cret"}).get("W1")
    assert agent.headers == {"X-Exam-Token": "s3cret"}
    assert "s3cret" not in repr(agent)
    assert "s3cret" not in str(agent.settings())


def test_missing_variable_blocks_the_agent_naming_it():
    data = {"agents": {"W1": {**GOOD["agents"]["W1"], "headers": {"X-Exam-Token": "${W1_TOKEN}"}}}}
    agent = parse(data).get("W1")
    assert agent.blocked == ("environment variable W1_TOKEN is not set "
                             "(needed by agents.W1.headers.X-Exam-Token)")


def test_safe_url_drops_credentials_and_query():
    data = {"agents": {"W1": {"url": "https://user:pw@n8n.example:8443/webhook/x?token=abc"}}}
    assert parse(data).get("W1").safe_url == "https://n8n.example:8443/webhook/x"


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ({"url": "http://x/y", "timeout": 5},
         "agents.W1.timeout: unknown key 'timeout' (did you mean 'timeout_s'?)"),
        ({"url": "ftp://x/y"}, "agents.W1.url: expected an http(s) URL, found 'ftp://x/y'"),
        ({}, "agents.W1: missing 'url'"),
        ({"url": "http://x/y", "concurrency": 0},
         "agents.W1.concurrency: expected a whole number ≥ 1, found 0"),
        ({"url": "http://x/y", "retries": -1}, "agents.W1.retries: expected a whole number ≥ 0"),
        ({"url": "http://x/y", "timeout_s": 0}, "agents.W1.timeout_s: expected a number > 0"),
        ({"url": "http://x/y", "min_interval_s": "fast"},
         "agents.W1.min_interval_s: expected a number ≥ 0, found 'fast'"),
        ({"url": "http://x/y", "reply": {"txt": "answer"}},
         "agents.W1.reply.txt: unknown key 'txt' (did you mean 'text'?)"),
        ({"url": "http://x/y", "reply": {"format": "xml"}},
         "agents.W1.reply.format: expected json or text"),
        ({"url": "http://x/y", "budget": {"token": 3}},
         "agents.W1.budget.token: unknown key 'token' (did you mean 'tokens'?)"),
        ({"url": "http://x/y", "headers": ["X-Token"]},
         "agents.W1.headers: expected a mapping of header: value"),
    ],
)
def test_bad_registry_is_one_clear_message(agent, message):
    with pytest.raises(RegistryError) as err:
        parse({"agents": {"W1": agent}})
    assert str(err.value) == f"webhooks/agents.yaml: {message}" or message in str(err.value)


def test_unknown_agent_lists_known_ones():
    with pytest.raises(RegistryError, match=r"no agent named 'W9' \(agents: W1\)"):
        parse(GOOD).get("W9")


def test_yaml_syntax_error_has_line_and_column(tmp_path):
    path = tmp_path / "agents.yaml"
    path.write_text("agents:\n  W1:\n    url: [unclosed\n")
    with pytest.raises(RegistryError, match=r"agents.yaml: invalid YAML at line \d+, column \d+"):
        load_registry(path, env={})


def test_missing_file_says_how_to_point_elsewhere(tmp_path):
    with pytest.raises(RegistryError, match="no such file .give --agents or set EXAM_AGENTS."):
        load_registry(tmp_path / "nope.yaml", env={})


def test_shipped_registry_loads():
    from tests.conftest import ROOT

    registry = load_registry(ROOT / "webhooks" / "agents.yaml", env={})
    assert set(registry.agents) == {"W1", "W2", "W3"}


N8N = {"url": "http://127.0.0.1:5678/webhook/w1",
       "n8n": {"api_url": "http://127.0.0.1:5678/", "api_key": "${N8N_API_KEY}"}}


def test_n8n_usage_source_reads_its_key_from_the_environment_and_never_shows_it():
    agent = parse({"agents": {"W1": N8N}}, {"N8N_API_KEY": "n8n-key-s3cret"}).get("W1")
    assert agent.n8n.api_url == "http://127.0.0.1:5678"
    assert agent.n8n.api_key == "n8n-key-s3cret"
    assert (agent.n8n.execution_id, agent.n8n.wait_s) == ("executionId", 10)
    assert "n8n-key-s3cret" not in repr(agent) and "n8n-key-s3cret" not in str(agent.settings())
    assert agent.settings()["n8n"] == {"api_url": "http://127.0.0.1:5678",
                                       "execution_id": "executionId", "wait_s": 10}
    # an agent (or n8n) echoing the key back gets it redacted like any other secret
    assert "n8n-key-s3cret" not in agent.redactor.text("key n8n-key-s3cret refused")


@pytest.mark.parametrize("api_url", ["http://127.0.0.1:5678/api/v1", "http://127.0.0.1:5678/api/v1/",
                                     "http://127.0.0.1:5678"])
def test_an_n8n_api_url_given_as_n8ns_api_base_is_read_as_the_instance(api_url):
    """n8n's API docs name the base https://<n8n>/api/v1; the exam adds /api/v1 itself, so
    taking it literally asked for /api/v1/api/v1/executions/<id>: a 404 blamed on n8n."""
    agent = parse({"agents": {"W1": {**N8N, "n8n": {"api_url": api_url, "api_key": "k"}}}}).get("W1")
    assert agent.n8n.api_url == "http://127.0.0.1:5678"


def test_an_n8n_instance_under_a_path_keeps_its_path():
    agent = parse({"agents": {"W1": {**N8N, "n8n": {"api_url": "https://h/n8n/api/v1",
                                                    "api_key": "k"}}}}).get("W1")
    assert agent.n8n.api_url == "https://h/n8n"


def test_a_missing_n8n_api_key_variable_blocks_the_agent_naming_it():
    assert parse({"agents": {"W1": N8N}}).get("W1").blocked == (
        "environment variable N8N_API_KEY is not set (needed by agents.W1.n8n.api_key)")


@pytest.mark.parametrize(("n8n", "message"), [
    ({"api_url": "http://x"}, "agents.W1.n8n.api_key: required"),
    ({"api_url": "ftp://x", "api_key": "k"}, "agents.W1.n8n.api_url: expected the n8n "
                                             "instance's http(s) base URL"),
    ({"api_url": "http://x", "api_key": "k", "wait": 3},
     "agents.W1.n8n.wait: unknown key 'wait' (did you mean 'wait_s'?)"),
    ({"api_url": "http://x", "api_key": "k", "wait_s": -1},
     "agents.W1.n8n.wait_s: expected a number ≥ 0, found -1"),
    ({"api_url": "http://x", "api_key": "k", "execution_id": ""},
     "agents.W1.n8n.execution_id: expected a dot path"),
    ("http://x", "agents.W1.n8n: expected a mapping with api_url and api_key"),
    ({"api_url": "http://127.0.0.1:5678/webhook/w1", "api_key": "k"},
     "agents.W1.n8n.api_url: 'http://127.0.0.1:5678/webhook/w1' is a webhook URL; expected the "
     "n8n instance's base URL"),
    ({"api_url": "http://x/webhook-test/w1", "api_key": "k"}, "is a webhook URL"),
])
def test_bad_n8n_usage_settings_name_the_key(n8n, message):
    with pytest.raises(RegistryError) as err:
        parse({"agents": {"W1": {"url": "http://x/y", "n8n": n8n}}})
    assert message in str(err.value)


def test_a_header_value_an_http_header_cannot_carry_blocks_the_agent_without_showing_it():
    data = {"agents": {"W1": {**GOOD["agents"]["W1"], "headers": {"X-Exam-Token": "${W1_TOKEN}"}}}}
    agent = parse(data, {"W1_TOKEN": "tök€n-secret-123"}).get("W1")
    assert agent.blocked == ("agents.W1.headers.X-Exam-Token: its value has a character outside "
                             "Latin-1, which an HTTP header cannot carry")


def test_an_n8n_api_key_an_http_header_cannot_carry_blocks_the_agent_without_showing_it():
    # sent as X-N8N-API-KEY: every cell's usage read raised UnicodeEncodeError (harness_error)
    agent = parse({"agents": {"W1": N8N}}, {"N8N_API_KEY": "k€y-s3cret-123"}).get("W1")
    assert agent.blocked == ("agents.W1.n8n.api_key: its value has a character outside "
                             "Latin-1, which an HTTP header cannot carry")


@pytest.mark.parametrize("url", ["http://user:${W1_PASS}@127.0.0.1:5678/webhook/x",
                                 "http://user:p%E2%82%AC55-word@127.0.0.1:5678/webhook/x"])
def test_a_url_password_basic_auth_cannot_carry_blocks_the_agent_without_showing_it(url):
    agent = parse({"agents": {"W1": {"url": url}}}, {"W1_PASS": "p€55-word"}).get("W1")
    assert agent.blocked == ("agents.W1.url: its user name or password has a character outside "
                             "Latin-1, which Basic auth cannot carry")
