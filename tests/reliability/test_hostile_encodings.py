"""A hostile agent on 127.0.0.1 hands back every secret it knows (its header token, its URL's
user and password, its n8n API key, the service's own tokens) in encodings beyond the ones
test_secret_redaction plants: each form the redaction claims to catch is found in no output of
any kind (store, every report format, API, dashboard, review CSV, the worker's log, LINE).

Forms the redaction does not claim (docs/agents.md, "Not caught") are listed in ``NOT_CAUGHT``
and checked to still reach the store: the list is what the docs say, not a hope.
"""

from __future__ import annotations

import base64
import codecs
import html.entities
import json
import quopri
import re
import tempfile
import unicodedata
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml

from exam.store import Store
from tests.fakes.server import QuietHandler, serve
from tests.reliability.test_secret_redaction import every_output

TOKEN = "Tk-9fQz2/Lx7+wPq4R="
USER, PASSWORD = "ops-bot7x", "pässw0rd.Kx81"
N8N_KEY = "n8n_api_7Hq2.Zx9Lm"
SERVICE = {"EXAM_API_TOKEN": "api-Tok3n.for_exam", "LINE_CHANNEL_ACCESS_TOKEN": "LINE/acc+ess=Tok9",
           "LINE_CHANNEL_SECRET": "line-secret-8f3a2b1c", "EXAM_WEBHOOK_AUTH": "Bearer hook-Bear3r-Zq"}
KNOWN = [TOKEN, USER, PASSWORD, f"{USER}:{PASSWORD}", N8N_KEY, "hook-Bear3r-Zq",
         *(v for k, v in SERVICE.items() if k != "EXAM_WEBHOOK_AUTH")]

_NAMED = {}
for _name, _ch in sorted(html.entities.html5.items()):
    if len(_ch) == 1 and _name.endswith(";"):
        _NAMED.setdefault(_ch, _name)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def b32(data: bytes) -> str:
    return base64.b32encode(data).decode()


def qp_wrapped(s: str) -> str:
    """Quoted-printable with a soft line break (``=`` + newline) in the middle."""
    units = re.findall(r"=[0-9A-F]{2}|.", quopri.encodestring(s.encode()).decode())
    return "".join(units[:len(units) // 2]) + "=\n" + "".join(units[len(units) // 2:])


_MATH_BOLD = {**{chr(c): chr(0x1D400 + c - 65) for c in range(65, 91)},
              **{chr(c): chr(0x1D41A + c - 97) for c in range(97, 123)},
              **{chr(c): chr(0x1D7CE + c - 48) for c in range(48, 58)}}

# each: how the agent writes a secret (str → str)
CAUGHT = {
    "reversed": lambda s: s[::-1],
    "rot13": lambda s: codecs.encode(s, "rot13"),
    "base32": lambda s: b32(s.encode()),
    "base32 lower, no padding": lambda s: b32(s.encode()).lower().rstrip("="),
    "base32 inside": lambda s: b32(b"xy" + s.encode() + b"tail"),
    "named entities": lambda s: "".join(f"&{_NAMED[c]}" if c in _NAMED and not c.isalnum()
                                        else c for c in s),
    "base64 of base64": lambda s: b64(b64(s.encode()).encode()),
    "base64 of base64 inside": lambda s: b64(b"key: " + b64(s.encode()).encode() + b"\n"),
    "percent-encoded twice": lambda s: quote(quote(s, safe=""), safe=""),
    "quoted-printable, every byte": lambda s: "".join(f"={b:02X}" for b in s.encode()),
    "quoted-printable, wrapped": lambda s: qp_wrapped(s),
    "\\u{...} escapes": lambda s: "".join(f"\\u{{{ord(c):x}}}" for c in s),
    "\\U00000041 escapes": lambda s: "".join(f"\\U{ord(c):08x}" for c in s),
    "Python repr of Latin-1": lambda s: s.encode("unicode_escape").decode(),
    "hex with colons": lambda s: ":".join(f"{b:02x}" for b in s.encode()),
    "hex as 0x list": lambda s: ", ".join(f"0x{b:02X}" for b in s.encode()),
    "mathematical bold": lambda s: "".join(_MATH_BOLD.get(c, c) for c in s),
    "decomposed accents": lambda s: unicodedata.normalize("NFD", s),
    "base64 of Latin-1": lambda s: b64(s.encode("latin-1", "replace")),
    "mixed": lambda s: (quote(s[:3], safe="") + "".join(f"\\u{ord(c):04x}" for c in s[3:6])
                        + "".join(f"&#{ord(c)};" for c in s[6:9]) + s[9:]),
}
NOT_CAUGHT = {
    "spelled with dashes": lambda s: "-".join(s),
    "decimal code points": lambda s: " ".join(str(ord(c)) for c in s),
    "base85": lambda s: base64.b85encode(s.encode()).decode(),
    "base64 of UTF-16": lambda s: b64(s.encode("utf-16-le")),
    "reversed base64": lambda s: b64(s.encode())[::-1],
}
FORMS = {**CAUGHT, **NOT_CAUGHT}


class HostileAgent:
    """Echoes its header token and URL credentials, and the secrets it knows otherwise, in
    the form the work order's ``behaviour`` names."""

    def __init__(self):
        class Handler(QuietHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                form = FORMS[json.loads(raw)["behaviour"]]
                user, _, password = base64.b64decode(
                    self.headers.get("Authorization", "x ").split(" ", 1)[1]).decode(
                    "latin-1").partition(":")
                values = [self.headers.get("X-Exam-Token", ""), user, password,
                          f"{user}:{password}", *KNOWN[4:]]
                data = json.dumps({"answer": "備貨中。" + " | ".join(form(v) for v in values),
                                   "status": "ok"}, ensure_ascii=False).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.served = serve(Handler).start()
        self.port = self.served.server.server_port


@pytest.fixture(scope="module")
def outputs():
    agent = HostileAgent()
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            for name in ("S", "TLS"):
                questions = [{"case_no": f"{name}-{i:02d}", "category": "leak",
                              "input": {"task_id": f"{name}-{i:02d}", "behaviour": form},
                              "expect_status": "ok", "expect_facts": ["備貨中"]}
                             for i, form in enumerate(FORMS, 1)]
                (tmp / f"{name}.json").write_text(json.dumps({"agent": name,
                                                              "questions": questions}))
            url = f"http://${{EXAM_USER}}:${{EXAM_PASS}}@127.0.0.1:{agent.port}/webhook/w"
            (tmp / "agents.yaml").write_text(yaml.safe_dump({"agents": {
                "S": {"url": url, "bank": str(tmp / "S.json"), "timeout_s": 5,
                      "headers": {"X-Exam-Token": "${EXAM_TOKEN}"},
                      # the key is sent to no one: the replies carry no execution id
                      "n8n": {"api_url": f"http://127.0.0.1:{agent.port}",
                              "api_key": "${N8N_KEY}"}},
                "TLS": {"url": f"https://127.0.0.1:{agent.port}/webhook", "timeout_s": 5,
                        "bank": str(tmp / "TLS.json")}}}, allow_unicode=True))
            env = {"EXAM_DB": str(tmp / "exam.db"), "EXAM_AGENTS": str(tmp / "agents.yaml"),
                   "EXAM_TOKEN": TOKEN, "EXAM_USER": USER, "EXAM_PASS": PASSWORD,
                   "N8N_KEY": N8N_KEY, **SERVICE}
            shown = every_output(tmp, env)
            store = Store.open(env["EXAM_DB"])
            cells = store.cells([1])
            store.close()
            yield cells, [(where, t if isinstance(t, str) else t.decode("utf-8", "replace"))
                          for where, t in shown]
    finally:
        agent.served.close()


def _leaks(outputs, spellings: set[str]) -> list[str]:
    return sorted({f"{s!r} in {where}" for s in spellings for where, hay in outputs if s in hay})


def test_the_agent_answered_every_form(outputs):
    """Every form reached the runner as an ok reply (else nothing below proves anything)."""
    cells, _ = outputs
    assert sorted((c.case_no, c.run_status) for c in cells if c.case_no.startswith("S-")) == [
        (f"S-{i:02d}", "ok") for i in range(1, len(FORMS) + 1)]
    assert all(c.text.startswith("備貨中。") for c in cells if c.case_no.startswith("S-"))


@pytest.mark.parametrize("form", list(CAUGHT))
def test_a_secret_in_a_caught_form_reaches_no_output(outputs, form):
    _, outputs = outputs
    encode = CAUGHT[form]
    spellings = {encode(v) for v in KNOWN} - set(KNOWN)
    # and what a reader (or the graders' NFKC + casefold) makes of it
    spellings |= {v.casefold() for v in KNOWN} | set(KNOWN)
    assert _leaks(outputs, {s for s in spellings if len(s) >= 8}) == []


@pytest.mark.parametrize("form", list(NOT_CAUGHT))
def test_a_form_the_docs_say_is_not_caught_does_reach_the_store(outputs, form):
    _, outputs = outputs
    dump = next(t for w, t in outputs if w == "store dump")
    assert any(NOT_CAUGHT[form](v) in dump for v in KNOWN)
