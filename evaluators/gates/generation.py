"""Gate: the agent produced an answer at all.

A failed generation (no code, malformed JSON, an unsafe file name, truncation,
a protocol error or timeout ...) is stored with its reason and taxonomy key in
submission.json; it has nothing to build, so it ends here at 0, with the reason
as the rationale, instead of being dropped from the campaign."""

from __future__ import annotations

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register


@register
class GenerationGate(Evaluator):
    name = "generation"
    stage = "gate"
    category = "correctness"
    order = 0

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        sub = ctx.submission
        if sub.generation_error:
            return self.gate(False, f"generation failed ({sub.generation_error_kind}): {sub.generation_error}",
                             evidence={"kind": sub.generation_error_kind, "reason": sub.generation_error})
        return self.gate(True, "the agent answered with source files",
                         evidence={"files": sub.files, "entry": sub.entry})
