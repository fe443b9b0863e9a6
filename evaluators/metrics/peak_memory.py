"""Metric: peak memory relative to the reference, on the problem's performance case.

Each run of the performance case has its cgroup's memory high-water mark (all ranks and the
launcher together: jobs/cgroup.py `memory.peak` / `memory.max_usage_in_bytes`), read by the
job wrapper, never reported by the program. The launcher's own peak (the null program's,
run on the same cores in the same block) is taken off both; the ratio of the medians is
scored against the problem's `memory_thresholds` (default 1.5, 3, 6, 12) as execution_time
scores times. A difference within the runs' own spread plus 1 MiB counts as equal.
Unscored where no memory cgroup could be had (batch sites, whose ranks are the scheduler's
children) or the problem has no performance case. It is the second performance metric, at
confidence 0.5: in the category's confidence-weighted mean time counts twice what memory does
(a right program ten times slower than the reference, with the reference's memory, stays at
most 0.6 in performance)."""

from __future__ import annotations

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register
from hpcbench.evaluators.metrics.execution_time import time_score
from hpcbench.evaluators.performance_case import memory, rank_counts

MIB = 1 << 20
CONFIDENCE = 0.5  # second to time in the performance category (see the module's note)


@register
class PeakMemory(Evaluator):
    name = "peak_memory"
    stage = "metric"
    category = "performance"
    order = 25

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        perf = ctx.problem.performance
        other = ctx.reference if ctx.language != "c" else None  # its null is not the C reference's
        counts = [rc for rc in rank_counts(ctx.record, other_language=other) if not rc.failed]
        if perf is None or not counts:
            return self.unscored("no performance case measured")
        rows = []
        for rc in counts:
            got = memory(rc)
            if got is None:
                continue
            sub, ref, noise = got
            equal = abs(sub - ref) <= noise
            ratio = sub / ref if ref > 0 else float("inf")
            rows.append({"ranks": rc.ranks, "submission_mib": round(sub / MIB, 2), "reference_mib": round(ref / MIB, 2),
                         "noise_mib": round(noise / MIB, 2), "ratio": round(ratio, 3), "within_noise": equal,
                         "score": 1.0 if equal else round(time_score(ratio, perf.memory_thresholds), 4)})
        if not rows:
            return self.unscored("no memory high-water mark recorded (no memory cgroup for these runs)")
        worst = min(rows, key=lambda r: r["score"])
        th = ", ".join(f"{x:g}" for x in perf.memory_thresholds)
        why = (f"{worst['submission_mib']:.1f} MiB vs the reference's {worst['reference_mib']:.1f} MiB above the "
               f"launcher's own at {worst['ranks']} ranks"
               + (" (within the runs' spread: equal)" if worst["within_noise"] else
                  f" ({worst['ratio']:.2f} x; thresholds {th})"))
        return self.result(sum(r["score"] for r in rows) / len(rows), why, confidence=CONFIDENCE,
                           evidence={"memory": rows, "thresholds": list(perf.memory_thresholds)})
