"""LLM judges through litellm over real HTTP.

The judge endpoint is tests/openai_server.py on 127.0.0.1, a stand-in: no LLM
provider is reachable from the machines these tests run on. Everything from
litellm's request down to our validation, retries, cache and scoring is real."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hpcbench.evaluators.judged.solver_choice import SolverChoice
from hpcbench.judge.answer import BadAnswer, parse_answer
from hpcbench.judge.cache import JudgeCache, journal_path
from hpcbench.judge.config import JudgeConfig
from hpcbench.judge.runner import OUTAGE_AFTER, run_tasks
from hpcbench.judge.task import JudgeTask
from hpcbench.store.scorings import read_scoring
from tests.conftest import hpcbench
from tests.openai_server import Reply

GOOD = {"score": 0.75, "confidence": 0.9, "rationale": "clear names, one long main()"}
JUDGED = ["readability", "code_style", "documentation", "algorithm_appropriateness", "solver_choice",
          "petsc_best_practices"]


def task(i: int = 0) -> JudgeTask:
    return JudgeTask(evaluator="readability", prompt_version="readability.v1",
                     messages=[{"role": "system", "content": "judge"}, {"role": "user", "content": f"code {i}"}])


def cfg(srv, **kw) -> JudgeConfig:
    base = {"model": "openai/judge-a", "base_url": srv.base_url, "timeout_s": 10.0, "max_retries": 2,
            "backoff_s": 0.01}
    return JudgeConfig(**{**base, **kw})


# ----------------------------------------------------------------------------- answers


def test_parse_answer_accepts_fenced_json_and_names_what_is_wrong():
    assert parse_answer('```json\n{"score": 1, "confidence": 0.5, "rationale": "ok"}\n```').score == 1.0
    with pytest.raises(BadAnswer, match="not JSON"):
        parse_answer("The code is good. Score: 8/10")
    with pytest.raises(BadAnswer, match=r"score: Input should be less than or equal to 1"):
        parse_answer('{"score": 8, "confidence": 0.5, "rationale": "ok"}')
    with pytest.raises(BadAnswer, match="rationale"):
        parse_answer('{"score": 0.5, "confidence": 0.5}')
    with pytest.raises(BadAnswer, match="cut off"):
        parse_answer('{"score": 0.5, "confidence": 0.5, "rationale": "the', finish_reason="length")


def test_good_answers_with_usage_through_litellm(openai_server):
    openai_server.default = Reply.json(GOOD, prompt_tokens=321, completion_tokens=17)
    outs = run_tasks([task(i) for i in range(3)], cfg(openai_server))
    assert [o.answer.score for o in outs] == [0.75, 0.75, 0.75]
    assert all(o.error == "" and o.http_calls == 1 and o.asked == 1 for o in outs)
    assert (outs[0].prompt_tokens, outs[0].completion_tokens, outs[0].cost_usd) == (321, 17, 0.0)
    body = openai_server.requests[0].body
    assert body["model"] == "judge-a" and body["temperature"] == 0
    assert {r.body["messages"][1]["content"] for r in openai_server.requests} == {"code 0", "code 1", "code 2"}


def test_cost_from_litellms_bundled_price_map(openai_server):
    """A model litellm has a price for: cost from the usage tokens, with no price-map download."""
    openai_server.default = Reply.json(GOOD, prompt_tokens=1000, completion_tokens=100)
    (o,) = run_tasks([task()], cfg(openai_server, model="openai/gpt-4o-mini"))
    assert o.cost_usd > 0 and o.cost_usd < 0.01 and (o.prompt_tokens, o.completion_tokens) == (1000, 100)


def test_garbage_then_good_is_asked_again_once_with_the_reason(openai_server):
    openai_server.queue(Reply.text("Looks fine to me!"))
    openai_server.default = Reply.json(GOOD)
    (o,) = run_tasks([task()], cfg(openai_server))
    assert o.answer is not None and o.answer.score == 0.75 and o.asked == 2
    retry = openai_server.requests[1].body["messages"]
    assert retry[-2] == {"role": "assistant", "content": "Looks fine to me!"}
    assert "not JSON" in retry[-1]["content"] and '"score"' in retry[-1]["content"]


@pytest.mark.parametrize("first,second,why", [
    (Reply.text("no json here"), Reply.text("still none"), "not JSON"),
    (Reply.json({"score": 7, "confidence": 1, "rationale": "x"}),
     Reply.json({"score": 1.5, "confidence": 1, "rationale": "x"}), "less than or equal to 1"),
    (Reply.truncated('{"score": 0.5, "rat'), Reply.truncated('{"score'), "cut off"),
])
def test_two_bad_answers_leave_it_unscored_with_the_reason(openai_server, first, second, why):
    openai_server.queue(first, second)
    (o,) = run_tasks([task()], cfg(openai_server))
    assert o.answer is None and openai_server.count == 2
    assert o.error.startswith("judge answer invalid twice") and why in o.error


def test_timeout_is_retried_then_unscored(openai_server):
    openai_server.default = Reply.json(GOOD, delay=5.0)
    (o,) = run_tasks([task()], cfg(openai_server, timeout_s=0.5, max_retries=1))
    assert o.answer is None and "timed out after 0.5 s" in o.error
    assert o.http_calls == 2 and openai_server.count == 2


def test_rate_limit_then_success(openai_server):
    openai_server.queue(Reply.rate_limited(), Reply.rate_limited())
    openai_server.default = Reply.json(GOOD)
    (o,) = run_tasks([task()], cfg(openai_server))
    assert o.answer is not None and o.http_calls == 3 and openai_server.count == 3


def test_refusal_is_not_retried(openai_server):
    openai_server.default = Reply(status=401, error={"error": {"message": "invalid api key", "type": "auth"}})
    (o,) = run_tasks([task()], cfg(openai_server))
    assert o.answer is None and "refused" in o.error and "invalid api key" in o.error
    assert openai_server.count == 1


def test_outage_stops_sending_after_a_few_failures(openai_server):
    openai_server.default = Reply.server_error(503)
    outs = run_tasks([task(i) for i in range(10)], cfg(openai_server, max_retries=0, concurrency=1))
    assert openai_server.count == OUTAGE_AFTER
    assert all(o.answer is None for o in outs)
    assert sum(o.error.startswith("not asked: the judge was unavailable") for o in outs) == 10 - OUTAGE_AFTER


def test_concurrency_limit_is_respected(openai_server):
    openai_server.default = Reply.json(GOOD, delay=0.3)
    outs = run_tasks([task(i) for i in range(8)], cfg(openai_server, concurrency=3))
    assert all(o.answer is not None for o in outs) and openai_server.count == 8
    assert 1 < openai_server.max_in_flight <= 3


def test_cache_journal_keeps_answers_through_a_crash(tmp_path, openai_server):
    h5 = tmp_path / "campaign.h5"
    openai_server.default = Reply.json(GOOD)
    run_tasks([task(0), task(1)], cfg(openai_server), JudgeCache(h5))
    # The scoring dies here: the answers are already in the append-only cache file,
    # whose last line the crash cut short.
    assert journal_path(h5) == tmp_path / "judge_cache.jsonl"
    with journal_path(h5).open("a") as fh:
        fh.write('{"key": "0123')
    openai_server.reset()
    again = JudgeCache(h5)
    outs = run_tasks([task(0), task(1)], cfg(openai_server), again)
    assert openai_server.count == 0 and all(o.cached and o.answer.score == 0.75 for o in outs)
    other_model = run_tasks([task(0)], cfg(openai_server, model="openai/judge-b"), again)
    assert openai_server.count == 1 and not other_model[0].cached  # the model is part of the key
    assert len(JudgeCache(h5)) == 3 and not h5.exists()  # the cache never touches campaign.h5


def test_unreadable_cache_entry_is_asked_again_and_replaced(tmp_path, openai_server):
    h5 = tmp_path / "campaign.h5"
    key = task().cache_key("openai/judge-a")
    journal_path(h5).write_text(json.dumps({"key": key, "entry": {"answer": {"score": 9}}}) + "\n")
    openai_server.default = Reply.json(GOOD)
    cache = JudgeCache(h5)
    (o,) = run_tasks([task()], cfg(openai_server), cache)
    assert openai_server.count == 1 and o.answer.score == 0.75 and not o.cached
    assert JudgeCache(h5).get(key)["answer"]["score"] == 0.75  # the later line wins


def test_concurrent_cache_writers_keep_every_answer(tmp_path):
    """Two scorings appending at once (two processes) lose no line."""
    h5 = tmp_path / "campaign.h5"
    code = ("import sys; from hpcbench.judge.cache import JudgeCache; c = JudgeCache(sys.argv[1]);"
            "[c.put(f'{sys.argv[2]}-{i}', {'answer': {'score': 0.5}, 'pad': 'x' * 3000}) for i in range(300)]")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(h5), w]) for w in ("a", "b")]
    assert all(p.wait() == 0 for p in procs)
    assert len(JudgeCache(h5)) == 600


# ----------------------------------------------------------------------------- no litellm at start-up


def test_cli_and_deterministic_scoring_do_not_import_litellm():
    code = ("import sys; import hpcbench.cli, hpcbench.score.scoring;"
            "from hpcbench.evaluators.base import all_evaluators;"
            "names = [e.name for e in all_evaluators()]; assert 'solver_choice' in names, names;"
            "assert 'litellm' not in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# ----------------------------------------------------------------------------- end to end on a campaign


def aspect_scores(table: dict[str, float]):
    """A judge that answers by the rubric it was sent (the prompt names the aspect)."""
    def answer(body: dict) -> Reply:
        user = body["messages"][-1]["content"]
        aspect = re.search(r"Aspect: ([A-Z ]+)[.,]", user).group(1).lower().replace(" ", "_")
        return Reply.json({"score": table[aspect], "confidence": 1.0, "rationale": f"{aspect} as scripted"},
                          prompt_tokens=1000, completion_tokens=20)
    return answer


def scoring_rows(h5, sid) -> dict:
    """{'<agent>/<problem>/<attempt>/evaluators/<name>': fields} of scores/<sid>.h5, and its config."""
    sc = read_scoring(Path(h5).parent, sid, evidence=True)
    out = {f"{r['agent']}/{r['problem']}/{r['attempt']}/evaluators/{n}": e
           for r in sc.rows for n, e in r["evaluators"].items()}
    return out, sc.config


def score_row(h5, sid, agent, problem, attempt) -> dict:
    return read_scoring(Path(h5).parent, sid).row(agent, problem, attempt)


@pytest.mark.slow
def test_score_with_judges_cache_outage_and_agreement(sample_campaign, tmp_path, openai_server):
    camp = tmp_path / "c"
    shutil.copytree(sample_campaign, camp)  # the shared campaign's scorings stay as other tests expect
    h5 = camp / "campaign.h5"
    url = openai_server.base_url

    # No judge: judged evaluators unscored, composite partial and naming them.
    hpcbench("score", str(camp), "--scoring-id", "s0-nojudge")
    rows, conf = scoring_rows(h5, "s0-nojudge")
    ref = "reference/rosenbrock/1/evaluators"
    assert rows[f"{ref}/readability"]["status"] == "unscored"
    assert "no judge configured" in rows[f"{ref}/readability"]["rationale"]
    a = score_row(h5, "s0-nojudge", "reference", "rosenbrock", "1")
    assert a["partial"] and set(JUDGED) <= set(a["unscored"])
    assert openai_server.count == 0

    # Judge A, with an outage after the first few answers: the rest unscored, scores kept.
    table_a = {n: 0.8 for n in JUDGED}
    served = {"n": 0}
    good = aspect_scores(table_a)

    def flaky(body):
        served["n"] += 1
        return good(body) if served["n"] <= 5 else Reply.server_error(503)

    openai_server.respond_with(flaky)
    # an outage is an infrastructure error, not a verdict: the scoring is written, the command
    # exits 1 naming the cause and how to ask again
    outage = hpcbench("score", str(camp), "--scoring-id", "s1-a-outage", "--judge", "openai/judge-a",
                      "--judge-base-url", url, "--judge-concurrency", "1", "--judge-retries", "0", check=False)
    assert outage.returncode == 1, outage.stderr
    assert "not made (unscored, not 0)" in outage.stderr and "HTTP 503" in outage.stderr
    assert "score again" in outage.stderr and "Traceback" not in outage.stderr
    rows, conf = scoring_rows(h5, "s1-a-outage")
    judged = {k: v for k, v in rows.items() if k.rsplit("/", 1)[1] in JUDGED}
    scored = [v for v in judged.values() if v["status"] == "scored"]
    missing = [v for v in judged.values() if v["status"] == "unscored"]
    assert len(scored) == 5 and missing and len(judged) == conf["judge_stats"]["tasks"]
    assert all("unavailable" in v["rationale"] for v in missing)
    assert all(v["status"] == "scored" for k, v in rows.items() if k.endswith("/compilation"))

    # Re-score once the judge is back: only the missing ones are asked.
    openai_server.reset()
    openai_server.respond_with(good)
    hpcbench("score", str(camp), "--scoring-id", "s2-a", "--judge", "openai/judge-a", "--judge-base-url", url)
    assert openai_server.count == len(missing)
    rows_a, conf_a = scoring_rows(h5, "s2-a")
    v = rows_a[f"{ref}/solver_choice"]
    assert (v["status"], v["score"], v["confidence"], v["method"]) == ("scored", 0.8, 1.0, "llm_judge")
    assert (v["judge_model"], v["prompt_version"]) == ("openai/judge-a", SolverChoice.prompt_version)
    assert v["rationale"] == "solver_choice as scripted" and v["prompt_tokens"] == 1000 and v["cost_usd"] == 0.0
    a = score_row(h5, "s2-a", "reference", "rosenbrock", "1")
    # every judged dimension scored: what is left out is only what the sample campaign's quick
    # profile does not measure (no performance case: the peak memory beside the reference's)
    assert a["unscored"] == ["peak_memory"], a["unscored"]

    # A cache hit makes zero requests.
    openai_server.reset()
    hpcbench("score", str(camp), "--scoring-id", "s3-a-again", "--judge", "openai/judge-a", "--judge-base-url", url)
    assert openai_server.count == 0
    again, conf_again = scoring_rows(h5, "s3-a-again")
    assert conf_again["judge_stats"]["http_calls"] == 0 and conf_again["judge_stats"]["cached"] == len(judged)
    assert {k: (v["score"], v["rationale"]) for k, v in again.items()} == {
        k: (v["score"], v["rationale"]) for k, v in rows_a.items()}

    # ... and survives a re-collect of the campaign.
    hpcbench("collect", str(camp))
    hpcbench("score", str(camp), "--scoring-id", "s4-a-recollected", "--judge", "openai/judge-a",
             "--judge-base-url", url)
    assert openai_server.count == 0

    # A second judge sees byte-identical prompts; the report shows the agreement.
    openai_server.reset()
    table_b = {**table_a, "readability": 0.5, "solver_choice": 0.9}
    openai_server.respond_with(aspect_scores(table_b))
    hpcbench("score", str(camp), "--scoring-id", "s5-b", "--judge", "openai/judge-b", "--judge-base-url", url)
    prompts_b = sorted(json.dumps(r.body["messages"]) for r in openai_server.requests)
    assert all(r.body["model"] == "judge-b" for r in openai_server.requests)
    assert len(prompts_b) == conf_a["judge_stats"]["tasks"]
    shas_a = sorted(v["evidence"]["prompt_sha256"] for k, v in rows_a.items() if k.rsplit("/", 1)[1] in JUDGED)
    rows_b, _ = scoring_rows(h5, "s5-b")
    shas_b = sorted(v["evidence"]["prompt_sha256"] for k, v in rows_b.items() if k.rsplit("/", 1)[1] in JUDGED)
    assert shas_a == shas_b

    ag = json.loads(hpcbench("agreement", str(camp), "--format", "json").stdout)
    assert (ag["scoring_a"], ag["scoring_b"], ag["judge_a"], ag["judge_b"]) == (
        "s5-b", "s4-a-recollected", "openai/judge-b", "openai/judge-a")
    by = {r["name"]: r for r in ag["rows"]}
    assert by["readability"]["n"] > 0 and by["readability"]["mean_abs_diff"] == pytest.approx(0.3)
    assert by["readability"]["max_abs_diff"] == pytest.approx(0.3)
    assert by["solver_choice"]["mean_abs_diff"] == pytest.approx(0.1)
    assert by["code_style"]["max_abs_diff"] == pytest.approx(0.0)
    # Composite of a passing submission: code (weight 0.15) loses 0.3 over its evaluators,
    # appropriateness (0.15) gains 0.1/2: never cancelling, at most 100 * 0.15 * 0.3 apart.
    assert 0.1 < by["composite"]["max_abs_diff"] < 4.5
    assert by["composite"]["n"] == by["readability"]["n"]  # failed gates (no judge) are not compared
    md = hpcbench("report", str(camp)).stdout
    assert "## Judge agreement" in md and "| readability |" in md and "openai/judge-a" in md
    assert openai_server.errors == []
