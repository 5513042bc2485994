from __future__ import annotations

import base64
import json
from http.server import BaseHTTPRequestHandler
from urllib.parse import quote, quote_plus

import pytest
import requests

from exam import channels
from exam.pipeline.registry import parse_registry
from exam.pipeline.runner import create_run, execute, job_for
from exam.redact import MIN_SECRET_CHARS, REDACTED, Redactor, scrub_urls, service_secrets
from exam.store import Store
from tests.exam.helpers import write_bank
from tests.fakes.agent import FakeAgent
from tests.fakes.server import send_json, serve

SECRET = 'tök€n/+ "x😀y=9'


def forms(s: str) -> dict[str, str]:
    raw = s.encode()
    return {
        "raw": s, "json ascii": json.dumps(s)[1:-1], "json": json.dumps(s, ensure_ascii=False),
        "json partly": "".join(f"\\u{ord(c):04X}" if i % 2 and ord(c) < 0x10000 else c
                               for i, c in enumerate(s)),
        "quote": quote(s, safe=""), "quote path": quote(s), "quote_plus": quote_plus(s),
        "base64": base64.b64encode(raw).decode(), "base64 url": base64.urlsafe_b64encode(raw).decode(),
        "base64 at 1": base64.b64encode(b"a" + raw + b"tail").decode(),
        "base64 at 2": base64.urlsafe_b64encode(b"ab" + raw).decode(),
        "base64 at 3": base64.b64encode(b"abc" + raw + b"q").decode(),
        "hex": raw.hex(), "HEX": raw.hex().upper(),
        "html": "".join(f"&#{ord(c)};" for c in s), "spaced": f"\n\t {s} \n",
    }


@pytest.mark.parametrize(("name", "text"), list(forms(SECRET).items()))
def test_every_encoding_of_a_secret_is_redacted(name, text):
    out = Redactor.of([SECRET]).text(f"before {text} after")
    assert REDACTED in out
    assert SECRET not in out and "tök€n" not in out
    for leaked in forms(SECRET).values():
        assert leaked.strip() not in out


TOKEN = "Tk-9fQz2Lx7wPq4R"


def read_back(s: str) -> dict[str, str]:
    """Forms a person (or a script) reads back as the secret at a glance."""
    raw = s.encode()
    b64 = base64.b64encode(b"pad" * 20 + raw + b"tail" * 10).decode()
    return {
        "upper": s.upper(), "lower": s.lower(), "swapped case": s.swapcase(),
        "full-width": "".join(chr(ord(c) + 0xFEE0) for c in s),
        "spaced": " ".join(s), "broken across lines": s[:5] + "\n" + s[5:],
        "broken by an escaped line break": s[:5] + "\\r\\n" + s[5:],
        "zero-width spaces": "\u200b".join(s),
        "UTF-16 read as UTF-8": s.encode("utf-16-le").decode("utf-8"),
        "UTF-32 read as UTF-8": s.encode("utf-32-be").decode("utf-8"), "soft hyphens": "\u00ad".join(s),
        "\\x escapes": "".join(f"\\x{b:02x}" for b in raw),
        "html without ;": "".join(f"&#{ord(c)}" for c in s),
        "base64 wrapped at 76": base64.encodebytes(b"pad" * 20 + raw + b"tail" * 10).decode(),
        "base64 wrapped at 12": "\r\n".join(b64[i:i + 12] for i in range(0, len(b64), 12)),
        "base64 split by zero-width spaces": "\u200b".join(b64),
        "hex spaced, mixed case": " ".join(f"{b:02x}" if i % 2 else f"{b:02X}"
                                           for i, b in enumerate(raw)),
    }


@pytest.mark.parametrize(("name", "text"), list(read_back(TOKEN).items()))
def test_a_secret_read_back_at_a_glance_is_redacted(name, text):
    out = Redactor.of([TOKEN]).text(f"before {text} after")
    assert REDACTED in out

    def squeezed(t: str) -> str:
        return "".join(c for c in t if c.isprintable() and not c.isspace() and c != "\u00ad")

    # what is left, gaps taken out, holds no run of the secret's own characters in that form
    middle = (base64.b64encode(TOKEN.encode()).decode()[2:18] if name.startswith("base64")
              else squeezed(text)[4:-4])
    assert middle not in squeezed(out)


def test_case_and_gaps_do_not_blank_ordinary_words():
    r = Redactor.of([TOKEN])
    text = "Tk 9 fQ, a token of 16 characters: Tk-9fQz2 and Lx7wPq4R apart"
    assert r.text(text) == text


def test_basic_auth_of_user_pass_is_redacted_inside_a_header_echo():
    r = Redactor.of(["alice-user:pa55w0rd-xyz"])
    header = "Basic " + base64.b64encode(b"alice-user:pa55w0rd-xyz").decode()
    assert r.text(f'{{"echo": "{header}"}}') == '{"echo": "Basic [redacted]"}'


def test_short_values_are_not_redacted_so_words_survive():
    r = Redactor.of(["abc", "x" * (MIN_SECRET_CHARS - 1)])
    assert not r
    assert r.text("abc abc") == "abc abc"


def test_data_redacts_keys_and_nested_strings():
    r = Redactor.of(["s3cret-value"])
    assert r.data({"s3cret-value": ["ok", {"k": "is s3cret-value"}], "n": 1}) == {
        REDACTED: ["ok", {"k": f"is {REDACTED}"}], "n": 1}


def test_scrub_urls_drops_query_and_userinfo():
    text = ("HTTPSConnectionPool(host='h', port=1): Max retries exceeded with url: "
            "/w?token=abc (Caused by SSLError(...)) http://u:p@h/x")
    assert scrub_urls(text) == ("HTTPSConnectionPool(host='h', port=1): Max retries exceeded "
                                "with url: /w?[redacted] (Caused by SSLError(...)) http://h/x")


def _registry(url, headers=None, env=None):
    data = {"agents": {"W1": {"url": url, **({"headers": headers} if headers else {})}}}
    return parse_registry(data, "agents.yaml", env or {}).get("W1")


def test_a_secret_with_a_trailing_newline_is_trimmed_with_a_warning_naming_the_variable():
    agent = _registry("http://127.0.0.1:9/x", {"X-Token": "Bearer ${TOKEN}"},
                      {"TOKEN": "tok-1234567890\n"})
    assert agent.headers == {"X-Token": "Bearer tok-1234567890"}
    assert agent.warnings == ("agents.W1.headers.X-Token: environment variable TOKEN has white "
                              "space around its value (a trailing newline from a file?): trimmed",)
    assert not agent.blocked


def test_a_secret_with_a_line_break_inside_blocks_the_agent_without_showing_it():
    agent = _registry("http://127.0.0.1:9/x", {"X-Token": "${TOKEN}"},
                      {"TOKEN": "tok-12345\n67890"})
    assert agent.blocked == ("environment variable TOKEN contains a control character "
                             "(line break, NUL...), which agents.W1.headers.X-Token cannot carry")
    assert "12345" not in agent.blocked


def test_a_short_secret_is_a_warning():
    agent = _registry("http://127.0.0.1:9/x", {"X-Token": "${TOKEN}"}, {"TOKEN": "abc"})
    assert "TOKEN is shorter than 8 characters" in agent.warnings[0]


def test_a_bad_url_error_shows_the_registry_text_not_the_expanded_secret():
    from exam.errors import RegistryError

    with pytest.raises(RegistryError) as err:
        _registry("ftp://${HOSTTOKEN}/x", env={"HOSTTOKEN": "host-secret-123"})
    assert "host-secret-123" not in str(err.value)
    assert "'ftp://${HOSTTOKEN}/x'" in str(err.value)


def test_safe_url_keeps_an_ipv6_host_readable():
    assert _registry("http://u:p@[::1]:8080/w?x=1").safe_url == "http://[::1]:8080/w"


def test_safe_url_redacts_a_secret_in_the_path():
    agent = _registry("https://u:p@n8n.example/webhook/${HOOK}?token=abc",
                      env={"HOOK": "hook-secret-42"})
    assert agent.safe_url == f"https://n8n.example/webhook/{REDACTED}"
    assert "hook-secret-42" not in json.dumps(agent.settings())


def test_an_invalid_header_error_from_requests_does_not_store_the_secret(tmp_path):
    """A value requests refuses (its InvalidHeader quotes it) never reaches the store."""
    secret = "tok-ABCDEFGHIJK"
    with pytest.raises(requests.exceptions.InvalidHeader) as err:
        requests.Request("POST", "http://127.0.0.1:9/", headers={"X": " " + secret}).prepare()
    assert secret in str(err.value)  # the library does quote it
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, ["ok"])
        data = {"agents": {"T": {"url": fake.url, "bank": str(bank), "timeout_s": 5,
                                 "headers": {"X-Token": " ${TOKEN}"}}}}
        agent = parse_registry(data, "agents.yaml", {"TOKEN": secret}).get("T")
        store = Store.open(tmp_path / "exam.db")
        run_id = create_run(store, agent, "v1")
        execute(store, [job_for(store, run_id, agent)])
        cells = store.cells([run_id])
        store.close()
    assert cells[0].run_status == "http_error"
    assert "InvalidHeader" in cells[0].error and REDACTED in cells[0].error
    dump = b"".join(p.read_bytes() for p in tmp_path.glob("exam.db*"))
    assert secret.encode() not in dump


def test_a_body_whose_escapes_assemble_a_secret_form_is_stored_redacted():
    secret = "s3cret-token-XY"
    b64 = base64.b64encode(secret.encode()).decode()
    escaped = "".join(f"\\u{ord(c):04x}" if i % 3 == 0 else c for i, c in enumerate(b64))
    body = '{"answer": "see", "field": "' + escaped + '"}'
    r = Redactor.of([secret])
    assert r.text(body) == body  # the text alone shows no known form
    stored = r.body(body)
    assert json.loads(stored) == {"answer": "see", "field": REDACTED}
    assert r.body('{"answer": "fine"}') == '{"answer": "fine"}'  # untouched when clean


def test_a_json_escaped_percent_sign_is_still_percent_encoding():
    r = Redactor.of(["tok/12345678"])
    assert r.text("x tok\\u002f12345678 y") == f"x {REDACTED} y"
    assert r.text("x tok\\u002F12345678 y") == f"x {REDACTED} y"
    assert r.text("x tok\\u00252F12345678 y") == f"x {REDACTED} y"


SERVICE_ENV = {
    "W1_TOKEN": "w1-token-AAAA1111",
    "LINE_CHANNEL_ACCESS_TOKEN": "line-access-BBBB2222",
    "LINE_CHANNEL_SECRET": "line-secret-CCCC3333",
    "EXAM_API_TOKEN": "api-token-DDDD4444",
    "EXAM_VIEWER_TOKEN": "viewer-token-EEEE5555",
    "EXAM_SECRET_KEY": "secret-key-FFFF6666",
    "EXAM_WEBHOOK_AUTH": "Bearer hook-bearer-GGGG7777",
    "EXAM_WEBHOOK_URL": "https://hooks.example/x?key=hook-query-HHHH8888",
    "EXAM_DB": "postgresql://postgres:db-password-IIII9999@db.internal/agent_exam",
}


def test_every_agent_redacts_the_other_agents_and_the_services_secrets(tmp_path):
    """An agent can know a secret that is not its own (its n8n holds the team's LINE channel
    token, the after-change workflow's API token, another agent's header): none is stored."""
    leaked = [v for k, v in SERVICE_ENV.items() if k not in ("EXAM_WEBHOOK_URL", "EXAM_DB")]
    leaked += ["hook-bearer-GGGG7777", "hook-query-HHHH8888", "db-password-IIII9999"]
    echo = " ".join(leaked)

    class Leaky(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            send_json(self, 200, {"answer": f"備貨中 {echo}", "intermediateSteps": [
                {"action": {"tool": "http", "toolInput": {"auth": echo.upper()}}}]})

    with serve(Leaky) as url:
        bank = write_bank(tmp_path, ["ok"])
        data = {"agents": {"W1": {"url": "http://127.0.0.1:9/", "bank": str(bank),
                                  "headers": {"X-Exam-Token": "${W1_TOKEN}"}},
                           "W2": {"url": url, "bank": str(bank), "timeout_s": 5}}}
        agent = parse_registry(data, "agents.yaml", SERVICE_ENV).get("W2")
        store = Store.open(tmp_path / "exam.db")
        run_id = create_run(store, agent, "v1")
        execute(store, [job_for(store, run_id, agent)])
        cells = store.cells([run_id])
        store.close()
    assert cells[0].run_status == "ok" and cells[0].text.startswith("備貨中 [redacted]")
    dump = b"".join(p.read_bytes() for p in tmp_path.glob("exam.db*"))
    for secret in leaked:
        assert secret.encode() not in dump and secret.upper().encode() not in dump, secret


def test_the_secrets_a_channel_declares_are_service_secrets(monkeypatch):
    """A channel declares its secrets with its entry (exam/channels.py): redaction reads them
    there, with no change to exam/redact.py."""
    env = {"PIGEON_KEY": "Token pigeon-key-12345678",
           "PIGEON_URL": "https://loft:pigeon-pass-5678@pigeons.example/x?k=pigeon-query-9999"}
    assert not set(service_secrets(env)) & {"pigeon-key-12345678", "pigeon-pass-5678"}
    monkeypatch.setitem(channels.BUILT_IN, "pigeon", channels.ChannelEntry(
        "tests.exam.test_notify_channels:Pigeon", secrets=("PIGEON_KEY",),
        secret_urls=("PIGEON_URL",)))
    found = set(service_secrets(env))
    assert {"Token pigeon-key-12345678", "pigeon-key-12345678", "pigeon-pass-5678",
            "pigeon-query-9999"} <= found
    agent = parse_registry(GOOD_ONE, "agents.yaml", env).get("W1")
    assert agent.redactor.text("the loft key is pigeon-key-12345678") == \
        f"the loft key is {REDACTED}"


def test_a_database_user_name_is_not_a_secret():
    r = parse_registry(GOOD_ONE, "agents.yaml", {"EXAM_DB": SERVICE_ENV["EXAM_DB"]}).get("W1")
    assert r.redactor.text("postgres is up") == "postgres is up"
    assert r.redactor.text("db-password-IIII9999") == REDACTED


GOOD_ONE = {"agents": {"W1": {"url": "http://127.0.0.1:9/"}}}


@pytest.mark.parametrize("env", [
    {"EXAM_DB": "postgresql://postgres@db.internal/agent_exam?password=db-password-IIII9999"},
    {"EXAM_DB": "postgresql://db.internal/agent_exam?sslmode=require&"
                "sslpassword=db-password-IIII9999"},
    {"EXAM_DB": "postgresql://postgres@db.internal/agent_exam", "PGPASSWORD": "db-password-IIII9999"},
])
def test_every_form_of_the_stores_password_is_a_secret(env):
    """The password given in the query or as libpq's PGPASSWORD, not only as userinfo: an
    agent that echoes it has it redacted; the settings beside it are not secrets."""
    r = parse_registry(GOOD_ONE, "agents.yaml", env).get("W1")
    assert r.redactor.text("pw db-password-IIII9999 sslmode=require") == (
        f"pw {REDACTED} sslmode=require")
