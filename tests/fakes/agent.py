"""A fault-injecting agent on 127.0.0.1: the work order's ``behaviour`` says how to answer.

It records every request (arrival time, body, headers) and the most requests it had in
flight at once, so tests can measure the runner's gate from the server's side. With
``hold_after=n`` it answers the first n requests and holds every later one until
``release()``: a test can stop a run at an exact point however busy the machine is.
"""

from __future__ import annotations

import functools
import gzip
import json
import socket
import struct
import sys
import threading
import time
import zlib
from collections import Counter
from http.server import ThreadingHTTPServer
from typing import Any

from tests.fakes.server import QuietHandler, serve

OK_BODY = {"answer": "訂單 A10302 目前備貨中，預計 2026-09-16 到貨。", "status": "ok",
           "usage": {"model_calls": 2, "total_tokens": 1000}}
# an n8n AI Agent reply: with its intermediateSteps it is well over n8n's 1 KB gzip threshold
LONG_BODY = {**OK_BODY, "intermediateSteps": [
    {"action": {"tool": "order_lookup", "toolInput": {"order_id": "A10302"}},
     "observation": "訂單狀態：備貨中。" * 60} for _ in range(3)]}
# hostile bodies, written as raw text: Python's json would not produce most of them
HOSTILE = {
    "nan-usage": '{"answer": "備貨中", "usage": {"total_tokens": NaN}}',
    "infinity-usage": '{"answer": "備貨中", "usage": {"model_calls": Infinity}}',
    "1e999-usage": '{"answer": "備貨中", "usage": {"total_tokens": 1e999}}',
    "bigint-usage": '{"answer": "備貨中", "usage": {"total_tokens": 123456789012345678901234}}',
    "bigint-string-usage": '{"answer": "備貨中", "usage": {"total_tokens": "1e999"}}',
    "deep-json": '{"answer": "備貨中", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
    # deep enough to outrun a recursive walk of the parsed JSON, shallow enough to parse
    "deep-json-500-levels": '{"answer": "備貨中", "x": ' + "[" * 500 + "]" * 500 + "}",
    "lone-surrogate": '{"answer": "備貨中 \\ud800", "intermediateSteps": [{"action": '
                      '{"tool": "t\\udfff", "toolInput": {"q": "\\ud800"}}}]}',
}


@functools.cache
def gzip_bomb() -> bytes:
    """About 1 MB of gzip that expands to 1 GB: 64 members of 16 MB of zeros each."""
    return gzip.compress(b"0" * 16_000_000, 9) * 64


class FakeAgent:
    def __init__(self, delay_s: float = 0.0, hold_after: int | None = None):
        self.delay_s = delay_s
        self.hold_after = hold_after
        self.released = threading.Event()
        self.held = 0
        self.changed = threading.Condition()  # notified whenever a request is held
        self.requests: list[dict[str, Any]] = []
        self.calls: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(QuietHandler):
            # headers and body are two writes: without TCP_NODELAY, Nagle's algorithm and the
            # client's delayed ACK add ~40 ms to every reply, which is not the harness's time
            disable_nagle_algorithm = True

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with fake.lock:
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                    fake.requests.append({"t": time.monotonic(), "raw": raw,
                                          "headers": dict(self.headers), "path": self.path})
                    hold = fake.hold_after is not None and len(fake.requests) > fake.hold_after
                counted = True
                try:
                    if hold and not fake.released.is_set():
                        with fake.changed:
                            fake.held += 1
                            fake.changed.notify_all()
                        fake.released.wait(timeout=120)
                    body = json.loads(raw or b"{}")
                    behaviour = body.get("behaviour", "ok") if isinstance(body, dict) else "ok"
                    with fake.lock:
                        fake.calls[behaviour] += 1
                        n = fake.calls[behaviour]
                    if fake.delay_s:
                        time.sleep(fake.delay_s)
                    # no longer in flight once it starts answering: the client may read the
                    # answer and send its next request before this thread runs again, which
                    # counted one request too many at concurrency 1
                    with fake.lock:
                        fake.in_flight -= 1
                        counted = False
                    fake.respond(self, behaviour, n)
                finally:
                    if counted:
                        with fake.lock:
                            fake.in_flight -= 1

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                # a held request answered after its client was killed: expected, not news
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.served = serve(Handler, Server)
        self.url = self.served.url + "/webhook/test"

    def __enter__(self) -> FakeAgent:
        self.served.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
        self.served.close()

    def wait_held(self, n: int = 1, timeout: float = 60) -> None:
        """Block until at least ``n`` requests are being held (see ``hold_after``)."""
        with self.changed:
            if not self.changed.wait_for(lambda: self.held >= n, timeout=timeout):
                raise AssertionError(f"{self.held} request(s) held after {timeout} s, "
                                     f"wanted {n}")

    def release(self) -> None:
        """Answer every held request, and every later one at once."""
        self.released.set()

    @staticmethod
    def send(handler, status: int, body: bytes | str, ctype: str = "application/json",
             headers: dict[str, str] | None = None) -> None:
        data = body.encode() if isinstance(body, str) else body
        handler.send_response(status)
        handler.send_header("Content-Type", ctype)
        handler.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(data)

    def json(self, handler, obj: Any, status: int = 200, **kw) -> None:
        self.send(handler, status, json.dumps(obj, ensure_ascii=False), **kw)

    @staticmethod
    def chunked(handler, status: int, parts: list[bytes], headers: dict[str, str],
                pause_s: float = 0.0) -> None:
        """A chunked reply, as n8n's webhook server sends it; stops when the client hangs up."""
        handler.send_response(status)
        for k, v in headers.items():
            handler.send_header(k, v)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        try:
            for part in parts:
                handler.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                handler.wfile.flush()
                time.sleep(pause_s)
            handler.wfile.write(b"0\r\n\r\n")
        except OSError:
            handler.close_connection = True

    @staticmethod
    def slow_headers(handler, every_s: float, limit_s: float = 30.0) -> None:
        """One header line every ``every_s`` seconds, never ending them (until ``limit_s``)."""
        handler.send_response(200)
        handler.flush_headers()
        start = time.monotonic()
        try:
            n = 0
            while time.monotonic() - start < limit_s:
                handler.wfile.write(f"X-Slow-{n}: {n}\r\n".encode())
                handler.wfile.flush()
                n += 1
                time.sleep(every_s)
        except OSError:
            pass
        handler.close_connection = True

    @staticmethod
    def trickle(handler, every_s: float, size: int = 40) -> None:
        """Headers at once, then one byte of body every ``every_s`` seconds."""
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(size))
        handler.end_headers()
        try:
            for _ in range(size):
                handler.wfile.write(b" ")
                handler.wfile.flush()
                time.sleep(every_s)
        except OSError:
            pass
        handler.close_connection = True

    @staticmethod
    def reset(handler) -> None:
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.connection.close()
        handler.close_connection = True

    def respond(self, h, behaviour: str, n: int) -> None:  # noqa: C901 - a table of faults
        if behaviour == "ok":
            self.json(h, OK_BODY)
        elif behaviour == "slow":
            time.sleep(3)
            self.json(h, OK_BODY)
        elif behaviour.startswith("status-"):
            code = int(behaviour.split("-")[1])
            self.json(h, {"error": f"upstream said {code}"}, status=code)
        elif behaviour == "500-then-ok":
            if n % 2 == 1:
                self.json(h, {"error": "Agent stopped due to max iterations.",
                              "usage": {"model_calls": 6, "total_tokens": 2000}}, status=500)
            else:
                self.json(h, OK_BODY)
        elif behaviour == "429-retry-after":
            if n % 2 == 1:
                self.json(h, {"error": "rate limited"}, status=429, headers={"Retry-After": "1"})
            else:
                self.json(h, OK_BODY)
        elif behaviour == "429-wait-60":  # always rate limited, come back in a minute
            self.json(h, {"error": "rate limited"}, status=429, headers={"Retry-After": "60"})
        elif behaviour == "429-no-header":
            if n % 2 == 1:
                self.json(h, {"error": "rate limited"}, status=429)
            else:
                self.json(h, OK_BODY)
        elif behaviour == "html":
            self.send(h, 200, "<html><body>502 Bad Gateway</body></html>", "text/html")
        elif behaviour == "html-500":
            self.send(h, 500, "<html><body>Internal error</body></html>", "text/html")
        elif behaviour == "empty":
            self.send(h, 200, b"")
        elif behaviour == "invalid-json":
            self.send(h, 200, '{"answer": "oops"')
        elif behaviour == "array":
            self.json(h, [OK_BODY])
        elif behaviour in ("many-headers", "long-header-line", "not-http"):  # raw bytes, no HTTP
            head = {"many-headers": b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 200,
                    "long-header-line": b"HTTP/1.1 200 OK\r\nX-A: " + b"b" * 70_000 + b"\r\n",
                    "not-http": b"HELLO " + h.headers.get("X-Exam-Token", "").encode() + b"\r\n"
                    }[behaviour]
            h.wfile.write(head + b"Content-Length: 2\r\n\r\n{}")
            h.close_connection = True
        elif behaviour == "answer-object":  # the text path holds an object, the facts inside it
            self.json(h, {**OK_BODY, "answer": {"text": OK_BODY["answer"]}})
        elif behaviour == "truncated":
            self.json(h, {**OK_BODY, "truncated": True})
        elif behaviour == "no-text":
            self.json(h, {"result": "something", "status": "ok"})
        elif behaviour == "text-plain-json":
            self.send(h, 200, json.dumps(OK_BODY, ensure_ascii=False), "text/plain")
        elif behaviour == "reset":
            self.reset(h)
        elif behaviour == "reset-mid-body":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", "5000")
            h.end_headers()
            h.wfile.write(b'{"answer": "partial')
            h.wfile.flush()
            time.sleep(0.05)
            self.reset(h)
        elif behaviour == "drip":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", "200")
            h.end_headers()
            try:
                for _ in range(200):
                    h.wfile.write(b" ")
                    h.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass
        elif behaviour == "n8n-404":
            self.json(h, {"code": 404, "message": 'The requested webhook "POST w1-orders" is not '
                                                  "registered.",
                          "hint": "The workflow must be active for a production URL to run "
                                  "successfully."}, status=404)
        elif behaviour == "gzip-chunked":  # n8n: gzip when the client accepts it, chunked
            data = json.dumps(LONG_BODY, ensure_ascii=False).encode()
            if "gzip" in h.headers.get("Accept-Encoding", ""):
                data = gzip.compress(data)
            self.chunked(h, 200, [data[i:i + 512] for i in range(0, len(data), 512)],
                         {"Content-Type": "application/json; charset=utf-8",
                          "Content-Encoding": "gzip", "Vary": "Accept-Encoding"})
        elif behaviour == "deflate":
            data = zlib.compress(json.dumps(LONG_BODY, ensure_ascii=False).encode())
            self.send(h, 200, data, headers={"Content-Encoding": "deflate"})
        elif behaviour == "gzip-lie":  # says gzip, sends plain JSON
            self.send(h, 200, json.dumps(OK_BODY), headers={"Content-Encoding": "gzip"})
        elif behaviour == "gzip-cut":  # a gzip stream that stops half way
            data = gzip.compress(json.dumps(LONG_BODY, ensure_ascii=False).encode())
            self.send(h, 200, data[: len(data) // 2], headers={"Content-Encoding": "gzip"})
        elif behaviour == "brotli":  # an encoding the exam did not ask for
            self.send(h, 200, b"\x1b\x03\x00\xf8", headers={"Content-Encoding": "br"})
        elif behaviour == "gzip-bomb":
            self.chunked(h, 200, [gzip_bomb()], {"Content-Type": "application/json",
                                                 "Content-Encoding": "gzip"})
        elif behaviour == "slow-headers":
            self.slow_headers(h, 0.2)
        elif behaviour == "trickle":
            self.trickle(h, 0.95)
        elif behaviour == "trickle-chunked":
            self.chunked(h, 200, [b" "] * 40, {"Content-Type": "application/json"}, pause_s=0.95)
        elif behaviour in HOSTILE:
            self.send(h, 200, HOSTILE[behaviour])
        elif behaviour == "deep-json-500":
            self.send(h, 500, HOSTILE["deep-json"])
        elif behaviour == "charset-idna":
            self.send(h, 200, json.dumps(OK_BODY), "application/json; charset=idna")
        elif behaviour == "charset-utf7-surrogate":
            self.send(h, 200, b'{"answer": "+2AA-"}', "application/json; charset=utf-7")
        elif behaviour == "long-text":
            self.json(h, {**OK_BODY, "answer": "備貨中 " + "x" * 7_000_000})
        elif behaviour == "huge":
            self.send(h, 200, b'{"answer": "' + b"x" * 20_000_000 + b'"}')
        elif behaviour == "xml":
            self.send(h, 200, "<reply><answer>備貨中</answer></reply>", "application/xml")
        elif behaviour == "echo-token":
            token = h.headers.get("X-Exam-Token", "")
            self.json(h, {"error": f"token {token} is not valid for this workflow"}, status=401)
        elif behaviour == "echo-token-ok":
            token = h.headers.get("X-Exam-Token", "")
            self.json(h, {"answer": f"備貨中 (debug: token={token})", "status": "ok"})
        elif behaviour == "echo-headers":
            self.json(h, {"answer": "ok", "status": "ok"},
                      headers={"X-Upstream-Token": "SECRET-IN-REPLY-HEADER"})
        else:
            self.json(h, {"error": f"unknown behaviour {behaviour}"}, status=400)
