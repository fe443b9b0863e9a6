"""A small, real OpenAI-compatible chat-completions server for tests.

It is a stand-in: no LLM provider is reachable from the machines these tests run
on, so judges and generators talk, through litellm and real HTTP, to this server
on 127.0.0.1 instead. Everything above the socket (litellm's request building,
retries, timeouts, response parsing, our validation) is the real code path.

Endpoints: ``POST /v1/chat/completions`` and ``POST /chat/completions`` (so a
base URL with or without ``/v1`` works); ``GET /v1/models`` lists one model.

Use::

    from tests.openai_server import OpenAIServer, Reply

    with OpenAIServer() as srv:               # or the ``openai_server`` fixture
        srv.base_url                          # "http://127.0.0.1:PORT/v1"
        srv.default = Reply.json({"score": 1, "confidence": 1, "rationale": "ok"})
        srv.queue(Reply.rate_limited(), Reply.text("not json"))  # used first, in order
        srv.respond_with(lambda body: Reply.json({...}))  # answer chosen per request
        ... make calls ...
        srv.count                             # number of requests received
        srv.requests[0].body["messages"]     # every request body, in arrival order
        srv.reset()                           # forget requests and queued replies
        srv.errors                            # exceptions of responder functions (sent as HTTP 500)
        srv.max_in_flight                     # most requests being answered at once (concurrency checks)
        srv.required_key = "sk-test"          # any other bearer token is refused with 401 (a bad key)

How a request is answered: the next queued reply if any, else ``default``, which
is a ``Reply`` or a function ``body -> Reply | str | dict`` (a str is sent as the
message content, a dict as its JSON). A ``Reply`` sets the content, HTTP status,
a delay before answering (for timeouts and the concurrency benchmark),
``finish_reason`` (``"length"`` for a truncated answer) and the usage tokens
reported (counted from whitespace-separated words when not given).

The pytest fixture ``openai_server`` (function scope) yields a started server and
stops it afterwards; tests/conftest.py re-exports it so any test can ask for it.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Responder = Callable[[dict[str, Any]], "Reply | str | dict[str, Any]"]


@dataclass
class Reply:
    """One scripted answer."""

    content: str = ""
    status: int = 200
    delay: float = 0.0  # seconds to wait before answering
    finish_reason: str = "stop"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: dict[str, Any] | None = None  # body of a non-200 answer (OpenAI error shape)
    raw_body: bytes | None = None  # sent verbatim instead of a chat completion (broken HTTP payloads)
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, obj: Any, **kw: Any) -> Reply:
        return cls(content=json.dumps(obj), **kw)

    @classmethod
    def text(cls, text: str, **kw: Any) -> Reply:
        return cls(content=text, **kw)

    @classmethod
    def truncated(cls, text: str, **kw: Any) -> Reply:
        """An answer cut off by the token limit: finish_reason "length"."""
        return cls(content=text, finish_reason="length", **kw)

    @classmethod
    def rate_limited(cls, retry_after: float | None = None) -> Reply:
        headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
        return cls(status=429, headers=headers, error={"error": {
            "message": "Rate limit reached (test server)", "type": "rate_limit_error", "code": "rate_limit_exceeded"}})

    @classmethod
    def server_error(cls, status: int = 503) -> Reply:
        return cls(status=status, error={"error": {"message": "upstream unavailable (test server)",
                                                   "type": "server_error", "code": None}})


@dataclass
class Request:
    """One request as received."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    received_at: float


def _words(text: str) -> int:
    return len(text.split())


class OpenAIServer:
    """A threaded HTTP server on 127.0.0.1 (port chosen by the OS)."""

    def __init__(self, default: Reply | Responder | None = None, model: str = "test-judge") -> None:
        self.default: Reply | Responder = default or Reply.text("{}")
        self.model = model
        self.required_key: str | None = None  # when set, any other bearer token gets a 401 (a refused key)
        self.requests: list[Request] = []
        self.errors: list[str] = []  # exceptions raised by responder functions (answered with HTTP 500)
        self.in_flight = 0  # requests received and not yet answered
        self.max_in_flight = 0  # the most at once since start or reset()
        self._queue: deque[Reply | Responder] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------
    def queue(self, *replies: Reply | Responder) -> None:
        """Answer the next requests with these, in order, before falling back to ``default``."""
        with self._lock:
            self._queue.extend(replies)

    def respond_with(self, fn: Responder) -> None:
        self.default = fn

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            self.max_in_flight = self.in_flight

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> OpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                if self.path.rstrip("/") in ("/v1/models", "/models"):
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if self.path.split("?")[0].rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "request body is not JSON", "type": "invalid_request"}})
                    return
                auth = self.headers.get("authorization", "")
                if server.required_key is not None and auth != f"Bearer {server.required_key}":
                    self._send(401, {"error": {"message": "Incorrect API key provided (test server)",
                                              "type": "invalid_request_error", "code": "invalid_api_key"}})
                    return
                try:
                    reply = server._answer(self.path, body, dict(self.headers.items()))
                except Exception as e:  # a broken responder in a test: say so instead of dropping the line
                    with server._lock:
                        server.errors.append(f"{type(e).__name__}: {e}")
                        server.in_flight -= 1  # counted when the request was recorded
                    self._send(500, {"error": {"message": f"test responder failed: {type(e).__name__}: {e}",
                                               "type": "server_error"}})
                    return
                try:
                    if reply.delay and server._stopping.wait(reply.delay):
                        return  # shutting down: drop the connection
                    if reply.raw_body is not None:
                        self._send_bytes(reply.status, reply.raw_body, "text/plain", reply.headers)
                    elif reply.status != 200:
                        self._send(reply.status, reply.error or {"error": {"message": "error"}}, reply.headers)
                    else:
                        self._send(200, server._completion(body, reply), reply.headers)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _send(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                self._send_bytes(status, json.dumps(obj).encode(), "application/json", headers or {})

            def _send_bytes(self, status: int, data: bytes, ctype: str, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", ctype)
                    self.send_header("content-length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to tell it

        class Server(ThreadingHTTPServer):
            daemon_threads = True  # a handler still sleeping must not keep the process alive

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # client disconnects during timeouts are expected

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="openai-test-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- internals ---------------------------------------------------------
    def _answer(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(Request(path=path, body=body, headers=headers, received_at=time.time()))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            source = self._queue.popleft() if self._queue else self.default
        out = source(body) if callable(source) and not isinstance(source, Reply) else source
        if isinstance(out, Reply):
            return out
        if isinstance(out, dict):
            return Reply.json(out)
        return Reply.text(str(out))

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        prompt_text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        pt = reply.prompt_tokens if reply.prompt_tokens is not None else _words(prompt_text)
        ct = reply.completion_tokens if reply.completion_tokens is not None else _words(reply.content)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                         "message": {"role": "assistant", "content": reply.content}}],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
        }


@pytest.fixture
def openai_server():
    """A started OpenAIServer (stand-in for an LLM provider, which is unreachable here)."""
    with OpenAIServer() as srv:
        yield srv
