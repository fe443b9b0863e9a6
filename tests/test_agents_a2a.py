"""The A2A client against real A2A servers started here (tests/a2a_servers.py):
petscagent-bench's purple format on protocol 0.3, a data-part agent on a2a-sdk
1.x, and every way an agent can misbehave. Each bad answer must be a failed
generation recorded with its reason and taxonomy key, and the rest goes on."""

import asyncio
import base64
import json

import pytest
from starlette.responses import Response

from hpcbench.agents import AgentOptions, make_agent
from hpcbench.agents.generate import generate_submissions
from hpcbench.problem import load_problems
from hpcbench.resources import data_path
from hpcbench.submission import Submission, load_tree
from tests.a2a_servers import (
    PurpleServer,
    SdkServer,
    data_part_executor,
    purple_failure,
    purple_message,
    purple_success,
)

SRC = ("#include <petscsys.h>\nint main(int argc, char **argv)\n{\n"
       "  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));\n  PetscCall(PetscFinalize());\n  return 0;\n}\n")
BUNDLES = load_problems(None, ["vec-scatter", "scatter-cuda"])
KNOWN = {p.name for p in data_path("problems").iterdir() if (p / "problem.json").is_file()}


def _gen(url, out, problems=("vec-scatter",), timeout_s=30.0, attempts=1, concurrency=2):
    agent = make_agent(f"a2a:{url}", BUNDLES, KNOWN, AgentOptions(timeout_s=timeout_s))
    bundles = {p: BUNDLES[p] for p in problems}
    return asyncio.run(generate_submissions([agent], bundles, attempts, out, concurrency=concurrency,
                                            timeout_s=timeout_s))


def _meta(out, agent, problem="vec-scatter", attempt="1") -> Submission:
    return Submission.model_validate_json((out / agent / problem / attempt / "submission.json").read_text())


def _v03(kind_parts):
    from a2a.compat.v0_3 import types as t

    return [t.Part(root=p) for p in kind_parts]


def test_purple_format_on_protocol_0_3(tmp_path):
    files = {"main.c": SRC, "util.h": "#define N 3\n"}
    with PurpleServer(lambda params: purple_success(files, 3, "-sf_type basic")) as srv:
        summary = _gen(srv.url, tmp_path)
    assert summary.written["ok"] == 1 and summary.agents == ["purple_agent"]
    meta = _meta(tmp_path, "purple_agent")
    assert meta.entry == "main.c" and meta.files == ["main.c", "util.h"]
    assert meta.ranks == [3] and meta.args == ["-sf_type", "basic"]
    assert meta.generation.turns == 1 and meta.generation.latency_s > 0
    extra = meta.generation.details
    assert extra.protocol == "0.3.0" and "raw text in a base64 field" in extra.wire_notes[0]
    assert (tmp_path / "purple_agent/vec-scatter/1/main.c").read_text() == SRC  # raw bytes, byte for byte
    ok, bad = load_tree(tmp_path, KNOWN)  # what `submit --submissions` will load
    assert len(ok) == 1 and not bad
    # The request went out as 0.3 message/send with our text and data parts.
    req = json.loads(srv.bodies[-1].split(b"\n", 1)[1])
    assert req["method"] == "message/send"
    kinds = [p["kind"] for p in req["params"]["message"]["parts"]]
    assert kinds == ["text", "data"]


def test_data_part_task_on_sdk_1x_with_usage(tmp_path):
    answer = {"files": [{"name": "main.c", "content": SRC}], "entry": "main.c", "ranks": [3],
              "args": ["-sf_type", "window"], "generation": {"prompt_tokens": 1200, "completion_tokens": 800,
                                                    "cost_usd": 0.0125}}
    with SdkServer(data_part_executor(lambda text: answer), name="data agent/v1") as srv:
        summary = _gen(srv.url, tmp_path, problems=("vec-scatter", "scatter-cuda"))
        # Resumable: a second run finds both attempts done and sends nothing.
        n = len(srv.bodies)
        again = _gen(srv.url, tmp_path, problems=("vec-scatter", "scatter-cuda"))
        assert again.skipped == 2 and sum(again.written.values()) == 0
        assert len([b for b in srv.bodies[n:] if b.startswith(b"POST")]) == 0
    assert summary.written["ok"] == 2
    meta = _meta(tmp_path, "data_agent_v1", "scatter-cuda")
    assert meta.ranks == [3] and meta.args == ["-sf_type", "window"] and meta.files == ["main.c"]
    assert (meta.generation.prompt_tokens, meta.generation.completion_tokens) == (1200, 800)
    assert meta.generation.cost_usd == pytest.approx(0.0125)
    assert meta.generation.details.protocol == "1.0"
    req = json.loads(next(b for b in srv.bodies if b.startswith(b"POST")).split(b"\n", 1)[1])
    assert req["method"] == "SendMessage"


def test_sdk_server_on_protocol_0_3_through_the_compat_layer(tmp_path):
    answer = {"files": [{"name": "main.c", "content": SRC}], "entry": "main.c", "ranks": [3]}
    with SdkServer(data_part_executor(lambda text: answer), name="legacy", protocol="0.3") as srv:
        _gen(srv.url, tmp_path)
        req = json.loads(next(b for b in srv.bodies if b.startswith(b"POST")).split(b"\n", 1)[1])
    assert req["method"] == "message/send"  # spoken as 0.3
    meta = _meta(tmp_path, "legacy")
    assert meta.files == ["main.c"] and meta.generation.details.protocol == "0.3", meta.generation_error


def test_task_with_base64_artifacts_and_file_by_uri(tmp_path):
    from a2a.compat.v0_3 import types as t

    def script(params):
        task = t.Task(id="t1", context_id="c1", status=t.TaskStatus(state=t.TaskState.completed), artifacts=[
            t.Artifact(artifact_id="a1", parts=_v03([
                t.TextPart(text="nsize: 3\ncli_args: -sf_type basic\n"),
                t.FilePart(file=t.FileWithBytes(bytes=base64.b64encode(SRC.encode()).decode(), name="main.c")),
                t.FilePart(file=t.FileWithUri(uri=f"{srv.url}/files/extra.h", name="extra.h"))]))])
        return task.model_dump(mode="json", by_alias=True, exclude_none=True)

    with PurpleServer(script, name="task agent") as srv:
        srv.files["extra.h"] = "#define EXTRA 1\n"
        _gen(srv.url, tmp_path)
    meta = _meta(tmp_path, "task_agent")
    assert meta.generation_error == "", meta.generation_error
    assert meta.files == ["extra.h", "main.c"] and meta.ranks == [3] and meta.args == ["-sf_type", "basic"]
    assert (tmp_path / "task_agent/vec-scatter/1/main.c").read_text() == SRC
    assert (tmp_path / "task_agent/vec-scatter/1/extra.h").read_text() == "#define EXTRA 1\n"


def _file(name, text=None, raw=None):
    from a2a.compat.v0_3 import types as t

    data = raw if raw is not None else text
    return t.FilePart(file=t.FileWithBytes(bytes=data, name=name, mime_type="text/plain"))


def _text(text):
    from a2a.compat.v0_3 import types as t

    return t.TextPart(text=text)


def _uri(name, uri):
    from a2a.compat.v0_3 import types as t

    return t.FilePart(file=t.FileWithUri(uri=uri, name=name))


def _data(obj):
    from a2a.compat.v0_3 import types as t

    return t.DataPart(data=obj)


BAD = {
    "no_code": (lambda p: purple_message(_v03([_text("I think you should use KSP.")])), "no_code"),
    "no_parts": (lambda p: purple_message([]), "no_code"),
    "malformed_json": (lambda p: purple_message(_v03([_text('{"files": [{"name": "main.c", "content": "x"')])),
                       "malformed_answer"),
    "dotdot": (lambda p: purple_success({"../x.c": SRC}), "unsafe_file_name"),
    "absolute": (lambda p: purple_success({"/tmp/x.c": SRC}), "unsafe_file_name"),
    "duplicate": (lambda p: purple_message(_v03([_text("nsize: 1\n"), _file("main.c", SRC), _file("main.c", SRC)])),
                  "duplicate_file"),
    "binary": (lambda p: purple_message(_v03([_file("main.c", raw=base64.b64encode(b"\x7fELF\x02\x01\x00\x00"
                                                                                    b"\xff\xfe").decode())])),
               "binary_file"),
    "huge": (lambda p: purple_success({"main.c": "/*" + "x" * (2 << 20) + "*/\n"}), "file_too_large"),
    "entry_missing": (lambda p: purple_message(_v03([_data({"files": [{"name": "main.c", "content": SRC}],
                                                             "entry": "solver.c"})])), "entry_not_in_files"),
    "file_uri_local": (lambda p: purple_message(_v03([_text("nsize: 1"), _uri("main.c", "file:///etc/passwd")])),
                       "unsafe_file_name"),
    "file_uri_other_host": (lambda p: purple_message(_v03([_text("nsize: 1"), _uri(
        "main.c", "http://169.254.169.254/latest/meta-data/iam")])), "unsafe_file_name"),
    "agent_failed": (lambda p: purple_failure("model returned nothing"), "agent_failed"),
    "jsonrpc_error": (lambda p: ("error", -32603, "internal failure"), "protocol_error"),
    "http_500": (lambda p: Response("boom", status_code=500), "protocol_error"),
    "not_json": (lambda p: Response("<html>proxy error</html>", media_type="text/html"), "protocol_error"),
    "timeout": (lambda p: ("sleep", 3), "timeout"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_bad_answer_is_a_failed_generation_with_its_reason(tmp_path, case):
    script, kind = BAD[case]
    with PurpleServer(script, name="bad") as srv:
        summary = _gen(srv.url, tmp_path, timeout_s=1.5 if case == "timeout" else 30)
    meta = _meta(tmp_path, "bad")
    assert meta.generation_error_kind == kind, (case, meta.generation_error)
    assert meta.generation_error and not meta.files and summary.failures[kind] == 1
    assert not (tmp_path / "x.c").exists() and not list(tmp_path.rglob("passwd"))
    ok, bad = load_tree(tmp_path, KNOWN)  # recorded, and loadable: submit and collect see it
    assert len(ok) == 1 and ok[0].meta.generation_error and not bad


def test_unreachable_agent_is_an_error_for_every_attempt_and_the_campaign_goes_on(tmp_path):
    """No agent card: the agent was never asked, so its attempts are infrastructure errors
    (kept apart, retried later), not failed generations that would rank it at 0."""
    from hpcbench.agents.generate import read_errors
    from tests.a2a_servers import free_port

    url = f"http://127.0.0.1:{free_port()}"
    with PurpleServer(lambda p: purple_success({"main.c": SRC})) as good:
        agents = [make_agent(f"a2a:{url}", BUNDLES, KNOWN, AgentOptions(timeout_s=5)),
                  make_agent(f"a2a:{good.url}", BUNDLES, KNOWN, AgentOptions(timeout_s=5))]
        summary = asyncio.run(generate_submissions(agents, BUNDLES, 2, tmp_path, concurrency=3, timeout_s=5))
    assert summary.written["failed"] == 0 and summary.written["ok"] == 4 and len(summary.errors) == 4
    assert {e.kind for e in summary.errors} == {"unreachable"} and all("agent card" in e.cause for e in summary.errors)
    assert not (tmp_path / agents[0].name / "scatter-cuda" / "2" / "submission.json").exists()
    assert len(read_errors(tmp_path)) == 4


def test_agents_see_only_public_fields(tmp_path):
    """Every byte both test agents received: the public task is there; the reference
    source, hidden checks (values, citations, notes) and other agents' programs are not."""
    answer = {"files": [{"name": "main.c", "content": SRC}], "entry": "main.c"}
    with PurpleServer(lambda p: purple_success({"main.c": SRC})) as purple, \
            SdkServer(data_part_executor(lambda text: answer)) as sdk:
        for srv in (purple, sdk):
            _gen(srv.url, tmp_path / srv.url.rsplit(":", 1)[1], problems=("vec-scatter", "scatter-cuda"))
        bodies = purple.bodies + sdk.bodies
    raw = b"\n".join(bodies)
    strings: list[str] = []

    def leaves(o):
        if isinstance(o, dict):
            for v in o.values():
                leaves(v)
        elif isinstance(o, list):
            for v in o:
                leaves(v)
        elif isinstance(o, str):
            strings.append(o)

    for b in bodies:
        _, _, body = b.partition(b"\n")
        if body.strip():
            leaves(json.loads(body))
    text = "\n".join(strings)
    for pid, b in BUNDLES.items():
        assert b.problem.task in text, f"{pid}: the public task was not sent"
        public = b.problem.task
        ref = (b.folder / "reference" / "main.c").read_text()
        for line in ref.splitlines():
            line = line.strip()
            if len(line) > 30 and line not in public:
                assert line not in text, f"{pid}: reference line reached an agent: {line!r}"
        checks = json.loads((b.folder / "checks.json").read_text())
        assert checks["notes"] not in text
        for c in checks["checks"]:
            ref_spec = c.get("reference", {})
            for v in ref_spec.get("value", []):
                if len(repr(v)) < 8:  # 1 or 0.5 occur in any text; a computed literal does not
                    continue
                assert repr(v).encode() not in raw, f"{pid}: hidden value {v} reached an agent"
            if "citation" in ref_spec:
                assert ref_spec["citation"] not in text
    tasks = "\n".join(b.problem.task for b in load_problems().values())
    for sample in (data_path("examples") / "submissions").rglob("*.c"):  # other agents' programs
        for line in sample.read_text().splitlines():
            line = line.strip()
            if len(line) > 30 and line not in tasks:
                assert line not in text, f"{sample}: line reached an agent: {line!r}"
    assert b"checks.json" not in raw and b"reference/" not in raw


def test_generation_is_concurrent_up_to_the_limit(tmp_path):
    with PurpleServer(lambda p: ("sleep", 0.4, purple_success({"main.c": SRC}))) as srv:
        summary = _gen(srv.url, tmp_path, problems=("vec-scatter", "scatter-cuda"), attempts=3, concurrency=2)
        most = srv.state["max_inflight"]
    assert summary.written["ok"] == 6
    assert most == 2  # never more than --concurrency at once, and it did run attempts side by side


def test_sdk_1x_message_with_raw_parts_and_telemetry(tmp_path):
    """An agent on a2a-sdk 1.x answering a Message like petscagent-bench's current
    purple agent: a text part, a telemetry data part, one raw (base64 on the wire) part per file."""

    async def execute(context, event_queue):
        from a2a.helpers import new_data_part, new_raw_part, new_text_part
        from a2a.types import Message, Role

        parts = [new_text_part("Code generation successful ✅\nnsize: 3\ncli_args: -sf_type basic\n"),
                 new_data_part({"schema_version": 1, "input_tokens": 321, "output_tokens": 123, "cost_usd": 0.004}),
                 new_raw_part(SRC.encode(), filename="main.c", media_type="text/plain")]
        await event_queue.enqueue_event(Message(role=Role.ROLE_AGENT, message_id="m1",
                                                context_id=context.context_id, parts=parts))

    with SdkServer(execute, name="purple_v1") as srv:
        _gen(srv.url, tmp_path)
    meta = _meta(tmp_path, "purple_v1")
    assert meta.files == ["main.c"] and meta.ranks == [3] and meta.args == ["-sf_type", "basic"], meta.generation_error
    assert (meta.generation.prompt_tokens, meta.generation.completion_tokens) == (321, 123)
    assert not meta.generation.details.wire_notes  # proper base64 this time
    assert (tmp_path / "purple_v1/vec-scatter/1/main.c").read_text() == SRC


def test_working_task_is_polled_until_done(tmp_path):
    from a2a.compat.v0_3 import types as t

    def task(state, parts=()):
        return t.Task(id="t9", context_id="c9", status=t.TaskStatus(state=state),
                      artifacts=[t.Artifact(artifact_id="a", parts=_v03(parts))] if parts else None
                      ).model_dump(mode="json", by_alias=True, exclude_none=True)

    def script(params):
        srv.state["tasks"] = {"t9": [task(t.TaskState.working),
                                     task(t.TaskState.completed, [_text("nsize: 3"), _file("main.c", SRC)])]}
        return task(t.TaskState.submitted)

    with PurpleServer(script, name="slow agent") as srv:
        _gen(srv.url, tmp_path)
        gets = [b for b in srv.bodies if b"tasks/get" in b]
    meta = _meta(tmp_path, "slow_agent")
    assert meta.files == ["main.c"] and not meta.generation_error, meta.generation_error
    assert len(gets) == 2  # working, then completed


@pytest.mark.petsc
def test_repair_over_a2a_keeps_the_context(tmp_path):
    from hpcbench.agents.repair_agent import RepairAgent
    from hpcbench.agents.sandbox import Sandbox
    from hpcbench.site import load_site

    contexts = []

    def script(params):
        msg = params["message"]
        contexts.append(msg.get("contextId", ""))
        src = SRC if len(contexts) > 1 else SRC.replace("PetscFinalize", "PetscFinalise")
        out = purple_success({"main.c": src}, 3, "")
        out["contextId"] = msg.get("contextId") or "ctx-1"
        return out

    with PurpleServer(script, name="fixer") as srv:
        inner = make_agent(f"a2a:{srv.url}", BUNDLES, KNOWN, AgentOptions(timeout_s=30))
        agent = RepairAgent(inner, 2, Sandbox.for_site(load_site("local"), tmp_path / "sb"))
        asyncio.run(generate_submissions([agent], {"vec-scatter": BUNDLES["vec-scatter"]}, 1, tmp_path / "out",
                                         timeout_s=120))
        feedback = json.loads(srv.bodies[-1].split(b"\n", 1)[1])["params"]["message"]
    meta = _meta(tmp_path / "out", "fixer+repair2")
    assert contexts == ["", "ctx-1"]  # the follow-up went to the conversation the agent opened
    assert "BUILD FAILED" in feedback["parts"][0]["text"] and len(feedback["parts"]) == 1
    assert meta.generation.turns == 2
    assert [r.build_ok for r in meta.generation.details.rounds] == [False, True]
    assert (tmp_path / "out/fixer+repair2/vec-scatter/1/main.c").read_text() == SRC
