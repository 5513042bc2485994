"""One attempt against a real HTTP agent on 127.0.0.1: compressed bodies, deadlines, hostile replies."""

from __future__ import annotations

import json
import shutil
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exam.pipeline.runner import create_run, execute, job_for
from exam.pipeline.transport import (
    DEADLINE_SLACK_S,
    MAX_BODY_BYTES,
    Attempt,
    cell_result,
    decode_text,
    post_once,
)
from exam.records import TEXT_CAP_CHARS, AttemptRow
from tests.exam.helpers import agent_for, write_bank
from tests.fakes.agent import FakeAgent


def run(store, tmp_path, behaviours, **agent_kw):
    """Run one cell per behaviour; returns (run id, final status, cells by behaviour)."""
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, list(behaviours))
        agent = agent_for(fake.url, bank, **agent_kw)
        run_id = create_run(store, agent, "v1")
        final = execute(store, [job_for(store, run_id, agent)])
    cells = {behaviours[int(c.case_no[2:]) - 1]: c for c in store.cells([run_id])}
    return run_id, final[run_id], cells


# -- 1. compressed replies -----------------------------------------------------------------

def test_a_gzipped_chunked_reply_like_n8ns_is_decoded_and_stored_as_text(store, tmp_path):
    run_id, final, cells = run(store, tmp_path, ["gzip-chunked", "deflate"])
    assert final == "done"
    for behaviour in ("gzip-chunked", "deflate"):
        cell = cells[behaviour]
        assert (cell.run_status, cell.error) == ("ok", ""), behaviour
        assert "備貨中" in cell.text
        assert cell.steps and cell.steps[0]["tool"] == "order_lookup"
        (attempt,) = store.attempts(run_id, cell.case_no, 1)
        # the stored raw body is the decoded text, and its size is the decoded size
        assert json.loads(attempt.body)["intermediateSteps"][0]["action"]["tool"] == "order_lookup"
        assert attempt.body_bytes == len(attempt.body.encode()) > 1024


@pytest.mark.parametrize(("behaviour", "reason"), [
    ("gzip-lie", "Content-Encoding: gzip but it cannot be decoded"),
    ("gzip-cut", "not JSON"),  # half a gzip stream inflates to half a JSON document
    ("brotli", "Content-Encoding 'br', which the exam did not ask for"),
])
def test_a_body_that_is_not_what_its_encoding_says_is_a_bad_reply(store, tmp_path, behaviour,
                                                                   reason):
    _, final, cells = run(store, tmp_path, [behaviour])
    assert final == "done"
    assert cells[behaviour].run_status == "bad_reply"
    assert reason in cells[behaviour].error
    assert "\n" not in cells[behaviour].error


def test_a_decompression_bomb_stops_at_the_body_cap_without_filling_memory(tmp_path):
    with FakeAgent() as fake:
        agent = agent_for(fake.url, tmp_path / "T.json", timeout_s=30.0)
        tracemalloc.start()
        try:
            out = post_once(agent, {"behaviour": "gzip-bomb"}, 1)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert out.kind == "bad"
    assert out.row.error == f"reply body over {MAX_BODY_BYTES:,} bytes (decoded)"
    # the bomb expands to 1 GB; reading stops at the 8 MB cap (chunks are joined only below it)
    assert peak < 3 * MAX_BODY_BYTES


# -- 2. every deadline holds ---------------------------------------------------------------

@pytest.mark.slow  # waits out a real 1 s deadline, twice a test
@pytest.mark.parametrize(("behaviour", "error"), [
    ("slow-headers", "no reply within 1 s"),            # a header line every 0.2 s, forever
    ("trickle", "reply not complete within 1 s"),       # a byte every 0.95 s (Content-Length)
    ("trickle-chunked", "reply not complete within 1 s"),
])
def test_each_attempt_ends_at_its_deadline_however_the_agent_dribbles(store, tmp_path, behaviour,
                                                                      error, pauses):
    run_id, final, cells = run(store, tmp_path, [behaviour], timeout_s=1.0, retries=1)
    assert pauses == [0.5]  # asked of the gate, not waited
    cell = cells[behaviour]
    assert final == "done"
    assert (cell.run_status, cell.attempts) == ("timeout", 2)
    attempts = store.attempts(run_id, cell.case_no, 1)
    for a in attempts:
        assert a.error == error
        assert 1000 <= a.latency_ms <= (1.0 + DEADLINE_SLACK_S) * 1000, a
    # the cell: attempts × (timeout + slack), the back-off between them not waited here
    assert cell.latency_ms <= 2 * (1.0 + DEADLINE_SLACK_S) * 1000
    assert attempts[1].started_at - attempts[0].started_at <= 1.0 + DEADLINE_SLACK_S + 1.0


# -- 3. hostile replies are that cell's bad_reply ------------------------------------------

@pytest.mark.parametrize(("behaviour", "reason"), [
    ("nan-usage", "not JSON: NaN is not a JSON number"),
    ("infinity-usage", "not JSON: Infinity is not a JSON number"),
    ("1e999-usage", "not JSON: 1e999 is out of range for a number"),
    ("bigint-usage", "usage.total_tokens: 123456789012345678901234 is out of range"),
    ("bigint-string-usage", "usage.total_tokens: '1e999' is out of range"),
    ("deep-json", "JSON nested deeper than"),
    ("deep-json-500-levels", "JSON nested deeper than"),
    ("charset-idna", "cannot be read as its declared charset 'idna'"),
])
def test_a_hostile_reply_is_that_cells_bad_reply_and_the_run_goes_on(store, tmp_path, behaviour,
                                                                     reason):
    # with a secret: redacting a body walks it before the reading refuses it
    _, final, cells = run(store, tmp_path, [behaviour, "ok"],
                          headers={"X-Exam-Token": "tok-SECRET-1234"})
    assert final == "done"
    assert (cells[behaviour].run_status, cells["ok"].run_status) == ("bad_reply", "ok")
    assert reason in cells[behaviour].error
    assert "\n" not in cells[behaviour].error and len(cells[behaviour].error) <= 300


def test_an_http_error_with_a_hostile_body_is_still_an_http_error(store, tmp_path):
    _, final, cells = run(store, tmp_path, ["deep-json-500"])
    assert final == "done"
    assert cells["deep-json-500"].run_status == "http_error"
    assert cells["deep-json-500"].error.startswith("HTTP 500")


@pytest.mark.parametrize(("behaviour", "error"), [
    ("many-headers", "not a valid HTTP reply (HTTPException: got more than 100 headers)"),
    ("long-header-line", "not a valid HTTP reply (LineTooLong: got more than 65536 bytes when "
                         "reading header line)"),
    ("not-http", "not a valid HTTP reply (BadStatusLine: HELLO [redacted])"),
])
def test_a_reply_that_is_not_http_is_named_so_not_a_connection_closed(store, tmp_path, behaviour,
                                                                       error):
    with FakeAgent() as fake:
        bank = write_bank(tmp_path, [behaviour])
        agent = agent_for(fake.url, bank, headers={"X-Exam-Token": "tok-SECRET-1234"})
        run_id = create_run(store, agent, "v1")
        execute(store, [job_for(store, run_id, agent)])
    cell = store.cells([run_id])[0]
    assert cell.run_status == "http_error"
    assert cell.error == f"{error} ({agent.safe_url})"


@pytest.mark.parametrize("behaviour", ["lone-surrogate", "charset-utf7-surrogate"])
def test_lone_surrogates_are_stored_as_replacement_characters(store, tmp_path, behaviour):
    run_id, final, cells = run(store, tmp_path, [behaviour])
    assert final == "done"
    cell = cells[behaviour]
    assert cell.run_status == "ok" and "\ufffd" in cell.text
    assert store.attempts(run_id, cell.case_no, 1)[0].body is not None


def test_reply_text_is_capped_and_the_cut_is_said(store, tmp_path):
    run_id, final, cells = run(store, tmp_path, ["long-text"], timeout_s=30.0)
    cell = cells["long-text"]
    assert final == "done"
    assert cell.run_status == "bad_reply"
    assert cell.error == (f"reply text is 7,000,004 characters, over the {TEXT_CAP_CHARS:,} the "
                          f"exam stores and grades; the first {TEXT_CAP_CHARS:,} are kept")
    assert len(cell.text) == TEXT_CAP_CHARS and cell.text.startswith("備貨中 xxx")


# -- the reply parser never raises ---------------------------------------------------------

JSON_ISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["answer", "output", "text", "usage", "status", "truncated",
                         "model_calls", "total_tokens", "intermediateSteps", "action", "tool",
                         "toolInput"]) | st.text(max_size=5), inner, max_size=4),
    max_leaves=20)


FIGURE = st.one_of(st.integers(), st.floats(), st.text(max_size=8),
                   st.sampled_from(["1e999", "NaN", "-Infinity", "12", str(2**70)]))
REPLY_SHAPED = st.fixed_dictionaries(
    {"answer": st.one_of(st.text(), JSON_ISH)},
    optional={"usage": st.fixed_dictionaries({}, optional={"model_calls": FIGURE,
                                                           "total_tokens": FIGURE}),
              "status": JSON_ISH, "truncated": JSON_ISH,
              "intermediateSteps": st.lists(st.fixed_dictionaries({"action": st.fixed_dictionaries(
                  {"tool": JSON_ISH, "toolInput": JSON_ISH})}), max_size=3)})
NESTED = st.integers(min_value=1, max_value=5000).map(lambda n: "[" * n + "]" * n)
SURROGATE_ESCAPES = st.lists(st.sampled_from(["\\ud800", "\\udfff", "a", "\\u0000"])).map(
    lambda parts: '{"answer": "' + "".join(parts) + '"}')


def _as_body(value) -> str:
    # allow_nan: NaN and Infinity reach the parser as text, as a hostile agent would send them
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


@pytest.mark.slow  # 300 generated bodies (~5 s)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.one_of(st.text(), JSON_ISH.map(_as_body), REPLY_SHAPED.map(_as_body), NESTED,
                      SURROGATE_ESCAPES, st.binary().map(lambda b: b.decode("latin-1"))),
       fmt=st.sampled_from(["json", "text"]))
def test_no_body_makes_the_reply_parser_raise(tmp_path_factory, body, fmt):
    agent = agent_for("http://127.0.0.1:9/", tmp_path_factory.getbasetemp() / "T.json",
                      reply_format=fmt)
    row = AttemptRow(1, 0.0, 200, 1.0, "", "application/json", body, len(body), False)
    result = cell_result(agent, [Attempt("ok", row, body, None)])
    assert result.run_status in ("ok", "bad_reply", "truncated", "agent_error")
    assert "\n" not in result.error
    for figure in (result.model_calls, result.tokens):
        assert figure is None or -(2**63) <= figure < 2**63
    if result.read is not None and result.read.text is not None:
        result.read.text.encode("utf-8")  # storable: no lone surrogates


@pytest.mark.slow  # 300 generated bodies
@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=200) | st.sampled_from([b"+2AA-", b"\\ud800", b"\\U99999999",
                                                      b"xn--", b"\xff\xfe\x00\xd8"]),
       charset=st.sampled_from(["", "utf-8", "idna", "punycode", "utf-7", "unicode_escape",
                                "raw_unicode_escape", "utf-16", "utf-32", "rot13", "base64", "zip",
                                "bogus", '"latin-1"', "cp1252", "big5", "shift_jis"]))
def test_no_body_in_any_charset_makes_decoding_raise(raw, charset):
    text, problem = decode_text(raw, f"application/json; charset={charset}")
    text.encode("utf-8")  # storable
    assert "\n" not in problem


@pytest.mark.parametrize(("raw", "ctype", "problem"), [
    ("訂單備貨中".encode("big5"), "application/json",
     "the body is not valid utf-8 (bytes ad at offset 0; does Content-Type name its charset?)"),
    (b'{"answer": "ok \xe8\xa8"}', "application/json; charset=utf-8",  # cut inside a character
     "the body is not valid utf-8 (bytes e8 a8 at offset 15; does Content-Type name its "
     "charset?)"),
])
def test_bytes_not_valid_in_the_charset_are_a_problem_not_a_mangled_answer(raw, ctype, problem):
    text, found = decode_text(raw, ctype)
    assert found == problem and "\ufffd" in text


def test_a_body_in_its_declared_charset_is_read_without_a_problem():
    assert decode_text("訂單備貨中".encode("big5"), "application/json; charset=big5") == (
        "訂單備貨中", "")


@pytest.mark.parametrize("ctype", ["application/json", "application/json; charset=UTF8"])
def test_a_utf8_byte_order_mark_is_dropped_so_the_json_reads(ctype):
    text, problem = decode_text(b'\xef\xbb\xbf{"answer": "ok"}', ctype)
    assert (text, problem) == ('{"answer": "ok"}', "")


def test_json_nested_too_deep_is_refused_without_parsing_it(monkeypatch):
    """A 100,000-deep body is refused by counting brackets: json.loads would recurse to the
    interpreter's limit, where a garbage collection's finalizers have no stack left."""
    import json as json_module

    from exam import reading

    def never(*_a, **_k):
        raise AssertionError("json.loads was called on a body nested too deep")

    deep = "[" * 100_000 + "]" * 100_000
    monkeypatch.setattr(json_module, "loads", never)
    with pytest.raises(reading.ReplyError, match="nested deeper than 200"):
        reading.parse_json(deep)
    monkeypatch.undo()
    # the limit is the one _clean applies: 201 brackets around nothing pass, 202 do not;
    # brackets inside strings are text
    assert reading.parse_json("[" * 201 + "]" * 201) is not None
    with pytest.raises(reading.ReplyError, match="nested deeper"):
        reading.parse_json("[" * 202 + "]" * 202)
    assert reading.parse_json('{"answer": "' + "[" * 5000 + '"}') == {"answer": "[" * 5000}


def _connections_to(ports: set[int]) -> int:
    """This machine's established TCP connections from a client to one of ``ports``."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        _, _local_addr, remote, state = line.split()[:4]
        if state == "01" and int(remote.rsplit(":", 1)[1], 16) in ports:
            count += 1
    return count


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="Linux /proc")
def test_a_thread_keeps_connections_open_to_the_last_few_agents_only(tmp_path):
    """A thread that sent to many agents (the web service's threads check any agent) keeps
    idle connections to the few it sent to last, as requests' adapter does (its
    pool_connections), not one to every agent it ever sent to."""
    import contextlib
    import gc

    from exam.pipeline import transport
    kept = transport.POOLS_KEPT

    with contextlib.ExitStack() as stack:
        fakes = [stack.enter_context(FakeAgent()) for _ in range(kept + 3)]
        ports = {int(f.url.split(":")[2].split("/")[0]) for f in fakes}
        bank = write_bank(tmp_path, ["ok"])
        for fake in fakes:
            assert post_once(agent_for(fake.url, bank), {"behaviour": "ok"}, 1).kind == "ok"
        gc.collect()
        assert _connections_to(ports) <= kept
        for fake in fakes[-kept:]:  # the last few are kept alive: reused
            assert post_once(agent_for(fake.url, bank), {"behaviour": "ok"}, 1).kind == "ok"
        assert _connections_to(ports) <= kept


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the certificate")
def test_an_https_agent_whose_certificate_no_authority_signed_is_never_sent_the_work_order(
        tmp_path):
    """Certificates are checked (requests' CA bundle): a self-signed agent is a connection
    error that says why, its URL's secrets scrubbed, and the work order never reaches it."""
    import ssl
    import subprocess

    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem"),
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    fake = FakeAgent()
    server = fake.served.server
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with fake:
        url = fake.url.replace("http://", "https://") + "?token=tls-secret-51"
        out = post_once(agent_for(url, write_bank(tmp_path, ["ok"])), {"behaviour": "ok"}, 1)
    assert out.kind == "connection"
    assert out.row.error.startswith("SSLError: "), out.row.error
    assert "CERTIFICATE_VERIFY_FAILED" in out.row.error
    assert "tls-secret-51" not in out.row.error
    assert fake.requests == []


def test_a_proxy_named_in_the_environment_is_never_used(tmp_path, monkeypatch):
    """Exam traffic goes straight to the agent: HTTP_PROXY and its kin are not read."""
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # discard: nothing answers there
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with FakeAgent() as fake:
        out = post_once(agent_for(fake.url, write_bank(tmp_path, ["ok"])), {"behaviour": "ok"}, 1)
    assert out.kind == "ok", out.row.error
    assert len(fake.requests) == 1


def test_a_header_of_tens_of_kilobytes_is_stored_cut(tmp_path):
    """A Content-Type of 60,000 characters was stored whole with every attempt."""
    from http.server import BaseHTTPRequestHandler

    from exam.records import HEADER_CAP_CHARS
    from tests.fakes.server import serve

    class Long(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps({"answer": "備貨中", "status": "ok"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json; x=" + "a" * 60_000)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serve(Long) as url:
        out = post_once(agent_for(url, write_bank(tmp_path, ["ok"])), {"behaviour": "ok"}, 1)
    assert out.kind == "ok"
    assert out.row.content_type == ("application/json; x=" + "a" * 60_000)[:HEADER_CAP_CHARS] + "…"
