"""An infrastructure error is never a model's failure: a generation that a missing or
refused key, an outage or a quota kept from being made is kept apart (no submission, on
no leaderboard), the command exits non-zero with the whole cause, and `hpcbench retry`
redoes exactly those attempts once the cause is fixed.

The LLM provider is tests/openai_server.py on 127.0.0.1, a stand-in: no provider is
reachable from these machines. Everything above the socket (litellm's client and its
error mapping, our classification, planning, jobs, scoring) is the real code path."""

import asyncio
import json
import os

import httpx
import pytest

from hpcbench.agents.contract import GenerationFailure
from hpcbench.agents.generate import ERRORS_DIR, generate_submissions, read_errors
from hpcbench.agents.litellm_agent import LitellmAgent
from hpcbench.agents.llm_errors import failure_from_exception, infrastructure_kind
from hpcbench.llm import litellm_module
from hpcbench.problem import load_problems
from hpcbench.resources import data_path
from hpcbench.submission import load_submission
from tests.conftest import QUICK, hpcbench
from tests.openai_server import Reply

MODEL = "openai/gpt-4o-mini"
litellm = litellm_module()  # told to use its bundled price map (no fetch from the internet)


def _exc(cls, msg="boom"):
    """One of litellm's exceptions as its provider mapping raises it (some need the response)."""
    kw = {"message": msg, "llm_provider": "openai", "model": MODEL}
    try:
        return cls(**kw)
    except TypeError:
        return cls(**kw, response=httpx.Response(403, request=httpx.Request("POST", "http://127.0.0.1/v1")))


@pytest.mark.parametrize("exc,kind", [
    (_exc(litellm.AuthenticationError, "Incorrect API key provided"), "credentials"),
    (_exc(litellm.PermissionDeniedError), "credentials"),
    (_exc(litellm.RateLimitError, "quota exceeded"), "rate_limited"),
    (_exc(litellm.Timeout, "Request timed out"), "request_timeout"),
    (_exc(litellm.APIConnectionError, "Connection refused"), "unreachable"),
    (_exc(litellm.APIConnectionError, "Missing credentials. Please pass an `api_key`"), "credentials"),
    (_exc(litellm.ServiceUnavailableError, "upstream unavailable"), "provider_error"),
    (_exc(litellm.NotFoundError, "The model `gpt-9` does not exist"), "provider_error"),
    (_exc(litellm.ContextWindowExceededError, "maximum context length"), "provider_error"),
    (ConnectionRefusedError("refused"), "unreachable"),
])
def test_provider_errors_are_infrastructure(exc, kind):
    assert infrastructure_kind(exc) == kind
    fail = failure_from_exception(exc)
    assert fail.infrastructure and fail.kind == kind and type(exc).__name__ in fail.reason


def test_a_bug_or_an_odd_answer_is_not_infrastructure():
    assert infrastructure_kind(KeyError("choices")) is None
    assert failure_from_exception(KeyError("choices")).kind == "protocol_error"
    assert not GenerationFailure("malformed_answer", "x").infrastructure


def test_the_whole_cause_is_kept():
    long = "Incorrect API key provided: sk-abc****. " + "You can find your API key at https://platform. " * 20
    fail = failure_from_exception(_exc(litellm.AuthenticationError, long))
    assert fail.reason.endswith(long.strip()[-40:]) and len(fail.reason) > 500  # the old cut was 15 characters in


def _ok_answer(body):
    src = (data_path("problems") / "rosenbrock" / "reference" / "main.c").read_text()
    return Reply.json({"files": [{"name": "main.c", "content": src}], "entry": "main.c", "ranks": [], "args": []})


def test_outage_is_kept_apart_and_asked_again(openai_server, tmp_path):
    bundles = load_problems(None, ["rosenbrock"])
    agent = LitellmAgent(MODEL, base_url=openai_server.base_url, num_retries=0)
    openai_server.default = Reply.server_error(503)
    summary = asyncio.run(generate_submissions([agent], bundles, 2, tmp_path, concurrency=2, timeout_s=60))
    assert [e.kind for e in summary.errors] == ["provider_error", "provider_error"]
    assert summary.written["failed"] == 0 and not summary.failures  # an outage is not a failed generation
    assert not (tmp_path / agent.name / "rosenbrock" / "1" / "submission.json").exists()
    assert len(read_errors(tmp_path)) == 2 and (tmp_path / ERRORS_DIR).is_dir()

    openai_server.reset()
    openai_server.default = _ok_answer
    again = asyncio.run(generate_submissions([agent], bundles, 2, tmp_path, concurrency=2, timeout_s=60))
    assert again.written["ok"] == 2 and not again.errors and openai_server.count == 2
    assert read_errors(tmp_path) == []  # answered: no longer an error


def test_a_tree_holding_an_infrastructure_error_is_not_a_submission(tmp_path):
    att = tmp_path / "m" / "rosenbrock" / "1"
    att.mkdir(parents=True)
    (att / "submission.json").write_text(json.dumps({
        "problem": "rosenbrock", "agent": "m", "attempt": "1", "generation_error": "AuthenticationError: no key",
        "generation_error_kind": "credentials"}))
    res = load_submission(att, "m", "rosenbrock", {"rosenbrock"}, "1")
    assert res.field == "generation_error_kind" and "infrastructure error" in res.reason


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("HPCBENCH_API_KEY", "OPENAI_API_KEY", "HPCBENCH_BASE_URL")}
    return {**env, **extra}


def _hpcbench(*args, env):
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).parent / "hpcbench"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, timeout=900)


def test_no_key_fails_before_anything_is_planned(tmp_path):
    camp = tmp_path / "c"
    p = _hpcbench("run", "--agent", f"litellm:{MODEL}", "--problems", "rosenbrock", "--out", str(camp), env=_env())
    assert p.returncode == 2, p.stderr
    assert "OPENAI_API_KEY" in p.stderr and "credentials" in p.stderr and "Traceback" not in p.stderr
    assert not (camp / "specs").exists() or not list((camp / "specs").iterdir())  # nothing planned


def test_refused_key_names_the_providers_answer(openai_server, tmp_path):
    openai_server.required_key = "sk-good"
    p = _hpcbench("run", "--agent", f"litellm:{MODEL}", "--problems", "rosenbrock", "--out", str(tmp_path / "c"),
                  "--base-url", openai_server.base_url, env=_env(HPCBENCH_API_KEY="sk-bad"))
    assert p.returncode == 2 and "Incorrect API key provided (test server)" in p.stderr, p.stderr


@pytest.mark.slow
@pytest.mark.petsc
def test_outage_mid_campaign_then_retry_completes_it(openai_server, tmp_path):
    """The preflight passes, the generation meets an outage: the references run and are
    scored, the model is on no leaderboard, the command exits 1 naming the cause; after
    the outage `retry` generates that attempt and runs only its job."""
    camp = tmp_path / "c"
    outage = {"on": True}

    def answer(body):
        if body.get("max_tokens") == 8:  # the preflight's one tiny completion
            return Reply.text("ok")
        return Reply.server_error(503) if outage["on"] else _ok_answer(body)

    openai_server.default = answer
    env = _env(HPCBENCH_API_KEY="sk-test")
    p = _hpcbench("run", "--profile", str(QUICK), "--agent", f"litellm:{MODEL}", "--problems", "rosenbrock",
                  "--out", str(camp), "--base-url", openai_server.base_url, env=env)
    assert p.returncode == 1, p.stderr
    assert "provider_error" in p.stderr and "upstream unavailable (test server)" in p.stderr
    assert f"hpcbench retry {camp}" in p.stderr
    report = json.loads(hpcbench("report", str(camp), "--format", "json").stdout)
    assert [e["kind"] for e in report["errors"]] == ["provider_error"]
    assert {r["agent"] for r in report["leaderboard"]} == {"reference"}  # the model is not ranked at 0
    assert "infrastructure errors (not scored)" in (camp / "report" / "report.md").read_text()
    records = {p.name: p.stat().st_mtime_ns for p in (camp / "records").iterdir()}

    outage["on"] = False
    r = _hpcbench("retry", str(camp), env=env)
    assert r.returncode == 0, r.stderr
    assert "1 already done" in r.stderr  # the reference's job was not run again
    after = {p.name: p.stat().st_mtime_ns for p in (camp / "records").iterdir()}
    assert {k: v for k, v in after.items() if k in records} == records
    report = json.loads(hpcbench("report", str(camp), "--format", "json").stdout)
    assert report["errors"] == []
    mine = [x for x in report["submissions"] if x["agent"] == "openai_gpt-4o-mini"]
    assert len(mine) == 1 and mine[0]["gates_passed"], mine
