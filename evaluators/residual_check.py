"""The residual reduction a task states, judged from PETSc's own record of the program's solves
(problem.ResidualCheck; the record: jobs/ksp_monitor.py, asked of every run of the problem).

Per run, the measure is what the solves reached: each solve's last residual over its first, in
the norm the solver tests convergence in (the worst solve), or, for a chain of solves that each
correct the last (Newton on a linear problem, iterative refinement), the last solve's last
residual over the largest first one, whichever is smaller. A solve from a nonzero initial guess
is measured by PETSc against ||b||, which the monitor does not show: there the relative
tolerance the solver was given (-ksp_view) counts as reached. The measure of a case is the worst
over its runs (instrumented, timing, valgrind): a program that solves loosely only where it is
not checked is caught in the runs it thought unwatched.

Measured on darcy-dmplex (n 16-64, k_in 0.003-0.3, 1 rank): the reference (CG/GAMG, rtol 1e-12)
1.3e-13..7.4e-13; valid solvers at the stated rtol 1e-10 (CG/Jacobi, GMRES/block Jacobi,
MINRES/GAMG) 2.4e-11..9.9e-11; rtol 1e-8 3.1e-9..8.5e-9; atol 1e-10 with rtol 1e-12
7.4e-13..2.8e-12 (a correct program)."""

from __future__ import annotations

import math

from hpcbench.evaluators.watched_runs import WATCHED_KINDS
from hpcbench.jobs.records import JobResult, KspSolves
from hpcbench.problem import ResidualCheck, applies_to, is_held_out

# the monitor prints 13 significant digits: a solve stopped at exactly the bound passes
ROUNDING = 1e-9


def solver_records(record: JobResult | None) -> dict[tuple[str, int], list[tuple[str, KspSolves]]]:
    """(run label, monitor record) of every finished run, by (case, ranks)."""
    out: dict[tuple[str, int], list[tuple[str, KspSolves]]] = {}
    for r in record.runs if record is not None else []:
        if r.kind in WATCHED_KINDS and r.exit_code == 0 and not r.timed_out and r.ksp is not None:
            out.setdefault((r.case, r.ranks), []).append((f"{r.kind} run {r.repeat}", r.ksp))
    return out


def run_measure(rec: KspSolves) -> tuple[float | None, str]:
    """(the residual reduction one run reached, "") or (None, why it cannot be measured)."""
    if rec.parse_error:
        return None, rec.parse_error
    if not rec.solves:
        return None, ("no solve of an unprefixed KSP was recorded (solvers with options prefixes, "
                      "or none: -ksp_monitor was not read)")
    given = rec.rtol if rec.nonzero_guess and rec.rtol is not None and math.isfinite(rec.rtol) else math.inf
    each = [min(r, given) if math.isfinite(r := s.reduction()) else given for s in rec.solves]
    if not all(math.isfinite(m) for m in each):
        return None, "a solve monitored no residual norm (norm type none?)"
    firsts = [s.first for s in rec.solves if math.isfinite(s.first) and s.first > 0]
    last = rec.solves[-1].last
    chain = last / max(firsts) if firsts and math.isfinite(last) and not rec.more else math.inf
    return min(max(each), chain), ""


def residual_scores(chk: ResidualCheck, label: str, ksp: dict, details: list[dict],
                    unscored: list[str]) -> dict[str, float]:
    """Per case the worst over its rank counts and runs: 1 at or below the bound, 0 above."""
    worst: dict[str, float] = {}
    for (case, ranks), recs in sorted(ksp.items()):
        if not applies_to(chk, case):
            continue
        where = f"{'held-out ' if is_held_out(case) else ''}case {case} at {ranks} ranks"
        measures = [(run_measure(rec), run) for run, rec in recs]
        measured = [(m, run) for (m, _), run in measures if m is not None]
        if not measured:
            unscored.append(f"{label} ({where}): {measures[0][0][1]}")
            continue
        m, run = max(measured)
        s = float(m <= chk.bound * (1 + ROUNDING))
        why = f"residual reduced by {m:.3g} in the {run} ({'within' if s else 'above'} the stated {chk.bound:g})"
        worst[case] = min(s, worst.get(case, 1.0))
        details.append({"check": label, "case": case, "ranks": ranks, "score": s, "why": why,
                        **({"held_out": True} if is_held_out(case) else {})})
    return worst
