"""Every run of a case is the same program doing the same work: what PETSc counted in each
(jobs/log_summary.py: objects created and destroyed by class, calls by event, flops) must be
what it counted in the instrumented run of that case and rank count. The memory-safety gate
fails a program whose runs differ ("behaves differently when observed", docs/security.md).

Why: valgrind and PETSc's debugging allocator cannot be hidden from the program (malloc's
answers, CPU time), so a program can leak, or create and free differently, only where it is
not watched, with answers that stay the same (evaluators/run_agreement.py sees nothing). The
timing runs look like any unwatched run; comparing the counts of all three kinds ties the
watched runs' verdicts to what the program does when it is not watched.

The rule, from the twelve references' runs (instrumented, timing, valgrind and performance
runs at 1, 2 and 3 ranks: every count equal in every run; docs/security.md has the figures):

- objects left undestroyed, by class (created - destroyed): equal in every run, at any rank
  count. Round-off can change how often a solver iterates, never whether what it creates is
  destroyed; a program that leaks per iteration fails -malloc_dump anyway.
- at one rank on CPUs everything else equal too: objects created by class, calls of every
  event, flops. One rank repeats the same operations in the same order, under -malloc_debug
  and under valgrind alike.
- at more ranks (or with GPUs), where reductions in message arrival order can move an
  iterative solver by an iteration: the runs that made exactly the same calls of every event
  must have created the same objects; runs whose calls differ may differ in calls, creations
  and flops by up to PARALLEL_SLACK of the larger count (at least 1). One outer iteration of
  four or more stays inside it (obstacle-vi's n40 at 2 ranks a Newton iteration early, 5 not 6:
  MatMult 121 not 147, index sets 70 not 82, flops 19% fewer; the same objects undestroyed)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hpcbench.jobs.records import JobResult, LogCounts, RunResult

WATCHED_KINDS = ("instrumented", "timing", "valgrind")
PARALLEL_SLACK = 0.25
TOLERANCE_RULE = ("objects left undestroyed by class equal in every run; at one rank on CPUs objects created by "
                  "class, calls by event and flops equal too; at more ranks equal unless the calls differ, then "
                  f"within {PARALLEL_SLACK:.0%} of the larger count")


@dataclass(frozen=True)
class Difference:
    """One count that differs between a run and its case's base run (the instrumented one)."""

    case: str
    ranks: int
    run: str  # "valgrind run 0", "timing run 1"
    base: str  # "instrumented run 0"
    what: str  # "Vector objects left undestroyed", "calls of KSPSolve", "flops"
    base_value: float
    value: float
    allowed: float  # the difference the rule allows here

    def __str__(self) -> str:
        slack = f" (at most {_num(self.allowed)} apart allowed)" if self.allowed else ""
        return (f"case {self.case} at {self.ranks} rank(s): {self.what}: {_num(self.value)} in the {self.run}, "
                f"{_num(self.base_value)} in the {self.base}{slack}")

    def evidence(self) -> dict[str, Any]:
        return {"case": self.case, "ranks": self.ranks, "run": self.run, "base": self.base, "what": self.what,
                "base_value": self.base_value, "value": self.value, "allowed": self.allowed}


@dataclass
class Comparison:
    runs: int = 0  # runs compared with their base
    cases: int = 0  # (case, rank count) groups with a base and at least one run compared
    differences: list[Difference] = field(default_factory=list)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.4g}"


def _label(r: RunResult) -> str:
    return f"{r.kind} run {r.repeat}"


def _exact(r: RunResult) -> bool:
    """One rank on CPUs: every count is repeatable."""
    return r.ranks == 1 and not (r.placement is not None and r.placement.gpus)


def _slack(a: float, b: float) -> float:
    return max(1.0, math.floor(PARALLEL_SLACK * max(abs(a), abs(b))))


def _counts(c: LogCounts) -> dict[str, float]:
    """Every count but the undestroyed objects, by what the evidence calls it."""
    out: dict[str, float] = {f"{k} objects created": float(v) for k, v in c.created.items()}
    out.update({f"calls of {k}": float(v) for k, v in c.events.items()})
    if c.flops is not None:
        out["flops"] = c.flops
    return out


def _left(c: LogCounts) -> dict[str, int]:
    return {k: n - c.destroyed.get(k, 0) for k, n in c.created.items()}


def _compare(base: RunResult, run: RunResult) -> list[Difference]:
    b, r = base.log_counts, run.log_counts
    assert b is not None and r is not None
    out = []

    def differ(what: str, x: float, y: float, allowed: float) -> None:
        if abs(x - y) > allowed:
            out.append(Difference(run.case, run.ranks, _label(run), _label(base), what, x, y, allowed))

    bl, rl = _left(b), _left(r)
    for k in sorted(bl.keys() | rl.keys()):
        differ(f"{k} objects left undestroyed", bl.get(k, 0), rl.get(k, 0), 0)
    bc, rc = _counts(b), _counts(r)
    same_calls = b.events == r.events
    loose = not (_exact(base) and _exact(run)) and not same_calls
    for k in sorted(bc.keys() | rc.keys()):
        x, y = bc.get(k, 0.0), rc.get(k, 0.0)
        differ(k, x, y, _slack(x, y) if loose else 0.0)
    return out


def compare_runs(record: JobResult | None) -> Comparison:
    """Each finished instrumented, timing and valgrind run with PETSc's counts against the
    instrumented run of its case and rank count (else the first such run). Runs without
    counts (older records, or a summary that was not found whole: the instruments' check
    says which) are not compared."""
    result = Comparison()
    groups: dict[tuple[str, int], list[RunResult]] = {}
    for r in record.runs if record is not None else []:
        if r.kind in WATCHED_KINDS and r.log_counts is not None and r.exit_code == 0 and not r.timed_out:
            groups.setdefault((r.case, r.ranks), []).append(r)
    for runs in groups.values():
        base = next((r for r in runs if r.kind == "instrumented"), runs[0])
        others = [r for r in runs if r is not base]
        result.runs += len(others)
        result.cases += bool(others)
        for r in others:
            result.differences += _compare(base, r)
    return result
