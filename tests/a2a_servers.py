"""Real A2A agents for tests, served by uvicorn on 127.0.0.1 in a thread.

- `purple_app`: petscagent-bench's purple agent on protocol 0.3 as measured with
  a2a-sdk 0.3.26 (`message/send` answered by a Message: a text part
  `Code generation successful ✅\\nnsize: N\\ncli_args: ...\\n` and one file part per
  source whose `bytes` holds the RAW source text, not base64; failure: one text
  part `Code generation failed ❌\\nerror: ...`). a2a-sdk 1.x's own server always
  base64-encodes file bytes, so this agent is built from the SDK's v0.3 wire
  models (a2a.compat.v0_3.types) on Starlette, which is what the 0.3 SDK sent.
  Its `script` decides each answer, so it also misbehaves on demand.
- `sdk_app`: an agent on a2a-sdk 1.x's own server stack (AgentExecutor,
  DefaultRequestHandler, JSON-RPC routes); its executor answers a Task with an
  artifact carrying the submission JSON as a data part (or whatever the test's
  executor does).

Every request body each server receives is kept in `.bodies` (raw bytes), so a
test can inspect every byte an agent was sent."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """An ASGI app on 127.0.0.1:<port> in a background thread."""

    def __init__(self, app: Any, port: int | None = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.bodies: list[bytes] = []
        self.app = _Recorder(app, self.bodies)
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="error",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        t0 = time.time()
        while not self.server.started:
            if time.time() - t0 > 20:
                raise RuntimeError("test A2A server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(10)


class _Recorder:
    """ASGI middleware keeping every request body byte for byte."""

    def __init__(self, app: Any, bodies: list[bytes]):
        self.inner, self.bodies = app, bodies

    async def __call__(self, scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            return await self.inner(scope, receive, send)
        chunks: list[bytes] = []
        more = True
        while more:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        body = b"".join(chunks)
        self.bodies.append(f"{scope['method']} {scope['path']}\n".encode() + body)
        sent = False

        async def replay():  # type: ignore[no-untyped-def]
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.inner(scope, replay, send)


# ----------------------------------------------------------------------------- purple agent, protocol 0.3

def purple_success(files: dict[str, str], nsize: int = 3, cli_args: str = "") -> dict[str, Any]:
    """The purple agent's success Message, raw source text in `bytes` (as measured)."""
    from a2a.compat.v0_3 import types as t

    parts = [t.Part(root=t.TextPart(text=f"Code generation successful ✅\nnsize: {nsize}\ncli_args: {cli_args}\n"))]
    for name, text in files.items():
        parts.append(t.Part(root=t.FilePart(file=t.FileWithBytes(bytes=text, mime_type="text/plain", name=name))))
    return purple_message(parts)


def purple_failure(error: str) -> dict[str, Any]:
    from a2a.compat.v0_3 import types as t

    return purple_message([t.Part(root=t.TextPart(text=f"Code generation failed ❌\nerror: {error}\n"))])


def purple_message(parts: list[Any]) -> dict[str, Any]:
    from a2a.compat.v0_3 import types as t

    msg = t.Message(message_id=uuid.uuid4().hex, role=t.Role.agent, parts=parts, context_id=uuid.uuid4().hex)
    return msg.model_dump(mode="json", by_alias=True, exclude_none=True)


Script = Callable[[dict[str, Any]], Any]


def purple_app(script: Script, name: str = "purple_agent") -> Starlette:
    """`script(params)` returns the JSON-RPC result dict, or a Response to send as is,
    or ("sleep", seconds[, result]) to hang first, or ("error", code, message) for a JSON-RPC error."""
    from a2a.compat.v0_3 import types as t

    state: dict[str, str] = {}

    async def card(request: Request) -> JSONResponse:
        c = t.AgentCard(name=name, description="PETSc code generation agent (test stand-in of the 0.3 purple agent)",
                        url=state["url"], version="1.0.0", protocol_version="0.3.0", preferred_transport="JSONRPC",
                        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
                        capabilities=t.AgentCapabilities(streaming=False), skills=[t.AgentSkill(
                            id="petsc", name="PETSc Code Generation", description="PETSc code", tags=["petsc"])])
        return JSONResponse(c.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def rpc(request: Request) -> Response:
        req = json.loads(await request.body())
        if req.get("method") == "tasks/get" and req["params"]["id"] in state.get("tasks", {}):
            # a task the script left working: the next state it registered under state["tasks"][id]
            return JSONResponse({"jsonrpc": "2.0", "id": req.get("id"),
                                 "result": state["tasks"][req["params"]["id"]].pop(0)})
        if req.get("method") != "message/send":
            return JSONResponse({"jsonrpc": "2.0", "id": req.get("id"),
                                 "error": {"code": -32601, "message": f"method {req.get('method')} not found"}})
        state["inflight"] = state.get("inflight", 0) + 1
        state["max_inflight"] = max(state.get("max_inflight", 0), state["inflight"])
        try:
            out = script(req["params"])
            if isinstance(out, tuple) and out[0] == "sleep":  # ("sleep", seconds[, result])
                await asyncio.sleep(out[1])
                out = out[2] if len(out) > 2 else purple_failure("slept")
        finally:
            state["inflight"] -= 1
        if isinstance(out, Response):
            return out
        if isinstance(out, tuple) and out[0] == "error":
            return JSONResponse({"jsonrpc": "2.0", "id": req.get("id"), "error": {"code": out[1], "message": out[2]}})
        return JSONResponse({"jsonrpc": "2.0", "id": req.get("id"), "result": out})

    async def file(request: Request) -> Response:  # for file parts sent by URI
        text = files.get(request.path_params["name"])
        return Response(text, media_type="text/plain") if text is not None else Response("missing", 404)

    files: dict[str, str] = {}
    app = Starlette(routes=[Route("/.well-known/agent-card.json", card), Route("/", rpc, methods=["POST"]),
                            Route("/files/{name}", file)])
    app.state.purple = state
    app.state.files = files
    return app


class PurpleServer(Served):
    def __init__(self, script: Script, name: str = "purple_agent"):
        app = purple_app(script, name)
        super().__init__(app)
        app.state.purple["url"] = self.url + "/"
        self.files: dict[str, str] = app.state.files
        self.state: dict = app.state.purple  # max_inflight: most requests answered at once


# ----------------------------------------------------------------------------- a2a-sdk 1.x agent

def sdk_app(execute: Callable[[Any, Any], Any], name: str, url: str, protocol: str = "1.0") -> Starlette:
    """A real a2a-sdk 1.x server; `execute(context, event_queue)` is the executor's body."""
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

    class Executor(AgentExecutor):
        async def execute(self, context, event_queue):  # type: ignore[no-untyped-def]
            await execute(context, event_queue)

        async def cancel(self, context, event_queue):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    card = AgentCard(name=name, description="test agent on a2a-sdk 1.x", version="1.0.0",
                     supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC",
                                                          protocol_version=protocol)],
                     default_input_modes=["text/plain"], default_output_modes=["application/json"],
                     capabilities=AgentCapabilities(streaming=False),
                     skills=[AgentSkill(id="petsc", name="PETSc", description="PETSc code", tags=["petsc"])])
    handler = DefaultRequestHandler(agent_executor=Executor(), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card),
                             *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=protocol.startswith("0.3"))])


class SdkServer(Served):
    def __init__(self, execute: Callable[[Any, Any], Any], name: str = "data_agent", protocol: str = "1.0"):
        port = free_port()
        super().__init__(sdk_app(execute, name, f"http://127.0.0.1:{port}/", protocol), port)


def data_part_executor(answer: Callable[[str], dict[str, Any]]) -> Callable[[Any, Any], Any]:
    """An executor answering a Task whose artifact is one data part: the submission JSON."""

    async def execute(context, event_queue):  # type: ignore[no-untyped-def]
        from a2a.helpers import new_data_part, new_task_from_user_message
        from a2a.server.tasks import TaskUpdater

        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        await updater.add_artifact([new_data_part(answer(context.get_user_input()))], name="submission")
        await updater.complete()

    return execute
