"""A fake OpenAI-compatible model on 127.0.0.1 that drives a real n8n AI Agent's tool loop.

It answers ``POST /v1/chat/completions`` and ``POST /v1/responses`` (not streamed): with a call
to the first tool the request offers until a tool result is in the conversation, then with
text quoting that result. Markers in the user's message choose the behaviour:

- ``[parallel]``: two tool calls in the first turn (one model call for both);
- ``[fail]``: HTTP 400 with an OpenAI-shaped error (the agent node then fails).

Every call is recorded with the usage it billed, keyed by the user's message, so a test can
compare what n8n recorded with what the model really charged.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from tests.fakes.server import QuietHandler, send_json, serve

FAIL_MESSAGE = "fake model: this request is refused on purpose"


@dataclass(frozen=True, slots=True)
class Call:
    api: str  # "chat" or "responses"
    prompt: str  # the user's message: which work order this call belongs to
    turn: int  # 1 for the first call of a conversation, 2 once tool results are in
    prompt_tokens: int
    completion_tokens: int
    status: int


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class FakeModel:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(QuietHandler):
            disable_nagle_algorithm = True

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    request = json.loads(raw)
                except ValueError:
                    request = {}
                if self.path.rstrip("/").endswith("/chat/completions"):
                    status, body = fake.chat(request)
                elif self.path.rstrip("/").endswith("/responses"):
                    status, body = fake.responses(request)
                else:
                    status, body = 404, {"error": {"message": f"no route {self.path}"}}
                send_json(self, status, body)

        self.served = serve(Handler)
        self.base_url = self.served.url + "/v1"

    def __enter__(self) -> FakeModel:
        self.served.start()
        return self

    def __exit__(self, *exc) -> None:
        self.served.close()

    # -- what a test reads -------------------------------------------------------------------

    def calls_for(self, prompt_part: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if prompt_part in c.prompt]

    # -- behaviour ---------------------------------------------------------------------------

    def _record(self, api: str, prompt: str, turn: int, status: int) -> tuple[int, int]:
        # distinct figures per turn, so a sum that drops or doubles a call shows
        usage = (0, 0) if status != 200 else (101 + 10 * turn, 7 + turn)
        with self.lock:
            self.calls.append(Call(api, prompt, turn, usage[0], usage[1], status))
        return usage

    @staticmethod
    def _tool_calls(prompt: str) -> list[dict[str, str]]:
        calls = [{"id": "call_a", "arguments": json.dumps({"input": "6*7"})}]
        if "[parallel]" in prompt:
            calls.append({"id": "call_b", "arguments": json.dumps({"input": "2+3"})})
        return calls

    @staticmethod
    def _answer(results: list[str]) -> str:
        """Plain prose around the tool's figures (n8n hands them over as `[{"response": "42"}]`)."""
        figures = []
        for result in results:
            try:
                items = json.loads(result)
            except ValueError:
                items = result
            if isinstance(items, list):
                figures += [str(i.get("response", i)) if isinstance(i, dict) else str(i)
                            for i in items]
            else:
                figures.append(str(items))
        # the agent's own answer (grader 2.3: "the calculator says 42" is reported speech)
        return "The result is " + " and ".join(figures) + "."

    def chat(self, req: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = req.get("messages") or []
        prompt = next((_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
        results = [_text(m.get("content")) for m in messages if m.get("role") == "tool"]
        turn = 2 if results else 1
        if "[fail]" in prompt:
            self._record("chat", prompt, turn, 400)
            return 400, {"error": {"message": FAIL_MESSAGE, "type": "invalid_request_error",
                                   "code": "refused"}}
        p, c = self._record("chat", prompt, turn, 200)
        tools = req.get("tools") or []
        if results or not tools:
            message = {"role": "assistant", "content": self._answer(results)}
            finish = "stop"
        else:
            name = tools[0]["function"]["name"]
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": t["id"], "type": "function",
                 "function": {"name": name, "arguments": t["arguments"]}}
                for t in self._tool_calls(prompt)]}
            finish = "tool_calls"
        return 200, {
            "id": f"chatcmpl-{len(self.calls)}", "object": "chat.completion", "created": 0,
            "model": req.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
        }

    def responses(self, req: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        items = req.get("input") or []
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        prompt = next((_text(i.get("content")) for i in items if i.get("role") == "user"), "")
        results = [str(i.get("output", "")) for i in items
                   if i.get("type") == "function_call_output"]
        turn = 2 if results else 1
        if "[fail]" in prompt:
            self._record("responses", prompt, turn, 400)
            return 400, {"error": {"message": FAIL_MESSAGE, "type": "invalid_request_error",
                                   "code": "refused"}}
        p, c = self._record("responses", prompt, turn, 200)
        tools = [t for t in req.get("tools") or [] if t.get("type") == "function"]
        if results or not tools:
            output = [{"type": "message", "id": "msg_1", "role": "assistant",
                       "status": "completed",
                       "content": [{"type": "output_text", "text": self._answer(results),
                                    "annotations": []}]}]
        else:
            output = [{"type": "function_call", "id": f"fc_{t['id']}", "call_id": t["id"],
                       "name": tools[0]["name"], "arguments": t["arguments"],
                       "status": "completed"} for t in self._tool_calls(prompt)]
        return 200, {
            "id": f"resp_{len(self.calls)}", "object": "response", "created_at": 0,
            "status": "completed", "model": req.get("model", "fake"), "output": output,
            "usage": {"input_tokens": p, "output_tokens": c, "total_tokens": p + c},
        }
