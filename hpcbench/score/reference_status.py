"""Whether a problem's reference run can anchor its scoring.

Every solvable problem is scored against its reference run in the same campaign
(`reference_run` checks compare with what it printed; it also shows that the
environment can run the problem at all). A problem whose reference record is missing,
failed, or printed none of the values its checks need is "no reference: not scored"
for every submission: scoring the rest of the checks would rank agents on a part of
the problem and hide that the campaign is broken."""

from __future__ import annotations

from hpcbench.evaluators.metrics.numerical_accuracy import outputs
from hpcbench.jobs.affinity import STARVED_SHARE, wait_share
from hpcbench.jobs.records import JobResult
from hpcbench.problem import Checks, CompareCheck, Problem, applies_to, is_held_out

NOT_SCORED = "no reference: not scored"


def reference_problem(problem: Problem, checks: Checks, record: JobResult | None) -> str:
    """Why the reference run cannot anchor this problem's scoring ("" when it can)."""
    if record is None:
        return "the reference run is missing (no record)"
    if record.status != "done":
        return f"the reference job ended {record.status}" + (f": {record.reason}" if record.reason else "")
    if record.build is None or record.build.exit_code != 0:
        return "the reference did not build"
    inst = [r for r in record.runs if r.kind == "instrumented"]
    if not inst:
        return "the reference has no instrumented run"
    for r in inst:
        if r.exit_code != 0:
            how = (f"was stopped ({r.stopped_reason or 'timeout'} after {r.wall_s:.0f} s)"
                   if r.timed_out or r.exit_code is None or r.stopped_reason else f"exited {r.exit_code}")
            share = wait_share(r) if r.timed_out else None
            load = (f"; its ranks waited for a CPU {100 * share:.0f}% of that time: the machine was loaded"
                    if share is not None and share > STARVED_SHARE else "")
            return f"the reference run of case {r.case} at {r.ranks} ranks {how}{load}"
    printed = outputs(record)
    if not any(printed.values()):
        return "the reference printed no values"
    # The held-out cases the campaign drew are the ones its reference ran.
    all_cases = [c.name for c in problem.cases] + sorted({c for c, _ in printed if is_held_out(c)})
    for chk in checks.checks:
        if not isinstance(chk, CompareCheck) or chk.reference.source != "reference_run":
            continue
        for case in [c for c in all_cases if applies_to(chk, c)]:
            if not any(q.get(chk.quantity) for (c, _), q in printed.items() if c == case):
                return f"the reference printed no '{chk.quantity}' in case {case}"
    return ""


def problems_without_reference(problems: dict[str, tuple[Problem, Checks]],
                               references: dict[str, JobResult | None]) -> dict[str, str]:
    """{problem id: reason} for the solvable problems a campaign cannot score."""
    out = {}
    for pid, (problem, checks) in problems.items():
        if checks.expect != "solve":
            continue
        why = reference_problem(problem, checks, references.get(pid))
        if why:
            out[pid] = why
    return out
