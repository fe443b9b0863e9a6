"""`a2a:URL`: any A2A agent as a black box, through the a2a-sdk client.

The card is resolved once (`<URL>/.well-known/agent-card.json`); the SDK picks
the transport and speaks protocol 1.x, or 0.3 through its compatibility layer
when the card says 0.3. Each attempt is one `message/send` (`SendMessage` in
1.x) with a text part (the prompt) and a data part (the public problem record
and the contract); follow-ups (repair) stay in the same context.

Answers are read from the wire JSON as received (kept by an httpx response hook)
because agents differ from the protocol in ways the SDK's parser rejects or
garbles: petscagent-bench's purple agent (a2a-sdk 0.3.26) puts the raw source
text in a file part's `bytes`, which the protocol says is base64. We accept:
a Message or a Task (its artifacts, then its status message); file parts with
base64 or raw `bytes` (`raw` in 1.x) or a `uri`/`url` (the agent's own http(s) origin, or data:); a
data part holding the submission JSON of docs/agents.md; the purple text part
`nsize: N` / `cli_args: ...`; a text part holding the JSON answer. Anything else
is a failed generation with its reason."""

from __future__ import annotations

import base64
import binascii
import json
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from typing import Any

from hpcbench.agents.base import Conversation, GeneratingAgent, agent_name
from hpcbench.agents.contract import (
    PROMPT_VERSION,
    Answer,
    GenerationFailure,
    Reply,
    parse_json_answer,
    render_user_prompt,
    system_prompt,
    validate_answer,
)
from hpcbench.agents.kinds import AgentRequest, agent_kind
from hpcbench.agents.llm_errors import infrastructure_kind
from hpcbench.problem import Problem
from hpcbench.submission import MAX_FILE_BYTES, Generation, GenerationDetails

RAW_CAP = 1 << 20
MAX_RESPONSE_BYTES = 64 << 20  # a response beyond this is a protocol error, not parsed
TERMINAL = {"completed", "failed", "canceled", "rejected", "input-required", "auth-required"}
SUBMISSION_KEYS = {"files", "codes", "refused"}


def _state(raw: str) -> str:
    """0.3 'input-required' and 1.x 'TASK_STATE_INPUT_REQUIRED' -> 'input-required'."""
    s = (raw or "").lower()
    return s.removeprefix("task_state_").replace("_", "-")


@dataclass
class WirePart:
    type: str  # text | file | data
    text: str = ""
    name: str = ""
    mime: str = ""
    content: bytes | None = None
    uri: str = ""
    data: Any = None
    note: str = ""


@dataclass
class WireResult:
    kind: str  # message | task
    parts: list[WirePart] = field(default_factory=list)
    state: str = ""
    status_text: str = ""
    context_id: str = ""
    task_id: str = ""


def decode_bytes(value: str) -> tuple[bytes, str]:
    """A file part's bytes: base64 as the protocol says, else the raw text some agents send."""
    try:
        return base64.b64decode(value, validate=True), ""
    except (binascii.Error, ValueError):
        return value.encode("utf-8"), "raw text in a base64 field"


def decode_part(p: dict[str, Any]) -> WirePart:
    kind = p.get("kind")
    if kind == "text" or (kind is None and "text" in p):
        return WirePart("text", text=str(p.get("text", "")))
    if kind == "data" or (kind is None and "data" in p):
        return WirePart("data", data=p.get("data"))
    if kind == "file":  # 0.3: {"kind": "file", "file": {"bytes"|"uri", "name", "mimeType"}}
        f = p.get("file") or {}
        wp = WirePart("file", name=str(f.get("name") or ""), mime=str(f.get("mimeType") or ""),
                      uri=str(f.get("uri") or ""))
        if isinstance(f.get("bytes"), str):
            wp.content, wp.note = decode_bytes(f["bytes"])
        return wp
    if "raw" in p or "url" in p:  # 1.x: {"raw": base64, "filename", "mediaType"} or {"url": ...}
        wp = WirePart("file", name=str(p.get("filename") or ""), mime=str(p.get("mediaType") or ""),
                      uri=str(p.get("url") or ""))
        if isinstance(p.get("raw"), str):
            wp.content, wp.note = decode_bytes(p["raw"])
        return wp
    return WirePart("unknown", note=f"part with keys {sorted(p)}")


def decode_result(result: dict[str, Any]) -> WireResult:
    """The result of message/send (0.3) or SendMessage/GetTask (1.x), as wire JSON."""
    if "message" in result and isinstance(result["message"], dict) and "parts" not in result:
        result = {**result["message"], "kind": "message"}
    elif "task" in result and isinstance(result["task"], dict) and "parts" not in result:
        result = {**result["task"], "kind": "task"}
    kind = result.get("kind") or ("message" if "messageId" in result else "task" if "status" in result else "")
    if kind == "message":
        return WireResult("message", [decode_part(p) for p in result.get("parts") or [] if isinstance(p, dict)],
                          context_id=str(result.get("contextId") or ""), task_id=str(result.get("taskId") or ""))
    if kind == "task":
        parts = [decode_part(p) for a in result.get("artifacts") or [] if isinstance(a, dict)
                 for p in a.get("parts") or [] if isinstance(p, dict)]
        status = result.get("status") or {}
        smsg = status.get("message") or {}
        status_parts = [decode_part(p) for p in smsg.get("parts") or [] if isinstance(p, dict)]
        if not parts:  # an agent that puts everything in the final status message
            parts = status_parts
        return WireResult("task", parts, state=_state(str(status.get("state", ""))),
                          status_text="\n".join(p.text for p in status_parts if p.type == "text"),
                          context_id=str(result.get("contextId") or ""), task_id=str(result.get("id") or ""))
    raise ValueError(f"neither a Message nor a Task (keys {sorted(result)})")


_PURPLE_OK = "Code generation successful"
_PURPLE_FAIL = "Code generation failed"


def _purple_fields(text: str) -> dict[str, Any]:
    """`nsize: 3` and `cli_args: -N 10` lines of the purple agent's text part."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        key, _, val = line.partition(":")
        if key.strip() == "nsize" and val.strip().isdigit():
            out["ranks"] = [int(val.strip())]
        elif key.strip() == "cli_args":
            out["args"] = val.strip()
    return out


def _usage(data: Any, gen: Generation) -> bool:
    """Token and cost telemetry an agent reports in a data part (purple v1, ours)."""
    if not isinstance(data, dict):
        return False
    inner = data.get("generation")
    d: dict[str, Any] = inner if isinstance(inner, dict) else data
    found = False
    for ours, theirs in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
        v = d.get(ours, d.get(theirs))
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 and float(v).is_integer():
            setattr(gen, ours, int(v))
            found = True
    if isinstance(d.get("cost_usd"), (int, float)) and d["cost_usd"] >= 0:
        gen.cost_usd = float(d["cost_usd"])
        found = True
    return found


def interpret(res: WireResult, files: list[tuple[str, Any]], gen: Generation) -> Answer | GenerationFailure:
    """Turn a decoded answer into a checked Answer or a failure with its reason."""
    texts = [p.text for p in res.parts if p.type == "text"]
    text = "\n".join(texts)
    if res.kind == "task" and res.state in ("input-required", "auth-required"):
        # Asking instead of answering is what the refusal set wants; elsewhere it scores as a refusal.
        return Answer(refused=True, refusal_reason=f"asked for input: {(res.status_text or text)[:4000]}")
    if res.kind == "task" and res.state in ("failed", "rejected", "canceled"):
        return GenerationFailure("agent_failed", f"task {res.state}: {(res.status_text or text)[:500]}")
    if res.kind == "task" and res.state not in TERMINAL:
        return GenerationFailure("protocol_error", f"task still {res.state or 'without a state'}")
    for p in res.parts:
        if p.type == "data" and isinstance(p.data, dict) and SUBMISSION_KEYS & set(p.data):
            _usage(p.data, gen)
            return validate_answer(p.data, extra_files=files)
    for p in res.parts:
        if p.type == "data":
            _usage(p.data, gen)
    if _PURPLE_FAIL in text:
        return GenerationFailure("agent_failed", text.strip()[:500])
    if files:
        return validate_answer(_purple_fields(text), extra_files=files)
    if text.strip():
        obj = parse_json_answer(text)
        if isinstance(obj, dict) and SUBMISSION_KEYS & set(obj):
            return validate_answer(obj)
        if isinstance(obj, GenerationFailure) and text.strip().startswith(("{", "```")):
            return obj  # an attempt at the JSON answer that does not parse
        return GenerationFailure("no_code", f"text answer without code: {text.strip()[:300]!r}")
    unknown = [p.note for p in res.parts if p.type == "unknown"]
    return GenerationFailure("no_code", "no parts" if not res.parts else f"no usable parts ({'; '.join(unknown)})")


class A2AAgent(GeneratingAgent):
    kind = "a2a"
    supports_feedback = True

    def __init__(self, url: str, timeout_s: float = 900.0, name: str | None = None, language: str = "c"):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"a2a:URL needs an http(s) URL, got {url!r}")
        self.url, self.timeout_s = url.rstrip("/"), timeout_s
        host = urllib.parse.urlsplit(url)
        self.name = name or agent_name(f"a2a-{host.hostname}-{host.port or ''}")
        self.fixed_name = name is not None
        self.language = language  # what it is asked to write (AgentOptions.language)
        self.card: Any = None
        self.protocol = ""
        self.start_error = ""

    async def start(self) -> None:
        import httpx
        from a2a.client import A2ACardResolver

        try:
            async with httpx.AsyncClient(timeout=min(60.0, self.timeout_s)) as http:
                self.card = await A2ACardResolver(http, self.url).get_agent_card()
        except Exception as e:  # every attempt of this agent then fails with this reason
            self.start_error = f"agent card of {self.url}: {type(e).__name__}: {str(e)[:300]}"
            return
        if self.card.name and not self.fixed_name:
            self.name = agent_name(self.card.name)
        self.model = f"a2a:{self.url}"
        versions = sorted({i.protocol_version for i in self.card.supported_interfaces if i.protocol_version})
        self.protocol = ",".join(versions)

    def conversation(self, problem: Problem) -> Conversation:
        return A2AConversation(self, problem)

    async def preflight(self) -> GenerationFailure | None:
        """The agent card is the endpoint check: without it no attempt can be sent."""
        if self.card is None and not self.start_error:
            await self.start()
        return GenerationFailure("unreachable", self.start_error) if self.start_error else None


class A2AConversation(Conversation):
    def __init__(self, agent: A2AAgent, problem: Problem):
        self.agent, self.problem = agent, problem
        self.context_id = ""

    def _message(self, text: str, with_problem: bool) -> Any:
        from a2a.types import Message, Part, Role

        parts = [Part(text=text)]
        if with_problem:
            payload = {"hpcbench": {"prompt_version": PROMPT_VERSION, "problem": self.problem.public_view(),
                                    "answer_format": "docs/agents.md: files, entry, ranks, args, refused"}}
            from google.protobuf import json_format, struct_pb2

            parts.append(Part(data=json_format.ParseDict(payload, struct_pb2.Value()), media_type="application/json"))
        msg = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=parts)
        if self.context_id:
            msg.context_id = self.context_id
        return msg

    async def first(self) -> Reply:
        language = self.agent.language
        text = system_prompt(language) + "\n" + render_user_prompt(self.problem, language)
        return await self._send(self._message(text, True))

    async def follow_up(self, text: str) -> Reply:
        return await self._send(self._message(text, False))

    async def _send(self, message: Any) -> Reply:
        gen = Generation(turns=1, details=GenerationDetails(prompt_version=PROMPT_VERSION,
                                                            protocol=self.agent.protocol))
        if self.agent.start_error:  # its card could not be fetched: the agent was never asked
            return Reply(GenerationFailure("unreachable", self.agent.start_error), gen)
        bodies: list[dict[str, Any]] = []
        t0 = time.perf_counter()
        got = await self._exchange(message, bodies)
        _lat(gen, t0)
        if isinstance(got, GenerationFailure):
            return Reply(got, gen)
        wire = _wire_result(bodies, got[0])
        if wire is None:
            unreached = infrastructure_kind(got[1]) if got[1] is not None and not bodies else None
            if unreached in ("unreachable", "credentials"):  # no answer ever came: retry, not a verdict
                return Reply(GenerationFailure(unreached, f"{type(got[1]).__name__}: {got[1]}"[:4000]), gen)
            return Reply(GenerationFailure("protocol_error", _no_result(bodies, got[1])), gen)
        raw = json.dumps(wire)[:RAW_CAP]
        try:
            res = decode_result(wire)
        except ValueError as e:
            return Reply(GenerationFailure("protocol_error", str(e)), gen, raw=raw)
        self.context_id = res.context_id or self.context_id
        files = await self._files(res, gen)
        if isinstance(files, GenerationFailure):
            return Reply(files, gen, raw=raw)
        return Reply(interpret(res, files, gen), gen, raw=raw)

    async def _exchange(self, message: Any, bodies: list[dict[str, Any]]
                        ) -> tuple[Any, Exception | None] | GenerationFailure:
        """Send, poll a task the agent still works on, keep every POST's JSON body in `bodies`
        (the wire JSON decodes where the SDK cannot). Returns the SDK's last result and its error."""
        import httpx
        from a2a.client import A2AClientError, A2AClientTimeoutError, ClientConfig, ClientFactory
        from a2a.types import GetTaskRequest, SendMessageConfiguration, SendMessageRequest

        async def keep(response: httpx.Response) -> None:
            if response.request.method == "POST":
                data = await response.aread()
                try:
                    obj = json.loads(data) if len(data) <= MAX_RESPONSE_BYTES else None
                except ValueError:
                    obj = None
                if isinstance(obj, dict):
                    bodies.append(obj)

        sdk_result: Any = None
        sdk_error: Exception | None = None
        async with httpx.AsyncClient(timeout=self.agent.timeout_s, event_hooks={"response": [keep]}) as http:
            client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(self.agent.card)
            req = SendMessageRequest(message=message, configuration=SendMessageConfiguration(
                accepted_output_modes=["application/json", "text/plain", "text/x-c"]))
            try:
                async for ev in client.send_message(req):
                    sdk_result = ev
                task = sdk_result.task if sdk_result is not None and sdk_result.HasField("task") else None
                # A task the agent still works on: poll until it is done (the attempt's timeout bounds it).
                while task is not None and _state(_task_state_name(task.status.state)) not in TERMINAL:
                    await _sleep(1.0)
                    task = await client.get_task(GetTaskRequest(id=task.id))
                    sdk_result = task
            except (A2AClientTimeoutError, httpx.TimeoutException) as e:
                return GenerationFailure("timeout", f"{type(e).__name__}: {str(e)[:300]}")
            except A2AClientError as e:
                if not _has_result(bodies):  # the agent answered an error: nothing to decode
                    return GenerationFailure("protocol_error", f"{type(e).__name__}: {str(e)[:500]}")
                sdk_error = e
            except Exception as e:  # the SDK could not parse what came back; the wire JSON may still do
                sdk_error = e
            finally:
                await client.close()
        return sdk_result, sdk_error

    async def _files(self, res: Any, gen: Generation) -> list[tuple[str, Any]] | GenerationFailure:
        """The answer's file parts (fetched where given by uri), their notes kept on `gen`."""
        files: list[tuple[str, Any]] = []
        notes = []
        for p in res.parts:
            if p.type != "file":
                continue
            content: Any = p.content
            if content is None and p.uri:
                content = await _fetch(p.uri, self.agent.timeout_s, self.agent.url)
                if isinstance(content, GenerationFailure):
                    return content
            if content is None:
                return GenerationFailure("malformed_answer", f"file part {p.name!r} has neither bytes nor uri")
            if not p.name:
                return GenerationFailure("malformed_answer", "a file part has no name")
            files.append((p.name, content))
            if p.note:
                notes.append(f"{p.name}: {p.note}")
        if notes:
            gen.details.wire_notes = notes
        return files


def _wire_result(bodies: list[dict[str, Any]], sdk_result: Any) -> dict | None:
    """The last JSON-RPC result on the wire, else what the SDK parsed."""
    from google.protobuf.json_format import MessageToDict

    wire = next((b["result"] for b in reversed(bodies) if isinstance(b.get("result"), dict)), None)
    if wire is None and sdk_result is not None:
        wire = MessageToDict(sdk_result)
    return wire


def _no_result(bodies: list[dict[str, Any]], sdk_error: Exception | None) -> str:
    err = next((b["error"] for b in reversed(bodies) if "error" in b), None)
    return f"JSON-RPC error {json.dumps(err)[:500]}" if err else \
        f"{type(sdk_error).__name__}: {str(sdk_error)[:500]}" if sdk_error else "empty response"


def _task_state_name(state: int) -> str:
    from a2a.types import TaskState

    return TaskState.Name(state)


def _has_result(bodies: list[dict[str, Any]]) -> bool:
    return any(isinstance(b.get("result"), dict) for b in bodies)


async def _sleep(s: float) -> None:
    import asyncio

    await asyncio.sleep(s)


def _lat(gen: Generation, t0: float) -> Generation:
    gen.latency_s = time.perf_counter() - t0
    return gen


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower() + f":{parts.port or ''}"


async def _fetch(uri: str, timeout_s: float, agent_url: str) -> bytes | GenerationFailure:
    """A file part by URI: http(s) from the agent's own origin with a size cap, or a
    data: URI. Never file:// or anything else on this machine (an agent must not make
    us read local files), and no other host (nor make us fetch internal addresses
    such as a cloud metadata service on its behalf)."""
    scheme = urllib.parse.urlsplit(uri).scheme
    if scheme == "data":
        head, _, body = uri.partition(",")
        try:
            return base64.b64decode(body, validate=True) if head.endswith(";base64") \
                else urllib.parse.unquote_to_bytes(body)
        except (binascii.Error, ValueError) as e:
            return GenerationFailure("malformed_answer", f"bad data: URI: {e}")
    if scheme not in ("http", "https"):
        return GenerationFailure("unsafe_file_name", f"file part by {scheme or 'relative'} URI refused: {uri[:200]}")
    if _origin(uri) != _origin(agent_url):
        return GenerationFailure("unsafe_file_name", f"file part URI off the agent's own origin refused: {uri[:200]}")
    import httpx

    try:
        async with httpx.AsyncClient(timeout=timeout_s) as http, http.stream("GET", uri) as r:
            if r.status_code != 200:
                return GenerationFailure("protocol_error", f"GET {uri[:200]}: HTTP {r.status_code}")
            data = bytearray()
            async for chunk in r.aiter_bytes():
                data += chunk
                if len(data) > MAX_FILE_BYTES:
                    return GenerationFailure("file_too_large", f"{uri[:200]} is larger than {MAX_FILE_BYTES} bytes")
            return bytes(data)
    except httpx.HTTPError as e:
        return GenerationFailure("protocol_error", f"GET {uri[:200]}: {type(e).__name__}: {e}")


@agent_kind("a2a", "a2a:URL")
def _a2a(arg: str, req: AgentRequest) -> A2AAgent:
    return A2AAgent(arg, timeout_s=req.opts.timeout_s, language=req.opts.language)
