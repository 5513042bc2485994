"""A fake of n8n's public API on 127.0.0.1, serving real executions (tests/exam/data, fetched
from n8n 2.40.7 and trimmed) with the work orders a test gives them."""

from __future__ import annotations

import copy
import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.fakes.server import send_json, serve

DATA = Path(__file__).parent.parent / "exam" / "data"
KEY = "n8n-api-key-for-capture-tests-0123456789"
AGENT_TOKEN = "agent-webhook-token-55667788"  # the specialist's ${VAR} header secret


def n8n_execution(name: str, exec_id: str, body: dict, started: str,
                  workflow: str = "wfW2") -> dict:
    """A real execution with another work order (and the webhook's headers carrying secrets)."""
    ex = json.loads((DATA / f"n8n-execution-{name}.json").read_text(encoding="utf-8"))
    ex = copy.deepcopy(ex)
    ex.update(id=exec_id, startedAt=started, workflowId=workflow)
    for runs in ex["data"]["resultData"]["runData"].values():
        for run in runs:
            for items in run.get("data", {}).get("main", []):
                for item in items or []:
                    if "body" in item.get("json", {}):
                        item["json"]["body"] = body
                        item["json"]["headers"] = {"x-exam-token": AGENT_TOKEN,
                                                   "x-n8n-api-key": KEY}
    return ex


class FakeN8nApi:
    """GET /api/v1/executions/<id>, /api/v1/executions?workflowId=… (newest first, pages of
    ``limit`` with a cursor) and /api/v1/workflows, behind ``X-N8N-API-KEY``."""

    def __init__(self, executions: list[dict], workflows: list[dict]):
        self.seen: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                api.seen.append(self.path)
                if self.headers.get("X-N8N-API-KEY") != KEY:
                    return send_json(self, 401, {"message": "unauthorized"})
                url = urlsplit(self.path)
                q = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/api/v1/workflows":
                    return send_json(self, 200, {"data": workflows, "nextCursor": None})
                if url.path == "/api/v1/executions":
                    mine = sorted((e for e in executions if e["workflowId"] == q.get("workflowId")),
                                  key=lambda e: e["startedAt"], reverse=True)
                    start, size = int(q.get("cursor", 0)), int(q.get("limit", 20))
                    page = mine[start:start + size]
                    more = str(start + size) if start + size < len(mine) else None
                    return send_json(self, 200, {"data": page, "nextCursor": more})
                exec_id = url.path.rsplit("/", 1)[-1]
                found = [e for e in executions if e["id"] == exec_id]
                if not found:
                    return send_json(self, 404, {"message": "Not Found"})
                send_json(self, 200, found[0])

        self.served = serve(Handler).start()
        self.url = self.served.url

    def close(self):
        self.served.close()


