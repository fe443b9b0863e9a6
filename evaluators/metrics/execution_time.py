"""Metric: execution time relative to the problem's par (or, without one, the reference), on
the problem's performance case.

With a par (problems/<id>/par/: the fastest valid program known for the problem, docs/problems.md)
the submission, the reference and the par ran the case in rotating order on the same cores
(jobs/perf.py), and the score is par_score(ratio to par, allowance): 1.0 at par or faster, or
within the measured noise of it (the larger spread of the submission's and the par's repeats),
that allowance capped at NOISE_CAP (0.1: a program measurably 1.3x slower never ties with par);
beyond it the square root of (1 + allowance) / ratio, which keeps falling with the ratio
(1.5x: 0.86, 2x: 0.74, 4x: 0.52, 8x: 0.37, 32x: 0.19 at the full allowance). Where the repeats
spread by more than the cap after the job's extra rounds (PerfPlan.max_repeats), the score
stands at lower confidence. The ratio to the reference is kept in the evidence. A problem whose
reference is the fastest known (problem.json `performance.reference_is_par`) is scored so
against the reference's runs.

Without a par, the submission and the reference ran the performance case (problem.json `performance`)
alternately on the same cores of the same node in this campaign (jobs/perf.py). Per rank
count the ratio of their median times is scored against the problem's ratio thresholds
t1..t4 (default 1.25, 2, 4, 8): 1.0 up to t1, then linearly through 0.8, 0.6 and 0.2 at t2,
t3, t4, then 0.2 x t4 / ratio; a ratio within the measured noise (the repeats' spread)
counts as equal. The score is the mean over rank counts. Repeats that shared a core with
another step of the campaign (hpcbench/score/contention.py) are left out while three clean
pairs remain, else kept at lower confidence; a machine loaded from outside (ranks waiting
for a CPU a quarter of their time) lowers the confidence and says so. A submission whose
answers in the performance case differ from the reference's beyond the problem's compare
checks (their tolerances x the problem's performance.tolerance_factor, 100 where it sets
none: the case lies outside the range they were set for) scores 0: a fast wrong answer is no
performance.

Without a performance case (a problem that declares none, or a record from before it), the
ordinary timings are compared with the reference's record at confidence 0.5.
`hpcbench score --time-metric absolute` scores every case's time against the paper's
absolute thresholds (problem.json `runtime_thresholds_s`, 0.5/1/2/4 s), for comparison
with published figures."""

from __future__ import annotations

import math
from typing import Any

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register
from hpcbench.evaluators.metrics.numerical_accuracy import case_factor, compare_score
from hpcbench.evaluators.output_contract import parse_quantities
from hpcbench.evaluators.performance_case import LOADED_WAIT_SHARE, NOISE_CAP, RankCount, rank_counts
from hpcbench.evaluators.run_agreement import disagreements
from hpcbench.problem import Checks, CompareCheck, Problem, ReferenceRun

LEVELS = (1.0, 0.8, 0.6, 0.2)
# The performance case lies outside the range the checks' tolerances were set for (Robertson's
# y1 near 5e-8 at t = 4e10 is set by the integrator's atol): only answers this many times beyond
# a compare check's failing point count as wrong there (work skipped, not digits lost). A problem
# sets its own (problem.json `performance.tolerance_factor`, measured by bench/perf_tolerance.py);
# this is the default where it does not.
PERF_TOLERANCE_FACTOR = 100.0
# score = ((1 + allowance) / ratio to par) ** PAR_EXPONENT beyond the allowance: the square root
# parts 1.5x (0.86) and 2x (0.74) from par and never reaches 0 (a slow right program is still one)
PAR_EXPONENT = 0.5


def par_score(ratio: float, allowance: float) -> float:
    """The score of a program `ratio` times par's time, `allowance` (the capped noise) counted
    as par: see the module's note."""
    if ratio <= 1.0 + allowance:
        return 1.0
    return ((1.0 + allowance) / ratio) ** PAR_EXPONENT


def time_score(t: float, thresholds: tuple[float, float, float, float]) -> float:
    """Piecewise linear over four thresholds (seconds, or ratios): see the module's note."""
    t1, _, _, t4 = thresholds
    if t <= t1:
        return 1.0
    for (a, sa), (b, sb) in zip(zip(thresholds, LEVELS), zip(thresholds[1:], LEVELS[1:])):
        if t <= b:
            return sa + (sb - sa) * (t - a) / (b - a)
    return 0.2 * t4 / t


def perf_checks(checks: Checks) -> list[CompareCheck]:
    """The compare checks the performance case's answers are judged by: every one against the
    reference's run, whatever case it names (the timed case is none of them)."""
    return [c for c in checks.checks if isinstance(c, CompareCheck) and isinstance(c.reference, ReferenceRun)]


def tolerance_factor(problem: Problem) -> float:
    """The problem's performance.tolerance_factor (PERF_TOLERANCE_FACTOR without a case)."""
    return problem.performance.tolerance_factor if problem.performance else PERF_TOLERANCE_FACTOR


def factor_to_pass(mine: dict[str, list[float]], ref: dict[str, list[float]], checks: list[CompareCheck],
                   args: list[str] | None = None) -> tuple[float, str]:
    """The tolerance factor `mine` needs to pass against `ref` (it passes at any factor above
    it; answers_differ rejects at or below it), with the quantity that sets it: the largest over
    the checks of the worst deviation in tolerances over the check's fail_factor (compare_score
    fails at fail_factor, and widening rtol and atol by k divides every deviation by k). inf
    where a quantity is missing, is not finite or has another length. `args`: the performance
    case's arguments, where a check's tolerance scales with one of them (answers_differ)."""
    worst, at = 0.0, ""
    for chk in checks:
        if chk.quantity not in ref:
            continue
        got, want = mine.get(chk.quantity), ref[chk.quantity]
        if got is None or len(got) != len(want) or not all(math.isfinite(x) for x in got):
            return math.inf, chk.quantity
        dev = max((abs(x - r) / (chk.atol + chk.rtol * abs(r)) for x, r in zip(got, want, strict=True)),
                  default=0.0) / case_factor(chk, args)
        if dev / chk.fail_factor > worst:
            worst, at = dev / chk.fail_factor, chk.quantity
    return worst, at


def answers_differ(rc: RankCount, ctx: EvalContext) -> str:
    """Why the submission's answers in the performance case are not right ("": they are): every
    timed run's, against the reference run by the problem's compare checks with their tolerances
    widened by the problem's performance.tolerance_factor (tolerance_factor()), and against the
    submission's own first run at the checks' own tolerances (the same program at the same
    arguments: a run that skipped work where it was not the first one compared once went
    unseen, outside review 5379f62)."""
    if not rc.sub.runs or not rc.ref.runs:
        return ""
    ref, first = parse_quantities(rc.ref.runs[0].stdout), parse_quantities(rc.sub.runs[0].stdout)
    k = tolerance_factor(ctx.problem)
    # a check whose tolerance scales with an option scales at the performance case's value of it:
    # the reference's run's command line, the arguments both sides were given (an answer that
    # barely moves over the drawn range, tabulated offline, passed the stated tolerance)
    factors = [(c, k * case_factor(c, rc.ref.runs[0].command)) for c in perf_checks(ctx.checks) if c.quantity in ref]
    checks = [(c, f, c.model_copy(update={"rtol": c.rtol * f, "atol": c.atol * f})) for c, f in factors]
    for run in rc.sub.runs:
        mine = parse_quantities(run.stdout)
        for chk, f, wide in checks:
            if chk.quantity not in mine:
                return f"{chk.quantity} not printed in run {run.repeat}"
            s, why = compare_score(mine[chk.quantity], ref[chk.quantity], wide)
            if s <= 0.0:
                scaled = f", x{f:.3g} in all with the scale at this case" if chk.scale else ""
                return (f"{chk.quantity} in run {run.repeat}: {why} (the checks' tolerances x{k:g}, "
                        f"problem.json performance.tolerance_factor{scaled})")
            if run is not rc.sub.runs[0] and chk.quantity in first:
                s, why = compare_score(mine[chk.quantity], first[chk.quantity], chk)
                if s <= 0.0:
                    return f"{chk.quantity} in run {run.repeat} differs from the program's first run: {why}"
    return ""


def _row(rc: RankCount, thresholds: tuple[float, float, float, float]) -> dict[str, Any]:
    ratio = rc.ratio
    if rc.has_par:
        par = {"par_median_s": round(rc.par.median, 6), "par_ratio": round(rc.par_ratio, 4),
               "par_noise": round(rc.par_noise, 4), "par_allowance": round(rc.par_allowance, 4),
               "par_times_s": [round(t, 6) for t in rc.par.times],
               "score": round(par_score(rc.par_ratio, rc.par_allowance), 4)}
    else:
        par = {"score": round(1.0 if rc.within_noise else time_score(ratio, thresholds), 4)}
    return {"ranks": rc.ranks, "pairs": len(rc.sub.times), "submission_median_s": round(rc.sub.median, 6),
            "reference_median_s": round(rc.ref.median, 6), "ratio": round(ratio, 4), "noise": round(rc.noise, 4),
            "within_noise": rc.within_noise, **par,
            "submission_times_s": [round(t, 6) for t in rc.sub.times],
            "reference_times_s": [round(t, 6) for t in rc.ref.times], "source": rc.source, "cpus": rc.cpus,
            "cpu_wait_share": round(rc.wait_share(), 3), "oversubscribed": rc.oversubscribed,
            "left_out": rc.left_out}


@register
class ExecutionTime(Evaluator):
    name = "execution_time"
    stage = "metric"
    category = "performance"
    order = 20

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        if ctx.options.get("time_metric") == "absolute":
            return self.absolute(ctx)
        perf = ctx.problem.performance
        # a petsc4py program's launcher time is not the C reference's and par's (performance_case)
        counts = rank_counts(ctx.record, ctx.contended, ctx.reference if ctx.language != "c" else None)
        if perf is not None and perf.reference_is_par:  # the reference is the expert's choice: it is par
            for rc in counts:
                if not rc.has_par:
                    rc.par = rc.ref
        if perf is None or not counts:
            why = (ctx.record.extra.get("perf", "") if ctx.record else "") or "no performance case in the record"
            return self.fallback(ctx, why)
        failed = [rc for rc in counts if rc.failed]
        if failed:
            return self.result(0.0, f"{failed[0].failed} at {failed[0].ranks} ranks",
                               evidence={"performance": [{"ranks": rc.ranks, "failed": rc.failed} for rc in counts]})
        wrong = [(rc, why) for rc in counts if (why := answers_differ(rc, ctx))]
        if wrong:
            rc, why = wrong[0]
            return self.result(0.0, f"performance case at {rc.ranks} ranks: answers differ from the reference's "
                                    f"({why})", evidence={"performance": [_row(x, perf.thresholds) for x in counts]})
        rows = [_row(rc, perf.thresholds) for rc in counts if rc.sub.times and rc.ref.times]
        if not rows:
            return self.unscored("the performance case has no clean pair of runs (the reference's failed?)")
        score = sum(r["score"] for r in rows) / len(rows)
        confidence, notes = self.confidence(counts, rows)
        worst = min(rows, key=lambda r: r["score"])
        if "par_ratio" in worst:
            rationale = (f"{worst['par_ratio']:.2f} x par's time at {worst['ranks']} ranks "
                         f"({worst['submission_median_s']:.3f} s vs {worst['par_median_s']:.3f} s, median of "
                         f"{worst['pairs']} interleaved rounds, noise +-{100 * worst['par_noise']:.0f}%, "
                         f"allowance {100 * worst['par_allowance']:.0f}%"
                         + (": at par" if worst["score"] == 1.0 else "")
                         + f"; {worst['ratio']:.2f} x the reference's time; score sqrt((1 + allowance) / ratio))")
        else:
            rationale = (f"{worst['ratio']:.2f} x the reference's time at {worst['ranks']} ranks "
                         f"({worst['submission_median_s']:.3f} s vs {worst['reference_median_s']:.3f} s, median of "
                         f"{worst['pairs']} interleaved pairs, noise +-{100 * worst['noise']:.0f}%"
                         + ((": faster" if worst["ratio"] < 1 else ": within it, counted as equal")
                            if worst["within_noise"] else "")
                         + f"; thresholds {', '.join(f'{x:g}' for x in perf.thresholds)} x)")
        if notes:
            rationale += "; " + "; ".join(notes)
        evidence: dict[str, Any] = {"performance": rows, "thresholds": list(perf.thresholds)}
        if any("par_ratio" in r for r in rows):
            evidence["against"] = "par"
        return self.result(score, rationale, confidence=confidence, evidence=evidence)

    def confidence(self, counts: list[RankCount], rows: list[dict]) -> tuple[float, list[str]]:
        confidence, notes = 1.0, []
        left = [x for rc in counts for x in rc.left_out]
        if left:
            confidence = 0.9
            notes.append(f"{len(left)} contended pair(s) left out ({left[0]})")
        kept = [rc for rc in counts if any(r.kind == "perf" for r in rc.sub.runs) and not rc.left_out]
        if any(len(rc.sub.times) < 3 for rc in kept):
            confidence = min(confidence, 0.6)
            notes.append("fewer than 3 clean pairs")
        noisy = [rc for rc in counts if rc.has_par and rc.par_noise > NOISE_CAP]
        if noisy:
            confidence = min(confidence, 0.7)
            notes.append(f"still undecided after {len(noisy[0].sub.times)} rounds: the repeats spread "
                         f"+-{100 * noisy[0].par_noise:.0f}%, above the {100 * NOISE_CAP:.0f}% cap")
        loaded = max(r["cpu_wait_share"] for r in rows)
        if loaded > LOADED_WAIT_SHARE:
            confidence = min(confidence, 0.7)
            notes.append(f"loaded machine: ranks waited {100 * loaded:.0f}% of their time for a CPU")
        if any(r["oversubscribed"] for r in rows):
            confidence = min(confidence, 0.6)
            notes.append("more ranks than cores")
        if any(r["source"] == "cpu" for r in rows):
            notes.append("timed by the runs' CPU time (the wall clock measured the load)")
        elif any(r["source"] != "log_view" for r in rows):
            confidence = min(confidence, 0.8)
            notes.append("times from wall clock minus launcher start-up (PETSc's -log_view time missing or "
                         "far below it)")
        return confidence, notes

    def fallback(self, ctx: EvalContext, why: str) -> EvalResult:
        """Without a performance case: the ordinary timings against the reference's, per case
        and rank count (separate jobs, tiny cases: low confidence)."""
        mine = {(t.case, t.ranks): t.exec_s for t in (ctx.record.timings if ctx.record else [])}
        ref = {(t.case, t.ranks): t.exec_s for t in (ctx.reference.timings if ctx.reference else [])}
        both = [(k, mine[k] / ref[k]) for k in mine if k in ref and ref[k] > 0]
        if not both:
            return self.unscored(f"{why}; no timings to compare with the reference's")
        th = ctx.problem.performance.thresholds if ctx.problem.performance else (1.25, 2.0, 4.0, 8.0)
        score = sum(time_score(r, th) for _, r in both) / len(both)
        (case, ranks), worst = max(both, key=lambda x: x[1])
        return self.result(score, f"{why}: ordinary cases against the reference's (separate jobs); slowest "
                                  f"{worst:.2f} x at case {case}, {ranks} ranks", confidence=0.5,
                           evidence={"ratios": [{"case": c, "ranks": r, "ratio": round(x, 4)} for (c, r), x in both]})

    def absolute(self, ctx: EvalContext) -> EvalResult:
        """The paper's metric: every case's time against absolute thresholds in seconds."""
        timings = ctx.record.timings if ctx.record else []
        if not timings:
            return self.unscored("no timed runs")
        differ = disagreements(ctx.record, ctx.checks)
        if differ:  # the timed runs are not the program whose answers were checked
            return self.result(0.0, f"answers differ between runs, so the timed runs measure another program: "
                                    f"{differ[0]}", evidence={"answers_differ": differ[:20]})
        th = ctx.problem.runtime_thresholds_s
        rows: list[dict[str, Any]] = [{"case": t.case, "ranks": t.ranks, "exec_s": round(t.exec_s, 6),
                 "score": round(time_score(t.exec_s, th), 4), "source": t.exec_source} for t in timings]
        slowest = max(rows, key=lambda r: r["exec_s"])
        return self.result(sum(r["score"] for r in rows) / len(rows),
                           f"absolute thresholds ({', '.join(f'{x:g}' for x in th)} s): slowest case "
                           f"{slowest['case']} at {slowest['ranks']} ranks took {slowest['exec_s']:.3f} s",
                           evidence={"timings": rows, "metric": "absolute"})
