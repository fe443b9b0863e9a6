"""The base of the LLM-judged quality evaluators (this folder).

`evaluate` does not call the judge: it renders the rubric prompt into a
JudgeTask, returned in its EvalResult's `pending` field; scoring gathers the tasks of
every submission and answers them concurrently (hpcbench/judge/runner.py), then
`from_outcome` turns each answer into the result that takes the pending one's place.
Without a judge configured the evaluator is unscored.

A dimension that cannot be judged because of the submission itself is 0 with its
reason, never unscored (an unscored dimension would drop out of the composite, and a
submission could dodge the judges by making itself unjudgeable): agent text over
JudgeConfig.max_source_chars (not sent), a prompt the judge rejects as over its
context window or against its content policy, or an answer it withholds by content
filter. The same 0 applies where the deterministic injection scan
(evaluators/quality/prompt_injection.py) found text addressed to the judge: whatever
the judge answered may have been steered; its answer is kept in the evidence. An
evaluator that could not run for a reason outside the submission (no judge, an
outage) stays unscored (score/scoring.resolve_judged also turns a "submission" failure
into that when the problem's reference failed the same way: then the judge is the
limit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator
from hpcbench.evaluators.judged.evidence import collect_evidence
from hpcbench.judge.prompt import agent_data, render_messages
from hpcbench.judge.task import JudgeOutcome, JudgeTask

NO_JUDGE = "no judge configured (hpcbench score --judge MODEL)"
PROMPTS = Path(__file__).resolve().parent.parent / "prompts"  # evaluators/prompts/<version>.txt
INJECTION = "prompt_injection"
PENDING = "judge answer pending"


def _injection(ctx: EvalContext) -> str:
    """The injection scan's verdict in words, "" when it found nothing."""
    r = ctx.results.get(INJECTION)
    if r is None or r.status != "scored" or (r.score or 0.0) >= 1.0:
        return ""
    return r.rationale.split(":", 1)[0]  # "N injection attempt(s) found" (the quotes stay in its own evidence)


class JudgedEvaluator(Evaluator):
    stage = "quality"
    method = "llm_judge"
    order = 90  # after every deterministic evaluator: their results are part of the evidence
    prompt_version: ClassVar[str]  # evaluators/prompts/<prompt_version>.txt

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        if ctx.judge is None:
            return self.unscored(NO_JUDGE, evidence={"prompt_version": self.prompt_version})
        evidence = collect_evidence(ctx, ctx.results)
        data = agent_data(ctx.sources, ctx.submission, evidence)
        messages = render_messages(PROMPTS, self.prompt_version, ctx.problem, data, evidence, ctx.judge.boundary_key,
                                   ctx.language)
        oversize = ""
        if data.source_chars > ctx.judge.max_source_chars:
            oversize = (f"too large to judge: {data.source_chars:,} characters of source and submission.json, the "
                        f"judge takes at most {ctx.judge.max_source_chars:,} (--judge-max-chars)")
        task = JudgeTask(evaluator=self.name, prompt_version=self.prompt_version, messages=messages,
                         submission=ctx.h5_path, oversize=oversize,
                         evidence={"injection": _injection(ctx), "source_chars": data.source_chars})
        return self.unscored(PENDING).model_copy(update={"pending": task})

    def from_outcome(self, o: JudgeOutcome) -> EvalResult:
        evidence: dict[str, Any] = {
            "prompt_sha256": o.task.prompt_sha256, "cached": o.cached, "http_calls": o.http_calls,
            "asked": o.asked, "latency_s": round(o.latency_s, 3), "source_chars": o.task.evidence.get("source_chars")}
        injection = o.task.evidence.get("injection", "")
        if injection:
            said = f"{o.answer.score:.2f}" if o.answer else f"none ({o.error})"
            if o.answer:
                evidence.update(judge_score=o.answer.score, judge_confidence=o.answer.confidence)
            res = self.result(0.0, f"0 by rule: {injection} in the agent's text, so the judge may have been "
                                   f"steered (its own score, {said}, is kept in the evidence)",
                              evidence={**evidence, "zero_reason": "injection"})
        elif o.answer is not None:
            res = self.result(o.answer.score, o.answer.rationale, confidence=o.answer.confidence, evidence=evidence)
        elif o.blame == "submission":
            res = self.result(0.0, f"0: the submission cannot be judged: {o.error}",
                              evidence={**evidence, "zero_reason": o.error, "last_reply": o.raw[:2000]})
        else:
            res = self.unscored(o.error, evidence={**evidence, "last_reply": o.raw[:2000]})
        return res.model_copy(update={"judge_model": o.model, "prompt_version": self.prompt_version,
                                      "prompt_tokens": o.prompt_tokens, "completion_tokens": o.completion_tokens,
                                      "cost_usd": o.cost_usd})
