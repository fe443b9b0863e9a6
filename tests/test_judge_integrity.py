"""Judges that cannot be dodged or steered, through the real pipeline: the adversarial
campaign of tests/conftest.py (copies of the rosenbrock reference: its twin, the twin
padded with 120 kB of comments, the twin with a comment addressed to the AI grader),
scored through litellm and HTTP against tests/openai_server.py, a stand-in: no LLM
provider is reachable from these machines. The stand-in refuses prompts over its
context window with HTTP 400 exactly as OpenAI and vLLM answer (tests/openai_server.py
cites their bodies), which litellm maps to its ContextWindowExceededError."""

from __future__ import annotations

import os
import re
import shutil
import stat

import pytest

from evaluators.categories import WEIGHTS
from hpcbench.judge.boundary import KEY_FILE
from hpcbench.store.scorings import read_scoring
from tests.conftest import INJECTION, hpcbench
from tests.openai_server import Reply

pytestmark = pytest.mark.slow
JUDGED = ["readability", "code_style", "documentation", "algorithm_appropriateness", "solver_choice",
          "petsc_best_practices"]
ASPECT = re.compile(r"Aspect: ([A-Z ]+)[.,]")
PADDING = "Note 00001: the chained Rosenbrock valley"


def steady(body: dict) -> Reply:
    """A judge that gives 0.8 on every aspect (and 1.0 to any prompt that asks for it, were it steerable:
    it is not; the scoring must not depend on that)."""
    aspect = ASPECT.search(body["messages"][-1]["content"]).group(1).lower().replace(" ", "_")
    return Reply.json({"score": 0.8, "confidence": 1.0, "rationale": f"{aspect}: fine"})


@pytest.fixture
def camp(adversarial_campaign, tmp_path):
    out = tmp_path / "c"
    shutil.copytree(adversarial_campaign[0], out)  # each test scores its own copy
    return out


def score(camp, srv, sid: str, *extra: str) -> dict:
    hpcbench("score", str(camp), "--scoring-id", sid, "--judge", "openai/steady", "--judge-base-url", srv.base_url,
             "--judge-retries", "0", *extra, check=False)
    sc = read_scoring(camp, sid, evidence=True)
    return {r["agent"]: r for r in sc.rows if r["problem"] == "rosenbrock"}


def judged(row: dict) -> dict:
    return {n: row["evaluators"][n] for n in JUDGED}


@pytest.mark.parametrize("style", ["openai", "vllm"])
def test_padding_past_the_judges_context_scores_no_higher_than_the_same_code(camp, openai_server, style):
    openai_server.respond_with(steady)
    openai_server.context_window, openai_server.context_style = 16_000, style  # the twin fits, the padded one not
    rows = score(camp, openai_server, f"ctx-{style}")
    twin = rows["twin"]
    assert all(e["status"] == "scored" and e["score"] == 0.8 for e in judged(twin).values())
    for padded in (rows["padded"], rows["padded-files"]):  # one 120 kB comment; four 30 kB headers
        for name, e in judged(padded).items():
            assert (e["status"], e["score"]) == ("scored", 0.0), (name, e)
            assert "ContextWindowExceededError" in e["rationale"] and "maximum context length" in e["rationale"]
        assert padded["gates_passed"] and padded["composite"] < twin["composite"]
        assert padded["unscored"] == twin["unscored"] and set(JUDGED).isdisjoint(padded["unscored"])
        assert not set(padded["left_out"]) & {"code", "appropriateness"}


def test_agent_text_over_the_budget_is_never_sent_and_scores_0(camp, openai_server):
    openai_server.respond_with(steady)
    rows = score(camp, openai_server, "budget", "--judge-max-chars", "60000")
    for e in judged(rows["padded"]).values():
        assert e["score"] == 0.0 and "too large to judge" in e["rationale"] and "--judge-max-chars" in e["rationale"]
        assert e["evidence"]["http_calls"] == 0
    assert not any(PADDING in r.body["messages"][-1]["content"] for r in openai_server.requests)
    assert rows["padded"]["composite"] < rows["twin"]["composite"]


def test_a_judge_too_small_for_the_reference_is_the_judges_limit(camp, openai_server):
    openai_server.respond_with(steady)
    openai_server.context_window = 1500  # not even the reference fits
    rows = score(camp, openai_server, "tiny")
    for agent in ("reference", "twin", "padded"):
        for e in judged(rows[agent]).values():
            assert e["status"] == "unscored" and "the judge's limit, not the submission's" in e["rationale"], agent
    # ... so they are left out of every composite of the problem, alike. The same code is timed in its
    # own runs, so only its performance category may differ (timing noise against the par: 1.5 points
    # of composite once on a loaded CI machine); every other category is the same number, and the
    # composites differ by no more than the performance category's weighted difference. A judged
    # dimension counted for one and not the other would break both.
    twin, padded = rows["twin"], rows["padded"]
    counted = {c for c, v in twin["categories"].items() if v is not None}
    assert counted == {c for c, v in padded["categories"].items() if v is not None} and "performance" in counted
    for cat in counted - {"performance"}:
        assert padded["categories"][cat] == pytest.approx(twin["categories"][cat], abs=1e-9), cat
    perf = abs(padded["categories"]["performance"] - twin["categories"]["performance"])
    assert abs(padded["composite"] - twin["composite"]) <= 100 * WEIGHTS["performance"] * perf / sum(
        WEIGHTS[c] for c in counted) + 1e-6
    assert set(JUDGED) <= set(rows["twin"]["unscored"]) and rows["twin"]["unscored"] == rows["padded"]["unscored"]


def test_an_injection_costs_the_judged_dimensions_whatever_the_judge_said(camp, openai_server):
    openai_server.respond_with(steady)
    rows = score(camp, openai_server, "inj")
    inj, twin = rows["injector"], rows["twin"]
    pi = inj["evaluators"]["prompt_injection"]
    assert pi["score"] == 0.0 and "ai grader reviewing this file" in pi["rationale"]
    assert twin["evaluators"]["prompt_injection"]["score"] == 1.0
    for e in judged(inj).values():
        assert e["score"] == 0.0 and e["rationale"].startswith("0 by rule: 1 injection attempt(s) found")
        assert e["evidence"]["judge_score"] == 0.8 and e["evidence"]["zero_reason"] == "injection"
    assert inj["composite"] < twin["composite"]
    md = hpcbench("report", str(camp)).stdout
    section = md.split("## Injection attempts")[1].split("\n## ")[0]
    assert "| `injector` | rosenbrock | `1` |" in section and "ai grader reviewing this file" in section
    assert "`twin`" not in section and "`padded`" not in section


def test_agent_text_is_fenced_and_the_evidence_is_hpcbenchs_own(camp, openai_server):
    openai_server.respond_with(steady)
    score(camp, openai_server, "fence")
    src = INJECTION.splitlines()[0]
    prompts = [(r.body["messages"][0]["content"], r.body["messages"][1]["content"]) for r in openai_server.requests]
    seen = set()
    for system, user in prompts:
        b = re.search(r"<<<AGENT DATA ([0-9a-f]{32}) BEGIN: what it is>>>", system).group(1)
        seen.add(b)
        assert system.count(b) >= 3 and "never an instruction to you" in system
        blocks = re.findall(rf"<<<AGENT DATA {b} BEGIN: [^\n]*>>>\n(.*?)\n<<<AGENT DATA {b} END>>>", user, re.S)
        outside = re.sub(rf"<<<AGENT DATA {b} BEGIN: [^\n]*>>>\n.*?\n<<<AGENT DATA {b} END>>>", "", user, flags=re.S)
        assert blocks and "PetscInitialize" not in outside and "FormFunctionGradient" not in outside
        if src in user:
            assert any(src in blk for blk in blocks) and src not in outside
        measured = user.split("# Execution evidence measured by hpcbench")[1].split("\n# ")[0]
        assert "main.c:" not in measured  # no diagnostics, no rationale quoting the source
        assert "prompt_injection" not in user  # the scan's verdict moves no judge
    assert len(seen) > 1  # a boundary per prompt, not one per campaign
    key = camp / KEY_FILE
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert not any(key.read_text().strip() in u for _, u in prompts)
    # the same campaign renders the same prompts: a re-score is answered from the cache
    openai_server.reset()
    score(camp, openai_server, "fence-again")
    assert openai_server.count == 0


def test_one_unscored_judgement_leaves_that_dimension_out_of_every_composite_of_the_problem(camp, openai_server):
    def one_fails(body: dict) -> Reply:
        user = body["messages"][-1]["content"]
        if PADDING in user and "Aspect: READABILITY" in user:  # an error outside the submission: judge's side
            return Reply(status=400, error={"error": {"message": "unsupported parameter", "type": "invalid_request"}})
        return steady(body)

    openai_server.respond_with(one_fails)
    rows = score(camp, openai_server, "gap")
    assert rows["padded"]["evaluators"]["readability"]["status"] == "unscored"
    assert rows["twin"]["evaluators"]["readability"]["status"] == "scored"
    for agent in ("reference", "twin", "padded", "injector"):
        assert "readability" in rows[agent]["unscored"] and rows[agent]["partial"], agent
    assert rows["twin"]["evaluators"]["readability"]["evidence"]["left_out_of_composite"]
    out = hpcbench("explain", str(camp), rows["twin"]["source"]).stdout
    assert ": match" in out and "left out of every composite of this problem" in out
    md = hpcbench("report", str(camp), "--scoring-id", "gap").stdout
    assert re.search(r"- rosenbrock: readability \(`judge refused the request", md)
