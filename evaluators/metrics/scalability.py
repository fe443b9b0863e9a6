"""Metric (optional): how the program scales next to the reference, from a sweep.

The score is the submission's parallel efficiency relative to the reference's at the
largest clean point of its sweep (every time behind it, the program's and the reference's
at that point and at their base points: ok, right answer, not oversubscribed, not noisy),
capped at 1: a program that scales as well as the expert's scores 1, one at half the
reference's efficiency 0.5. Without a sweep of this program it is unscored, never 0, and
marked optional: the composite is not partial for lack of a sweep.
When every point beyond the base is oversubscribed or noisy, the largest such point is
used at lower confidence (0.4 oversubscribed, 0.6 noisy), and said.

The points come in the context (EvalContext.scaling), read once per scoring by the scoring
stage (hpcbench/score/sweep_points.py) from the campaign's sweeps: its own /sweep, or
<campaign>/sweeps/* (`hpcbench sweep --from CAMPAIGN`, then score again)."""

from __future__ import annotations

import math

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, ScalingPoint, register

OVERSUBSCRIBED_CONFIDENCE = 0.4
NOISY_CONFIDENCE = 0.6


def largest_clean(points: list[ScalingPoint]) -> ScalingPoint | None:
    """The point with the most ranks beyond the base whose relative efficiency rests on clean
    times only (its own, the reference's, both bases: ok, not oversubscribed, not noisy)."""
    cand = [p for p in points if p.rel_clean and math.isfinite(p.rel_efficiency) and p.ranks > p.base_ranks]
    return max(cand, key=lambda p: (p.ranks, p.mode == "strong", p.size), default=None)


@register
class Scalability(Evaluator):
    name = "scalability"
    stage = "metric"
    category = "performance"
    order = 30

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        pts = ctx.scaling
        if not pts:
            # optional: without a sweep nothing is missing from the composite (scoring.finish_score)
            return self.unscored("no scaling sweep of this program (hpcbench sweep --from CAMPAIGN, then score)",
                                 evidence={"optional": True})
        best = largest_clean(pts)
        confidence, note = 1.0, ""
        if best is None:
            usable = [p for p in pts if p.status == "ok" and math.isfinite(p.rel_efficiency)
                      and p.ranks > p.base_ranks]
            if not usable:
                n_wrong = sum(p.status == "wrong answer" for p in pts)
                return self.unscored("no sweep point beyond the base ran with the right answer beside the reference"
                                     + (f" ({n_wrong} wrong answers)" if n_wrong else ""),
                                     evidence={"points": [p.path for p in pts]})
            best = max(usable, key=lambda p: (not p.oversubscribed, p.ranks))  # noisy before oversubscribed
            confidence = OVERSUBSCRIBED_CONFIDENCE if best.oversubscribed else NOISY_CONFIDENCE
            note = "; no clean point: " + ("oversubscribed" if best.oversubscribed else
                                           "noisy times (its own, the reference's or a base point)") + \
                   " (lower confidence)"
        score = min(1.0, best.rel_efficiency)
        wrong = sum(p.status == "wrong answer" for p in pts)
        rationale = (f"{best.mode} scaling at {best.ranks} ranks (size {best.size}): efficiency "
                     f"{best.efficiency:.2f} vs the reference's {best.ref_efficiency:.2f} -> {best.rel_efficiency:.2f}"
                     f"{note}" + (f"; {wrong} point(s) gave a wrong answer" if wrong else ""))
        return self.result(score, rationale, confidence=confidence,
                           evidence={"point": best.path, "sweep": best.sweep, "efficiency": best.efficiency,
                                     "ref_efficiency": best.ref_efficiency, "wrong_points": wrong})
