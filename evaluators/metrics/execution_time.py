"""Metric: execution time, piecewise linear over the problem's thresholds.

1.0 up to t1, then linearly through 0.8, 0.6 and 0.2 at t2, t3, t4, then
0.2*t4/t. The time is the median of clean runs (no debug allocator) minus the
median of a PETSc null program at the same rank count, so launcher and MPI
start-up do not count."""

from __future__ import annotations

from typing import Any

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register
from hpcbench.evaluators.run_agreement import disagreements

LEVELS = (1.0, 0.8, 0.6, 0.2)


def time_score(t: float, thresholds: tuple[float, float, float, float]) -> float:
    t1, t2, t3, t4 = thresholds
    if t <= t1:
        return 1.0
    for (a, sa), (b, sb) in zip(zip(thresholds, LEVELS), zip(thresholds[1:], LEVELS[1:])):
        if t <= b:
            return sa + (sb - sa) * (t - a) / (b - a)
    return 0.2 * t4 / t


@register
class ExecutionTime(Evaluator):
    name = "execution_time"
    stage = "metric"
    category = "performance"
    order = 20

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        timings = ctx.record.timings if ctx.record else []
        if not timings:
            return self.unscored("no timed runs")
        differ = disagreements(ctx.record, ctx.checks)
        if differ:  # the timed runs are not the program whose answers were checked
            return self.result(0.0, f"answers differ between runs, so the timed runs measure another program: "
                                    f"{differ[0]}", evidence={"answers_differ": differ[:20]})
        th = ctx.problem.runtime_thresholds_s
        rows: list[dict[str, Any]] = [{"case": t.case, "ranks": t.ranks, "exec_s": round(t.exec_s, 6),
                 "score": round(time_score(t.exec_s, th), 4), "oversubscribed": t.oversubscribed,
                 "repeats": t.repeats, "source": t.exec_source, "wall_minus_null_s": round(t.wall_minus_null_s, 6)}
                for t in timings]
        score = sum(r["score"] for r in rows) / len(rows)
        slowest = max(rows, key=lambda r: r["exec_s"])
        confidence = 1.0
        notes = []
        if any(r["oversubscribed"] for r in rows):
            confidence = 0.6
            notes.append("some runs had more ranks than cores")
        outside = [r for r in rows if r["source"] != "log_view"]
        if outside:
            # Launcher noise now sits inside the measured time.
            confidence = min(confidence, 0.8)
            notes.append(f"{len(outside)} timings from wall clock minus launcher start-up (PETSc's own "
                         "-log_view time missing or far below it: work outside PetscInitialize/Finalize?)")
        if any(r["repeats"] < 3 for r in rows):
            confidence = min(confidence, 0.8)
            notes.append("fewer than 3 repeats")
        rationale = (f"slowest: case {slowest['case']} at {slowest['ranks']} ranks took "
                     f"{slowest['exec_s']:.3f} s (thresholds {', '.join(f'{x:g}' for x in th)} s)")
        if notes:
            rationale += "; " + "; ".join(notes)
        return self.result(score, rationale, confidence=confidence, evidence={"timings": rows})
