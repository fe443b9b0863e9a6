"""Quality: is the program written for distributed memory?

From the source (see petsc_conventions.check_parallel): distributed objects on
PETSC_COMM_WORLD rather than MPI_COMM_WORLD, or PETSC_COMM_SELF in a program the
problem runs on several ranks; values set by the rows each rank owns
(VecGetOwnershipRange, DMDAGetCorners ...) rather than by one rank or blindly;
no communicating call on a distributed object inside an `if (rank == 0)`.
From the runs: for every case the problem runs at several rank counts, the
printed quantities agree between the fewest ranks and each larger count,
within the tolerance the hidden checks use for that quantity (rtol 1e-6 where
no check names it). The run evidence weighs double: it is what actually
happened; the source checks are what will happen at scale."""

from __future__ import annotations

import math

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register
from hpcbench.evaluators.metrics.numerical_accuracy import outputs
from hpcbench.evaluators.petsc_conventions import check_parallel
from hpcbench.evaluators.pysource import parallel_facts
from hpcbench.problem import Checks, CompareCheck, applies_to

DEFAULT_RTOL, DEFAULT_ATOL = 1e-6, 1e-12
RUN_WEIGHT = 2.0


def loosest_tolerance(checks: Checks, quantity: str, case: str) -> tuple[float, float, str]:
    """(rtol, atol, where from): the loosest compare check on this quantity and case."""
    found = [c for c in checks.checks if isinstance(c, CompareCheck) and c.quantity == quantity
             and applies_to(c, case)]
    if not found:
        return DEFAULT_RTOL, DEFAULT_ATOL, "default"
    c = max(found, key=lambda c: (c.rtol, c.atol))
    return c.rtol, c.atol, "hidden checks"


def rank_invariance(ctx: EvalContext) -> list[dict]:
    """One comparison per (case, larger rank count, quantity)."""
    got = outputs(ctx.record)
    out: list[dict] = []
    for case in ctx.problem.cases:
        ranks = sorted(set(case.ranks))
        if len(ranks) < 2:
            continue
        base_r = ranks[0]
        base = got.get((case.name, base_r))
        for r in ranks[1:]:
            other = got.get((case.name, r))
            if base is None or other is None:
                missing = base_r if base is None else r
                out.append({"case": case.name, "ranks": [base_r, r], "quantity": "*", "agree": False,
                            "why": f"no successful run at {missing} ranks"})
                continue
            for q in sorted(set(base) | set(other)):
                a, b = base.get(q), other.get(q)
                rtol, atol, src = loosest_tolerance(ctx.checks, q, case.name)
                row = {"case": case.name, "ranks": [base_r, r], "quantity": q, "rtol": rtol, "atol": atol,
                       "tolerance_from": src}
                if a is None or b is None or len(a) != len(b):
                    row.update(agree=False, why="printed at one rank count only or with a different length")
                else:
                    worst = max((abs(x - y) / (atol + rtol * abs(x)) if math.isfinite(x - y) else math.inf
                                 for x, y in zip(a, b)), default=0.0)
                    row.update(agree=worst <= 1.0, worst_of_tolerance=round(worst, 4) if math.isfinite(worst)
                               else "inf")
                out.append(row)
    return out


def _source_parts(multi: bool, comm: list, setters: list, owners: list, guarded: list, rank_guards: int,
                  parts: dict[str, float], notes: list[str]) -> None:
    """From the source: communicators fitting the rank count, values set by ownership range,
    no communicating call inside a rank branch."""
    if comm:
        bad = sum(1.0 if u["verdict"] == "self_in_parallel" else 0.3 if u["verdict"] == "mpi_comm_world"
                  else 0.0 for u in comm)
        parts["communicators"] = 1.0 - bad / len(comm)
        wrong = [u for u in comm if u["verdict"] != "ok"]
        notes.append(f"{len(comm) - len(wrong)} of {len(comm)} objects on a fitting communicator"
                     + (f" ({wrong[0]['call']} on {wrong[0]['comm']} at line {wrong[0]['line']})" if wrong
                        else ""))
    if multi and setters:
        if owners:
            parts["ownership"] = 1.0
            notes.append(f"sets values by ownership range ({owners[0]['call']})")
        elif all(s["guarded"] for s in setters):
            parts["ownership"] = 0.5
            notes.append("one rank sets every value (centralised assembly)")
        else:
            parts["ownership"] = 0.0
            notes.append("sets values without any ownership-range query")
    if guarded:
        parts["rank_branches"] = 0.0
        g = guarded[0]
        notes.append(f"{len(guarded)} communicating call(s) inside a rank branch, e.g. {g['call']} at line "
                     f"{g['line']}")
    elif rank_guards:
        parts["rank_branches"] = 1.0
        notes.append("rank branches touch only sequential data")


def _invariance_part(comparisons: list[dict], parts: dict[str, float], notes: list[str]) -> None:
    """From the runs: the same answer at 1 and N ranks."""
    if comparisons:
        agree = sum(1 for c in comparisons if c["agree"])
        parts["same_answer_1_vs_n"] = agree / len(comparisons)
        bad = next((c for c in comparisons if not c["agree"]), None)
        notes.append(f"{agree} of {len(comparisons)} quantities agree across rank counts"
                     + (f" ({bad['quantity']} in case {bad['case']} at {bad['ranks']} ranks: "
                        f"{bad.get('why') or str(bad.get('worst_of_tolerance')) + 'x the tolerance'})"
                        if bad else ""))


@register
class ParallelAwareness(Evaluator):
    name = "parallel_awareness"
    stage = "quality"
    category = "library"
    order = 20

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        multi = any(max(c.ranks) > 1 for c in ctx.problem.cases)
        if ctx.language == "python":
            return self._python(ctx, multi)
        srcs = ctx.c_sources()
        if not srcs:
            return self.unscored("no C sources to parse")
        reports = [check_parallel(n, s, multi) for n, s in sorted(srcs.items())]
        comm = [u for r in reports for u in r.comm_uses]
        setters = [s for r in reports for s in r.setters]
        owners = [q for r in reports for q in r.ownership_queries]
        guarded = [g for r in reports for g in r.guarded_collectives]
        findings = [f for r in reports for f in r.findings]
        parts: dict[str, float] = {}
        notes: list[str] = []
        _source_parts(multi, comm, setters, owners, guarded, sum(r.rank_guards for r in reports), parts, notes)
        comparisons = rank_invariance(ctx) if ctx.record else []
        _invariance_part(comparisons, parts, notes)
        evidence = {"multi_rank_problem": multi, "components": parts, "communicators": comm,
                    "setters": setters[:100], "ownership_queries": owners[:100], "guarded_collectives": guarded,
                    "rank_comparisons": comparisons, "findings": [str(f) for f in findings][:200],
                    "sequential_objects": sorted({v for r in reports for v in r.sequential_vars}),
                    "distributed_objects": sorted({v for r in reports for v in r.distributed_vars})}
        if not parts:
            return self.unscored("nothing parallel to judge: no PETSc object created on a named communicator, "
                                 "no rank branch, and no case run at several rank counts", evidence=evidence)
        score = _weighted(parts, evidence)
        confidence = 0.8 if any(r.parse_error for r in reports) else 1.0
        if not comparisons and multi:
            confidence = min(confidence, 0.8)  # source evidence only, no run compared
        return self.result(score, "; ".join(notes), confidence=confidence, evidence=evidence)

    def _python(self, ctx: EvalContext, multi: bool) -> EvalResult:
        """The same parts for a petsc4py program: communicators passed as comm=, values set by
        ownership range, output through PETSc.Sys.Print (a bare print() runs on every rank)."""
        reps = [parallel_facts(s, multi) for _, s in sorted(ctx.py_sources().items())]
        comm = [u for r in reps for u in r.comm_uses]
        owners = [{"call": o} for r in reps for o in r.ownership]
        setters = [{"guarded": False}] * sum(r.writes for r in reps)
        parts: dict[str, float] = {}
        notes: list[str] = []
        _source_parts(multi, comm, setters, owners, [], 0, parts, notes)
        bare = [line for r in reps for line in r.bare_prints]
        if multi and (bare or any(r.guarded_prints for r in reps)):
            parts["rank_branches"] = 0.0 if bare else 1.0
            notes.append(f"print() on every rank at line {bare[0]} (PETSc.Sys.Print prints once)" if bare
                         else "print() only under a rank test")
        comparisons = rank_invariance(ctx) if ctx.record else []
        _invariance_part(comparisons, parts, notes)
        evidence = {"language": "python", "multi_rank_problem": multi, "components": parts, "communicators": comm,
                    "ownership_queries": owners[:100], "bare_prints": bare[:20], "rank_comparisons": comparisons}
        if not parts:
            return self.unscored("nothing parallel to judge", evidence=evidence)
        # as the C path: a source the parser could not read, or a multi-rank problem with no
        # run compared at 1 and N ranks, leaves the source's evidence alone
        confidence = 0.8 if any(r.parse_error for r in reps) else 1.0
        if not comparisons and multi:
            confidence = min(confidence, 0.8)  # source evidence only, no run compared
        return self.result(_weighted(parts, evidence), "; ".join(notes), confidence=confidence, evidence=evidence)


def _weighted(parts: dict[str, float], evidence: dict) -> float:
    """The parts' mean, the runs' agreement weighing RUN_WEIGHT (the weights go into the evidence)."""
    weights = {k: RUN_WEIGHT if k == "same_answer_1_vs_n" else 1.0 for k in parts}
    evidence["weights"] = weights
    return sum(weights[k] * v for k, v in parts.items()) / sum(weights.values())
