"""Whether the instruments hpcbench asked for ran, read from the job records (each run's
InstrumentCheck list, written by jobs/instruments.py), for the memory-safety gate.

An instrument that did not confirm in a submission's run but did in the reference's runs
of the same problem in the same campaign was disabled by the submission: the reference is
the control for every instrument (a PETSc built with thread safety writes no allocator
records, a site's launcher may name its ranks in a way valgrind's report names miss; then
the reference misses them too and the gate says "unverified" instead of failing)."""

from __future__ import annotations

from dataclasses import dataclass

from hpcbench.jobs.records import JobResult, RunResult

# The instruments each run kind must confirm for the memory gate: log_summary (-log_view's text
# summary, the counts evaluators/watched_runs.py compares) in every run it compares, so that no
# run of a case escapes the comparison by losing it.
REQUIRED = {"instrumented": ("malloc_dump", "malloc_view", "log_view", "log_summary", "raw_malloc"),
            "valgrind": ("valgrind", "log_summary"), "timing": ("log_summary", "raw_malloc")}
# Instruments that some runs never ask for: a run without their check is an older record (not
# compared) or, for the malloc recorder, a petsc4py program's (whose executable is the
# interpreter), not a missing instrument.
NEWER = frozenset({"log_summary", "raw_malloc"})


@dataclass(frozen=True)
class Missing:
    kind: str
    case: str
    ranks: int
    instrument: str
    problem: str

    def __str__(self) -> str:
        return f"{self.kind} run of case {self.case} at {self.ranks} ranks: {self.instrument}: {self.problem}"


def _run_missing(run: RunResult) -> list[Missing]:
    if run.kind == "valgrind" and (run.timed_out or run.exit_code != 0):
        why = f"the program did not finish under valgrind ({run.stopped_reason or f'exit code {run.exit_code}'})"
        return [Missing(run.kind, run.case, run.ranks, "valgrind", why)]
    if run.exit_code != 0 or run.timed_out:
        return []  # a failed run is the execution gate's
    checks = {c.name: c for c in run.instruments}
    out = []
    for name in REQUIRED.get(run.kind, ()):
        check = checks.get(name)
        if check is None and name in NEWER:
            continue
        if check is None or check.problem:
            out.append(Missing(run.kind, run.case, run.ranks, name, check.problem if check else "not asked for"))
    return out


def missing_instruments(record: JobResult | None) -> list[Missing]:
    """Every instrument a successful instrumented or valgrind run did not confirm."""
    return [m for r in (record.runs if record else []) for m in _run_missing(r)]


def verifiable(record: JobResult | None) -> bool:
    """Whether the record comes from a job that checked its instruments (older ones did not)."""
    return any(r.instruments for r in (record.runs if record else []) if r.kind in REQUIRED)


def blame(submission: list[Missing], reference: list[Missing]) -> tuple[list[Missing], list[Missing]]:
    """(disabled by the submission, unverified because the reference misses them too)."""
    also = {(m.kind, m.instrument) for m in reference}
    return ([m for m in submission if (m.kind, m.instrument) not in also],
            [m for m in submission if (m.kind, m.instrument) in also])
