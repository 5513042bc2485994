"""A fake LINE Messaging API on 127.0.0.1 that the real line-bot-sdk is pointed at.

The SDK talks urllib3, so mocking ``requests`` would see nothing; this server records
every push and reply (headers included) and answers from a script of statuses.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from tests.fakes.server import QuietHandler, send_json, serve


class FakeLineApi:
    def __init__(self):
        self.requests: list[dict[str, Any]] = []
        self.script: list[tuple[int, dict[str, str], dict[str, Any]]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(QuietHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with fake.lock:
                    fake.requests.append({"path": self.path, "headers": dict(self.headers),
                                          "body": json.loads(raw or b"{}")})
                    status, headers, body = fake.script.pop(0) if fake.script else (200, {}, {})
                if status == 200 and not body:
                    sent = fake.requests[-1]["body"].get("messages", [])
                    body = {"sentMessages": [{"id": str(461230966842064897 + i),
                                              "quoteToken": f"q{i}"} for i in range(len(sent))]}
                send_json(self, status, body, headers)

        self.served = serve(Handler)
        self.host = self.served.url

    def answer(self, *responses: tuple[int, dict[str, str], dict[str, Any]] | int) -> None:
        """Queue answers: a status, or (status, headers, body)."""
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
