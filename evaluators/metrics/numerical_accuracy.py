"""Metric: the hidden checks of the problem applied to what the program printed.

Compare checks give full marks inside tolerance and decay linearly to zero at
`fail_factor` times the tolerance; sanity checks test physics (conservation,
divergence, ranges); refinement checks need successive differences to shrink,
and to exist: a quantity that does not change with the grid did not converge.

A check's score is the mean over its published cases of each case's worst rank count: the
answer must be right at every rank count, so a program right on one rank and
wrong on two is wrong, not half right.

Held-out cases (drawn at planning, hpcbench/plan/held_out.py) are judged by the checks
that name them, against the reference's run at the same drawn arguments, and weigh
`held_out_share` of the score: a program that prints the published cases' answers
without solving fails them. Over the held-out cases a check takes the worst case, not the
mean: they are draws from one range, stratified so that both ends and the interior are drawn
(issue 35), and a program wrong at one end of a range is wrong, not two-thirds right.

A check failed outright (a compare check at `fail_factor` times its tolerance or farther, a
sanity check broken, a refinement that does not converge, a quantity not printed) at any case
and rank count caps the score at FAILED_CAP, below validate-checks' kill line (0.5), whatever
the other checks give: a required output wrong by orders of magnitude is a wrong program, not
one that lost its check's share of the weights (an outside hidden set: an l2 norm without its
sqrt(h) factor, 1.3e4 times the tolerance off, kept 0.85). So does a task option the program never
reads (PETSc's -options_left names it at a case that passes it): every task says the program
must accept its options, and one that ignores an option the answer does not depend on (rosenbrock's
-alpha) printed right answers everywhere.

A compare check with a `scale` (CompareCheck.scale) multiplies its tolerance at each case by a
factor of one option's value in the case's arguments (EvalContext.case_args)."""

from __future__ import annotations

import math

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register
from hpcbench.evaluators.output_contract import parse_quantities
from hpcbench.evaluators.residual_check import residual_scores, solver_records
from hpcbench.evaluators.run_agreement import disagreements
from hpcbench.jobs.records import JobResult
from hpcbench.problem import CompareCheck, RefinementCheck, ResidualCheck, SanityCheck, applies_to, is_held_out

FAILED_CAP = 0.4


def outputs(record: JobResult | None) -> dict[tuple[str, int], dict[str, list[float]]]:
    """Quantities printed by each successful instrumented run, by (case, ranks)."""
    if record is None:
        return {}
    return {(r.case, r.ranks): parse_quantities(r.stdout) for r in record.runs
            if r.kind == "instrumented" and r.exit_code == 0}


def compare_score(value: list[float], ref: list[float], chk: CompareCheck, factor: float = 1.0
                  ) -> tuple[float, str]:
    """`factor`: the check's tolerance multiplier at this case (CompareCheck.scale)."""
    if len(value) != len(ref):
        return 0.0, f"{len(value)} values where {len(ref)} are expected"
    worst, where = 0.0, 0
    for i, (x, r) in enumerate(zip(value, ref, strict=True)):
        if not math.isfinite(x):
            return 0.0, f"value {i} is {x}"
        ratio = abs(x - r) / (factor * (chk.atol + chk.rtol * abs(r)))
        if ratio > worst:
            worst, where = ratio, i
    scaled = f" (the tolerance x{factor:.3g} at this case)" if factor != 1.0 else ""
    if worst <= 1.0:
        return 1.0, f"within tolerance (worst {worst:.2g} of tol){scaled}"
    score = max(0.0, (chk.fail_factor - worst) / (chk.fail_factor - 1.0))
    return score, f"entry {where}: {value[where]:.6g} vs {ref[where]:.6g} is {worst:.3g}x the tolerance{scaled}"


def case_arguments(ctx: EvalContext) -> dict[str, list[str]]:
    """Each case's arguments: problem.json's published cases, and what the context adds (the
    held-out draw campaign.h5 keeps)."""
    return {**{c.name: list(c.args) for c in ctx.problem.cases}, **ctx.case_args}


def unread_options(ctx: EvalContext, args: dict[str, list[str]]) -> list[str]:
    """The task's own options (those its cases pass, `args`) that PETSc reported unused
    (-options_left) in a successful instrumented run given them: the program never read them, so
    it solved another problem than the one asked wherever the option is not at its default
    ("<option> at case C")."""
    out = []
    for r in ctx.runs("instrumented"):
        if r.exit_code != 0:  # a failed run is judged by the checks (nothing it printed counts)
            continue
        left = {entry.split()[0] for entry in r.options_left if entry}
        out += [f"{opt} at case {r.case}" for opt in args.get(r.case, [])[::2] if opt in left]
    return sorted(set(out))


def case_factor(chk: CompareCheck, args: list[str] | None) -> float:
    """`chk`'s tolerance multiplier at a case with these arguments (1.0 without a scale)."""
    return chk.scale.factor(args) if chk.scale else 1.0


def sanity_score(value: list[float], chk: SanityCheck) -> tuple[float, str]:
    if not value or not all(math.isfinite(v) for v in value):
        return 0.0, "no finite values"
    if chk.test == "sum_equals":
        s = sum(value)
        ok = abs(s - chk.target) <= chk.atol
        return float(ok), f"sum {s:.12g} vs {chk.target:g} (atol {chk.atol:g})"
    if chk.test == "max_abs_below":
        m = max(abs(v) for v in value)
        return float(m <= chk.target), f"max |value| {m:.3g} vs bound {chk.target:g}"
    if chk.test == "all_within":
        lo = -math.inf if chk.lo is None else chk.lo
        hi = math.inf if chk.hi is None else chk.hi
        bad = [v for v in value if not (lo - chk.atol <= v <= hi + chk.atol)]
        return float(not bad), f"{len(bad)} of {len(value)} outside [{lo:g}, {hi:g}]"
    if chk.test == "all_positive":
        bad = [v for v in value if v <= 0]
        return float(not bad), f"{len(bad)} of {len(value)} not positive"
    bad = [v for v in value if v < -chk.atol]
    return float(not bad), f"{len(bad)} of {len(value)} negative beyond {chk.atol:g}"


def _norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


# A difference below this fraction of the values is round-off: the "refined" results are the same.
SAME_BELOW = 1e-9


def refinement_score(seq: list[list[float]], chk: RefinementCheck) -> tuple[float, str]:
    """Successive differences must be real (above round-off) and shrink by `min_ratio` each."""
    diffs = [_norm([a - b for a, b in zip(x, y, strict=False)]) for x, y in zip(seq, seq[1:])]
    shown = f"successive differences {[f'{d:.3g}' for d in diffs]}"
    if any(len(x) != len(seq[0]) for x in seq):
        return 0.0, f"different numbers of values across cases ({[len(x) for x in seq]})"
    scale = max(_norm(x) for x in seq)
    if not all(math.isfinite(d) for d in diffs):
        return 0.0, f"{shown}: not finite"
    if any(d <= SAME_BELOW * scale for d in diffs):
        return 0.0, f"{shown}: the result does not change under refinement (is the grid size used?)"
    ok = all(d1 >= chk.min_ratio * d2 for d1, d2 in zip(diffs, diffs[1:]))
    return float(ok), shown + ("" if ok else f": they do not shrink by {chk.min_ratio}x")


def _refinement_scores(chk: RefinementCheck, label: str, mine: dict, details: list[dict]) -> list[float]:
    """A refinement check: the quantity over the cases in order (one score)."""
    seq = []
    for case in chk.cases:
        vals = [v for (c, _), q in sorted(mine.items()) if c == case for v in [q.get(chk.quantity)]]
        seq.append(vals[0] if vals and vals[0] is not None else None)
    present = [s for s in seq if s is not None]
    if len(present) < len(seq):
        details.append({"check": label, "score": 0.0, "why": f"'{chk.quantity}' missing in a case"})
        return [0.0]
    s, why = refinement_score(present, chk)
    details.append({"check": label, "score": s, "why": why})
    return [s]


def _case_scores(chk, label: str, mine: dict, ref: dict, details: list[dict], unscored: list[str],
                 case_args: dict[str, list[str]]) -> dict[str, float]:
    """A sanity or compare check: per case the worst score over its rank counts."""
    worst: dict[str, float] = {}
    for (case, ranks), q in sorted(mine.items()):
        if not applies_to(chk, case):
            continue
        where = f"{'held-out ' if is_held_out(case) else ''}case {case} at {ranks} ranks"
        value = q.get(chk.quantity)
        if value is None:
            s, why = 0.0, f"did not print '{chk.quantity}:'"
        elif isinstance(chk, SanityCheck):
            s, why = sanity_score(value, chk)
        else:
            if chk.reference.source == "literal":
                target = chk.reference.value
            else:
                got = [rq.get(chk.quantity) for (c, _), rq in sorted(ref.items()) if c == case]
                target = next((g for g in got if g is not None), None)
            if target is None:
                unscored.append(f"{label} ({where}): no reference value in this campaign")
                continue
            s, why = compare_score(value, target, chk, case_factor(chk, case_args.get(case)))
        worst[case] = min(s, worst.get(case, 1.0))
        details.append({"check": label, "case": case, "ranks": ranks, "score": round(s, 4), "why": why,
                        **({"held_out": True} if is_held_out(case) else {})})
    return worst


@register
class NumericalAccuracy(Evaluator):
    name = "numerical_accuracy"
    stage = "metric"
    category = "correctness"
    order = 10

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        mine = outputs(ctx.record)
        if not mine:
            return self.unscored("no successful run to check")
        ref = outputs(ctx.reference)
        details: list[dict] = []
        unscored: list[str] = []
        args = case_arguments(ctx)
        parts = _parts(ctx.checks.checks, (mine, solver_records(ctx.record)), ref, details, unscored, args)
        if parts[False][1] + parts[True][1] == 0:
            return self.unscored("; ".join(unscored) or "no check applied", evidence={"details": details})
        score, share = _combined(parts, ctx.checks.held_out_share)
        failed = [d for d in details if d["score"] < 1.0]
        rationale = (f"{len(details) - len(failed)} of {len(details)} checks passed"
                     + (f"; worst: {_where(failed[0])}{failed[0]['check']}: {failed[0]['why']}" if failed else ""))
        held_out = [d for d in details if d.get("held_out")]
        if held_out:
            rationale += (f"; held-out cases (drawn at planning, {share:.0%} of the score): "
                          f"{sum(d['score'] >= 1.0 for d in held_out)} of {len(held_out)} checks passed")
        if unscored:
            rationale += f"; {len(unscored)} checks could not be judged ({unscored[0]})"
        unread = unread_options(ctx, args)
        if unread and score > FAILED_CAP:  # the task says the program must accept these options
            score = FAILED_CAP
            rationale += (f"; capped at {FAILED_CAP}: the program never read {unread[0]}"
                          f"{f' (and {len(unread) - 1} more)' if len(unread) > 1 else ''} (PETSc's -options_left)")
        outright = [d for d in details if d["score"] <= 0.0]
        if outright and score > FAILED_CAP:
            score = FAILED_CAP
            first = outright[0]
            at = f" at {first['ranks']} ranks" if "ranks" in first else ""
            rationale += (f"; capped at {FAILED_CAP}: {len(outright)} check(s) failed outright, first "
                          f"{_where(first)}{first['check']}{at}")
        confidence = 1.0 if not unscored else 0.7
        differ = disagreements(ctx.record, ctx.checks)  # every run is checked, not only this one
        if differ:
            return self.result(0.0, f"answers differ between runs: {differ[0]}", evidence={
                "details": details, "unscored": unscored, "answers_differ": differ[:20]})
        # every check passed: what a tier requires (hpcbench.score.scoring.checks_passed reads the score)
        return self.result(score, rationale, confidence=confidence,
                           evidence={"details": details, "unscored": unscored, "held_out_share": share,
                                     "all_passed": not failed and not unread,
                                     **({"unread_options": unread} if unread else {})})


def _parts(checks: list, runs: tuple[dict, dict], ref: dict, details: list[dict], unscored: list[str],
           case_args: dict[str, list[str]]) -> dict[bool, list[float]]:
    """Held out? -> [weighted sum of check scores, sum of weights]: a check's published score
    the mean over its cases, its held-out score the worst of the drawn cases. `runs`: what the
    program printed and what its solvers recorded, by (case, ranks)."""
    mine, ksp = runs
    parts = {False: [0.0, 0.0], True: [0.0, 0.0]}
    for chk in checks:
        label = getattr(chk, "name", "") or f"{chk.kind}:{chk.quantity}"
        if isinstance(chk, ResidualCheck):
            by_case = residual_scores(chk, label, ksp, details, unscored)
        elif isinstance(chk, RefinementCheck):
            by_case = {"": _refinement_scores(chk, label, mine, details)[0]}
        else:
            by_case = _case_scores(chk, label, mine, ref, details, unscored, case_args)
        for held in (False, True):
            scores = [s for case, s in by_case.items() if is_held_out(case) == held]
            if scores:
                parts[held][0] += chk.weight * (min(scores) if held else sum(scores) / len(scores))
                parts[held][1] += chk.weight
    return parts


def _combined(parts: dict[bool, list[float]], share: float) -> tuple[float, float]:
    """(score, the held-out share used): the published part, lowered by `share` times how far
    the held-out part falls below it. Held-out cases test that the published answers were
    computed; they never make up for a wrong published answer: a program right only at the
    published arguments keeps 1 - share (below 0.5), and one wrong at a published case keeps
    the published part's score, as if no case were held out."""
    (pub, pub_w), (held, held_w) = parts[False], parts[True]
    if not held_w:
        return pub / pub_w, 0.0
    if not pub_w:
        return held / held_w, 1.0
    published, hidden = pub / pub_w, held / held_w
    return (1 - share) * published + share * min(hidden, published), share


def _where(detail: dict) -> str:
    return f"held-out case {detail['case']}: " if detail.get("held_out") else ""
