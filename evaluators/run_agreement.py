"""Every run of a job is the same program: the answers each timing and valgrind run printed
must be those of the instrumented run (the one the checks score) of the same case and rank
count. A program right and slow where it is checked and quick and wrong elsewhere would
otherwise have its wrong runs timed (docs/security.md).

"The same" is the problem's own idea of it: within the loosest compare check on the quantity
(runs differ by round-off: reductions in message arrival order, a solver stopping one
iteration apart), else within DEFAULT_RTOL, as the sweeps' agreement (hpcbench/sweep), or a
thousandth of the bound a sanity check puts on it (BOUND_FRACTION)."""

from __future__ import annotations

import math

from hpcbench.evaluators.output_contract import parse_quantities
from hpcbench.jobs.records import JobResult
from hpcbench.problem import Checks, CompareCheck, ResidualCheck, SanityCheck

DEFAULT_RTOL = 1e-6
COMPARED_KINDS = ("timing", "valgrind")


# A quantity only bounded by a sanity check (rosenbrock's objective below 1e-7, cavity's divergence
# below 1e-6) is round-off at its minimum, whose digits differ between runs: measured, the Python
# rosenbrock reference printed objective 2.19e-21 in its instrumented run and 2.10e-21 under
# valgrind, "answers differ" at 1e-6 relative (hpcbench run, 2026-12-08). Such runs agree within a
# thousandth of the bound as well.
BOUND_FRACTION = 1e-3


def agreement_tolerance(checks: Checks, quantity: str) -> tuple[float, float]:
    """(rtol, atol) two runs of one program may differ by on `quantity`."""
    found = [c for c in checks.checks if isinstance(c, CompareCheck) and c.quantity == quantity]
    if not found:
        return DEFAULT_RTOL, BOUND_FRACTION * max((_bound(c) for c in checks.checks
                                                   if isinstance(c, SanityCheck) and c.quantity == quantity),
                                                  default=0.0)
    loosest = max(found, key=lambda c: (c.rtol, c.atol))
    return loosest.rtol, loosest.atol


def _bound(c: SanityCheck) -> float:
    """The scale of the values a sanity check allows (0: none that says one)."""
    if c.test == "max_abs_below":
        return abs(c.target)
    if c.test == "all_within" and c.lo is not None and c.hi is not None:
        return max(abs(c.lo), abs(c.hi))
    return 0.0


def _differ(got: list[float], base: list[float], rtol: float, atol: float) -> str:
    if len(got) != len(base):
        return f"{len(got)} values where the checked run printed {len(base)}"
    for i, (x, y) in enumerate(zip(got, base, strict=True)):
        if not math.isfinite(x) or abs(x - y) > atol + rtol * abs(y):
            return f"entry {i}: {x:.6g} where the checked run printed {y:.6g}"
    return ""


def disagreements(record: JobResult | None, checks: Checks) -> list[str]:
    """One line per timing or valgrind run whose answers differ from its instrumented run's."""
    if record is None:
        return []
    base = {(r.case, r.ranks): parse_quantities(r.stdout) for r in record.runs
            if r.kind == "instrumented" and r.exit_code == 0 and not r.timed_out}
    quantities = {c.quantity for c in checks.checks if not isinstance(c, ResidualCheck)}
    out = []
    for r in record.runs:
        ref = base.get((r.case, r.ranks))
        if r.kind not in COMPARED_KINDS or r.exit_code != 0 or r.timed_out or ref is None:
            continue
        got = parse_quantities(r.stdout)
        for q in sorted(quantities & ref.keys()):
            why = f"'{q}' not printed" if q not in got else _differ(got[q], ref[q], *agreement_tolerance(checks, q))
            if why:
                out.append(f"{r.kind} run {r.repeat} of case {r.case} at {r.ranks} ranks: {q}: {why}")
                break
    return out
