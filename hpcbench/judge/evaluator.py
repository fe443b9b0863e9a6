"""The base of the LLM-judged quality evaluators (evaluators/judged/).

`evaluate` does not call the judge: it renders the rubric prompt into a
JudgeTask, scoring gathers the tasks of every submission and answers them
concurrently (runner.py), then `from_outcome` turns each answer into the
EvalResult. Without a judge configured the evaluator is unscored."""

from __future__ import annotations

from typing import ClassVar

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator
from hpcbench.judge.evidence import render_evidence
from hpcbench.judge.prompt import render
from hpcbench.judge.task import JudgeOutcome, JudgeTask

NO_JUDGE = "no judge configured (hpcbench score --judge MODEL)"


class JudgedEvaluator(Evaluator):
    stage = "quality"
    method = "llm_judge"
    order = 90  # after every deterministic evaluator: their results are part of the evidence
    prompt_version: ClassVar[str]  # evaluators/prompts/<prompt_version>.txt

    def evaluate(self, ctx: EvalContext) -> EvalResult | JudgeTask:  # type: ignore[override]
        if ctx.judge is None:
            return self.unscored(NO_JUDGE, evidence={"prompt_version": self.prompt_version})
        evidence = render_evidence(ctx, ctx.results)
        messages = render(self.prompt_version, ctx.problem, ctx.sources, evidence)
        return JudgeTask(evaluator=self.name, prompt_version=self.prompt_version, messages=messages,
                         submission=ctx.h5_path)

    def from_outcome(self, o: JudgeOutcome) -> EvalResult:
        evidence = {"prompt_sha256": o.task.prompt_sha256, "cached": o.cached, "http_calls": o.http_calls,
                    "asked": o.asked, "latency_s": round(o.latency_s, 3)}
        if o.answer is None:
            res = self.unscored(o.error, evidence={**evidence, "last_reply": o.raw[:2000]})
        else:
            res = self.result(o.answer.score, o.answer.rationale, confidence=o.answer.confidence,
                              evidence=evidence)
        return res.model_copy(update={"judge_model": o.model, "prompt_version": self.prompt_version,
                                      "prompt_tokens": o.prompt_tokens, "completion_tokens": o.completion_tokens,
                                      "cost_usd": o.cost_usd})
