"""A fake LINE Messaging API on 127.0.0.1 that the real line-bot-sdk is pointed at.

The SDK talks urllib3, so mocking ``requests`` would see nothing; this server records
every push and reply (headers included) and answers from a script of statuses (or of
functions of the request's body, for an answer that quotes it back).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from tests.fakes.server import QuietHandler, send_json, serve


class FakeLineApi:
    def __init__(self):
        self.requests: list[dict[str, Any]] = []
        self.script: list[Any] = []  # (status, headers, body), or body → that
        self.lock = threading.Lock()
        fake = self

        class Handler(QuietHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with fake.lock:
                    fake.requests.append({"path": self.path, "headers": dict(self.headers),
                                          "body": json.loads(raw or b"{}")})
                    answer = fake.script.pop(0) if fake.script else (200, {}, {})
                    if callable(answer):
                        answer = answer(fake.requests[-1]["body"])
                    status, headers, body = answer
                if status == 200 and not body:
                    sent = fake.requests[-1]["body"].get("messages", [])
                    body = {"sentMessages": [{"id": str(461230966842064897 + i),
                                              "quoteToken": f"q{i}"} for i in range(len(sent))]}
                send_json(self, status, body, headers)

        self.served = serve(Handler)
        self.host = self.served.url

    def answer(self, *responses: tuple[int, dict[str, str], dict[str, Any]] | int
               | Callable[[dict[str, Any]], tuple[int, dict[str, str], dict[str, Any]]]) -> None:
        """Queue answers: a status, (status, headers, body), or a function of the request's
        body giving (status, headers, body)."""
        for r in responses:
            self.script.append((r, {}, {}) if isinstance(r, int) else r)

    def pushes(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == "/v2/bot/message/push"]

    def replies(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == "/v2/bot/message/reply"]

    def __enter__(self) -> FakeLineApi:
        self.served.start()
        return self

    def __exit__(self, *exc) -> None:
        self.served.close()
