"""The litellm one-shot generator and the repair loop, through litellm's real
client against tests/openai_server.py on 127.0.0.1. That server is a stand-in:
no LLM provider is reachable from these machines; everything above the socket
(litellm's request, its usage and cost accounting, our parsing) is real."""

import asyncio
import json

import pytest

from hpcbench.agents.contract import SYSTEM_PROMPT
from hpcbench.agents.generate import RAW_NAME, generate_submissions
from hpcbench.agents.litellm_agent import LitellmAgent
from hpcbench.problem import load_problems
from hpcbench.submission import Submission
from tests.openai_server import Reply

MODEL = "openai/gpt-4o-mini"  # a model litellm's bundled price map knows, so cost is computed
SRC = ("#include <petscsys.h>\nint main(int argc, char **argv)\n{\n"
       "  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));\n  PetscCall(PetscFinalize());\n  return 0;\n}\n")
BUNDLES = load_problems(None, ["vec-scatter"])


def _answer(src=SRC, **kw):
    return {"files": [{"name": "main.c", "content": src}], "entry": "main.c", "ranks": [3], "args": [], **kw}


def test_an_answer_asking_for_what_the_problem_does_not_allow_is_the_agents_failure(openai_server, tmp_path):
    """Disallowed args or ranks never reach a run: the attempt is a failed generation, named."""
    openai_server.default = Reply.json(_answer(args=["-prefix_push", "x_"]))
    _, meta = _run(openai_server, tmp_path / "a")
    assert meta.generation_error_kind == "disallowed_request" and "prefix" in meta.generation_error
    openai_server.default = Reply.json(_answer(ranks=[7]))
    _, meta = _run(openai_server, tmp_path / "b")
    assert meta.generation_error_kind == "disallowed_request" and "ranks: 7" in meta.generation_error
    prompt = openai_server.requests[-1].body["messages"][-1]["content"]
    assert 'What "args" may hold: -sf_type' in prompt and 'What "ranks" may hold: 3' in prompt


def _run(srv, out, agent=None, **kw):
    agent = agent or LitellmAgent(MODEL, base_url=srv.base_url, num_retries=0, **kw)
    summary = asyncio.run(generate_submissions([agent], BUNDLES, 1, out, concurrency=2, timeout_s=60))
    meta = Submission.model_validate_json((out / agent.name / "vec-scatter" / "1" / "submission.json").read_text())
    return summary, meta


def test_one_shot_answer_records_tokens_cost_and_latency(openai_server, tmp_path):
    openai_server.default = Reply.json(_answer(), prompt_tokens=1500, completion_tokens=700)
    _, meta = _run(openai_server, tmp_path)
    assert meta.agent == "openai_gpt-4o-mini" and meta.model == MODEL
    assert meta.files == ["main.c"] and meta.ranks == [3] and not meta.generation_error
    g = meta.generation
    assert (g.prompt_tokens, g.completion_tokens, g.turns) == (1500, 700, 1)
    assert g.cost_usd > 0 and g.latency_s > 0 and g.details.finish_reason == "stop"
    body = openai_server.requests[0].body
    assert body["temperature"] == 0 and body["max_tokens"] == 32000
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert BUNDLES["vec-scatter"].problem.task in body["messages"][1]["content"]
    assert (tmp_path / meta.agent / "vec-scatter/1/main.c").read_text() == SRC


def test_truncated_answer_is_a_failed_generation(openai_server, tmp_path):
    openai_server.default = Reply.truncated('{"files": [{"name": "main.c", "content": "#include <pet')
    summary, meta = _run(openai_server, tmp_path, max_tokens=4096)
    assert meta.generation_error_kind == "truncated" and "max_tokens=4096" in meta.generation_error
    assert openai_server.requests[0].body["max_tokens"] == 4096
    assert summary.failures == {"truncated": 1}
    assert meta.generation.completion_tokens > 0  # the tokens were paid for even so


@pytest.mark.parametrize("reply,kind", [
    (Reply.text("Here is a plan: use KSP with CG."), "malformed_answer"),
    (Reply.json({"files": []}), "no_code"),
    (Reply.json(_answer(entry="other.c")), "entry_not_in_files"),
])
def test_bad_llm_answers_are_recorded(openai_server, tmp_path, reply, kind):
    openai_server.default = reply
    _, meta = _run(openai_server, tmp_path)
    assert meta.generation_error_kind == kind, meta.generation_error
    raw = tmp_path / meta.agent / "vec-scatter/1" / RAW_NAME
    assert raw.is_file()  # the answer as received, for a human to read


def test_fenced_answer_and_refusal(openai_server, tmp_path):
    openai_server.default = Reply.text("Sure.\n```json\n" + json.dumps(_answer()) + "\n```")
    _, meta = _run(openai_server, tmp_path / "a")
    assert meta.files == ["main.c"] and not meta.generation_error
    openai_server.default = Reply.json({"refused": True, "refusal_reason": "needs MUMPS"})
    _, meta = _run(openai_server, tmp_path / "b")
    assert meta.refused and meta.refusal_reason == "needs MUMPS" and meta.files == []


@pytest.mark.petsc
def test_repair_feeds_compiler_errors_back_and_sums_turns(openai_server, tmp_path):
    from hpcbench.agents.repair_agent import RepairAgent
    from hpcbench.agents.sandbox import Sandbox
    from hpcbench.site import load_site

    broken = SRC.replace("PetscFinalize()", "PetscFinalise()")
    openai_server.queue(Reply.json(_answer(broken), prompt_tokens=100, completion_tokens=50),
                        Reply.json(_answer(), prompt_tokens=300, completion_tokens=60))
    inner = LitellmAgent(MODEL, base_url=openai_server.base_url, num_retries=0)
    agent = RepairAgent(inner, 3, Sandbox.for_site(load_site("local"), tmp_path / "sandbox"))
    _, meta = _run(openai_server, tmp_path / "out", agent=agent)
    assert meta.agent == "openai_gpt-4o-mini+repair3"  # never the one-shot row
    assert openai_server.count == 2
    feedback = openai_server.requests[1].body["messages"]
    assert feedback[2]["role"] == "assistant" and "PetscFinalise" in feedback[2]["content"]
    assert "BUILD FAILED" in feedback[3]["content"] and "PetscFinalise" in feedback[3]["content"]
    g = meta.generation
    assert (g.turns, g.prompt_tokens, g.completion_tokens) == (2, 400, 110)
    rounds = g.details.rounds
    assert [r.build_ok for r in rounds] == [False, True] and rounds[-1].ok is True and g.details.inner_agent
    assert (tmp_path / "out" / meta.agent / "vec-scatter/1/main.c").read_text() == SRC


def test_generate_cli_with_base_url(openai_server, tmp_path):
    from tests.conftest import hpcbench

    openai_server.default = Reply.json(_answer(ranks=[]))  # vec-scatter runs at 3 ranks, rosenbrock at 1
    out = hpcbench("generate", "--agent", f"litellm:{MODEL}", "--base-url", openai_server.base_url,
                   "--problems", "vec-scatter,rosenbrock", "--attempts", "2", "--max-tokens", "20000",
                   "--out", str(tmp_path)).stdout
    assert "4 generated, 0 refused, 0 failed, 0 errors" in out, out
    # one tiny preflight completion (endpoint, key and model checked before anything), then the 4 attempts
    assert openai_server.count == 5 and openai_server.requests[0].body["max_tokens"] == 8
    assert {r.body["max_tokens"] for r in openai_server.requests[1:]} == {20000}
    meta = Submission.model_validate_json((tmp_path / "openai_gpt-4o-mini/rosenbrock/2/submission.json").read_text())
    assert meta.attempt == "2" and meta.generation.cost_usd > 0
