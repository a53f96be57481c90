"""A local OpenAI-compatible chat-completions server with scripted replies and injectable faults.

Tests point litellm at it (``model="openai/<name>"``, ``api_base=server.url``), so the production
client code, litellm included, is what runs; only the model is scripted. It speaks
``POST /v1/chat/completions`` (and ``/chat/completions``), answers with the OpenAI JSON shape
including ``usage``, and records every request it receives.

A reply is a string (the assistant's content) or a dict:

- ``{"content": "..."}`` (optionally ``"finish_reason"``, ``"usage"``);
- ``{"tool_calls": [{"name": "run_shell", "arguments": {...}}]}``: tool calls in OpenAI's shape
  (arguments given as a string are sent as they are, so malformed JSON can be scripted);
- ``{"fault": "429"}``, ``{"fault": "500"}``, ``{"fault": "503"}``: that HTTP status;
- ``{"fault": "timeout", "delay_s": 5}``: answer only after ``delay_s`` seconds;
- ``{"fault": "invalid_json"}``: a body that is not JSON;
- ``{"fault": "truncated"}``: content cut mid-way with ``finish_reason="length"``.

Replies come from ``script`` in order (the last one repeats), or from ``responder(request)``
when given, which sees the parsed request body and returns a reply.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Reply = str | dict[str, Any]


class FakeOpenAIServer:
    def __init__(self, script: list[Reply] | None = None, responder: Callable[[dict], Reply] | None = None):
        self.script = list(script or [])
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._served = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                if not self.path.rstrip("/").endswith("chat/completions"):
                    self._send(404, {"error": {"message": f"unknown path {self.path}"}})
                    return
                reply = server._next(body)
                server._answer(self, body, reply)

            def _send(self, status: int, payload: Any, raw: bytes | None = None):
                data = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._handler = Handler
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def calls(self) -> int:
        return len(self.requests)

    def _next(self, body: dict) -> Reply:
        with self._lock:
            self.requests.append(body)
            index = self._served
            self._served += 1
        if self.responder is not None:
            return self.responder(body)
        if not self.script:
            return "ok"
        return self.script[min(index, len(self.script) - 1)]

    def _answer(self, handler, body: dict, reply: Reply) -> None:
        spec = {"content": reply} if isinstance(reply, str) else dict(reply)
        fault = spec.get("fault")
        if fault in ("429", "500", "502", "503"):
            handler._send(int(fault), {"error": {"message": f"scripted {fault}", "type": "scripted_fault"}})
            return
        if fault == "timeout":
            time.sleep(float(spec.get("delay_s", 5)))
        if fault == "invalid_json":
            handler._send(200, None, raw=b"{this is not json")
            return
        content = spec.get("content", "")
        finish = spec.get("finish_reason", "stop")
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if spec.get("tool_calls"):
            message["content"] = content or None
            message["tool_calls"] = [
                {"id": call.get("id", f"call_{self.calls}_{i}"), "type": "function",
                 "function": {"name": call["name"], "arguments": call["arguments"] if isinstance(call["arguments"], str)
                              else json.dumps(call["arguments"])}}
                for i, call in enumerate(spec["tool_calls"])
            ]
            finish = spec.get("finish_reason", "tool_calls")
        if fault == "truncated":
            content, finish = content[: max(1, len(content) // 2)], "length"
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        usage = spec.get("usage") or {"prompt_tokens": prompt_tokens, "completion_tokens": len(content.split()),
                                      "total_tokens": prompt_tokens + len(content.split())}
        handler._send(200, {
            "id": f"chatcmpl-fake-{self.calls}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        })

    def __enter__(self) -> "FakeOpenAIServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
