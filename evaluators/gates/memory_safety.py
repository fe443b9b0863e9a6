"""Gate: no leaks and no invalid accesses in the submission's own code, with the
instruments that say so confirmed to have run.

Evidence comes from PETSc's -malloc_debug -malloc_dump (every object PETSc
allocated and the program never freed, at every rank count) and, where
valgrind ran, memcheck errors whose stacks lie in the submission's own binary.
MPI's own start-up leaks (tens of kilobytes "definitely lost" inside libmpi
even with suppressions) are kept as evidence and never counted.

Nothing the program prints or leaves is taken as a verdict: each run records
whether PETSc's allocator records, its -log_view report and valgrind's reports
were found where only hpcbench named them (jobs/instruments.py). One missing in
the submission's runs but present in the reference's is "instrumentation
disabled", and the gate fails with the evidence (evaluators/instrumentation.py).

Memory the program takes with malloc itself is recorded in every run but valgrind's by a
preloaded recorder (jobs/raw_malloc.py): a block its own code took and still held at exit
fails the gate as a -malloc_dump leak does, in whichever run it was held.

Where being watched cannot be hidden (valgrind's allocator and its slowness, PETSc's debugging
allocator), the program's behaviour is compared across its runs instead: what PETSc counted
in every instrumented, timing and valgrind run of a case (objects by class, calls by event,
flops) must agree with the instrumented run's (evaluators/watched_runs.py). A program that
creates, destroys or calls differently in some of them "behaves differently when observed",
and the gate fails naming the runs, the class or event and the numbers.

A petsc4py program runs under valgrind with PYTHONMALLOC=malloc and the interpreter's
suppressions (jobs/python-interpreter.supp), its errors attributed to it through the
interpreter, which runs its code (jobs/build_python.interpreter_objects). petsc4py destroys the
objects a program leaves when Python collects them or at exit, before -malloc_dump looks, so its
source is read for them too: an object made and never destroyed fails the gate as a C program's
undestroyed object does (docs/python.md)."""

from __future__ import annotations

from typing import Any

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register
from hpcbench.evaluators.instrumentation import blame, missing_instruments, verifiable
from hpcbench.evaluators.pysource import analyse, undestroyed
from hpcbench.evaluators.watched_runs import TOLERANCE_RULE, compare_runs
from hpcbench.jobs.records import VALGRIND_LEAK_KINDS, ValgrindSummary


def _leak_problems(ctx: EvalContext, evidence: dict[str, Any]) -> list[str]:
    leaks = [lk for r in ctx.runs("instrumented") for lk in r.leaks]
    leak_bytes = sum(lk.bytes for lk in leaks)
    evidence.update(malloc_dump_runs=len(ctx.runs("instrumented")), malloc_dump_leaked_bytes=leak_bytes,
                    malloc_dump_leaks=[f"[{lk.rank}] {lk.bytes} bytes {lk.function}() at {lk.file}:{lk.line}"
                                       for lk in leaks[:20]])
    if not leaks:
        return []
    funcs = sorted({lk.function for lk in leaks})
    return [f"-malloc_dump: {len(leaks)} blocks ({leak_bytes} bytes) never freed, allocated in {', '.join(funcs[:4])}"]


def _raw_malloc_problems(ctx: EvalContext, evidence: dict[str, Any]) -> list[str]:
    """Blocks the program's own code took with malloc and still held at exit, in any run the
    malloc recorder watched (every run of a C program but valgrind's; jobs/raw_malloc.py): the
    runs valgrind does not see, which a program can tell from valgrind's (issue 33). The same
    rule as -malloc_dump's for PetscMalloc: what is not freed by exit leaked, reachable or not."""
    recorded = [(r, r.raw_malloc) for r in (ctx.record.runs if ctx.record else [])
                if r.raw_malloc is not None and not r.raw_malloc.parse_error
                and r.kind in ("instrumented", "timing", "perf")]
    held = [(r, rec) for r, rec in recorded if rec.held_blocks and r.exit_code == 0 and not r.timed_out]
    evidence.update(raw_malloc_runs=len(recorded), raw_malloc_held=[
        f"{r.kind} run {r.repeat} of case {r.case} at {r.ranks} ranks: {rec.held_blocks} blocks "
        f"({rec.held_bytes} bytes) from {', '.join(rec.callers[:4]) or 'unknown sites'}" for r, rec in held[:10]])
    if not held:
        return []
    first, rec = held[0]
    where = f", first at {rec.callers[0]}" if rec.callers else ""
    return [f"malloc: {rec.held_blocks} blocks ({rec.held_bytes} bytes) taken by the program's own code were never "
            f"freed in the {first.kind} run of case {first.case}{where} ({len(held)} of {len(recorded)} runs recorded "
            "held memory at exit)"]


def _left_to_gc(ctx: EvalContext, evidence: dict[str, Any]) -> list[str]:
    """A petsc4py program's PETSc objects never destroyed: petsc4py destroys
    what is left when Python collects it or at exit, so -malloc_dump cannot see them, and a C
    program that left them would leak (docs/python.md). Read from the source (pysource.undestroyed)."""
    if ctx.language != "python":
        return []
    left = [u for n, s in sorted(ctx.py_sources().items()) for u in undestroyed(analyse(n, s))]
    evidence["left_to_garbage_collector"] = left[:20]
    if not left:
        return []
    return [f"{len(left)} PETSc object(s) never destroyed, left to the garbage collector: {', '.join(left[:3])}"]


def _valgrind_problems(v: ValgrindSummary, evidence: dict[str, Any]) -> list[str]:
    own = [e for e in v.errors if e.in_submission]
    evidence.update(valgrind_submission_lost_bytes=v.submission_lost_bytes,
                    valgrind_submission_invalid_accesses=v.submission_invalid_accesses,
                    valgrind_mpi_noise_lost_bytes=v.definitely_lost_bytes - v.submission_lost_bytes,
                    valgrind_errors=[{"kind": e.kind, "what": e.what, "frames": e.frames[:6]} for e in own[:10]])
    problems = []
    if v.submission_invalid_accesses:
        first = next((e for e in own if e.kind not in VALGRIND_LEAK_KINDS), None)
        where = f", first {first.kind} at {first.frames[:1]}" if first else ""
        problems.append(f"valgrind: {v.submission_invalid_accesses} invalid accesses in the submission's code{where}")
    if v.submission_lost_bytes:
        problems.append(f"valgrind: {v.submission_lost_bytes} bytes lost from the submission's code")
    return problems


def _behaviour_problems(ctx: EvalContext, evidence: dict[str, Any]) -> list[str]:
    found = compare_runs(ctx.record)
    evidence.update(watched_runs_compared=f"{found.runs} runs against their case's instrumented run, "
                                          f"{found.cases} cases and rank counts",
                    watched_runs_rule=TOLERANCE_RULE,
                    watched_runs_differences=[d.evidence() for d in found.differences[:20]],
                    watched_runs_alike=found.runs + found.cases if not found.differences else 0)
    if not found.differences:
        return []
    more = len(found.differences) - 1
    return [f"behaves differently when observed: {found.differences[0]}" + (f" (and {more} more)" if more else "")]


@register
class MemorySafety(Evaluator):
    name = "memory_safety"
    stage = "gate"
    category = "correctness"
    order = 30

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        if not ctx.runs("instrumented"):
            return self.unscored("no instrumented run to inspect")
        disabled, unverified = blame(missing_instruments(ctx.record), missing_instruments(ctx.reference))
        evidence: dict[str, Any] = {"instrumentation_disabled": [str(m) for m in disabled[:10]],
                                    "instrumentation_unverified": [str(m) for m in unverified[:10]]}
        problems = (_leak_problems(ctx, evidence) + _raw_malloc_problems(ctx, evidence)
                    + _behaviour_problems(ctx, evidence) + _left_to_gc(ctx, evidence))
        vg = [r for r in ctx.runs("valgrind") if r.valgrind and r.valgrind.ran]
        if vg:
            problems += _valgrind_problems(vg[0].valgrind or ValgrindSummary(), evidence)
        if disabled:
            problems.insert(0, f"instrumentation disabled: {disabled[0]}"
                               + (f" (and {len(disabled) - 1} more)" if len(disabled) > 1 else ""))
        # Both tools: certain about what they saw. PETSc's tracer alone misses raw
        # malloc and out-of-bounds access, so say so through the confidence, as for
        # instruments that could not be confirmed here (nor for the reference).
        valgrind_ok = bool(vg) and not any(m.instrument == "valgrind" for m in unverified)
        confidence = 1.0 if valgrind_ok else 0.8
        method = ("malloc_dump + valgrind" if vg else "malloc_dump only (valgrind did not run)")
        if ctx.language == "python":
            method += " and the objects the source destroys"
        if unverified or not verifiable(ctx.record):
            confidence = min(confidence, 0.8)
            method += "; instruments unverified" + (f": {unverified[0]}" if unverified else " (an older record)")
        if problems:
            return self.gate(False, "; ".join(problems), confidence=confidence, evidence=evidence)
        alike = f"; {evidence['watched_runs_alike']} runs counted alike" if evidence.get("watched_runs_alike") else ""
        return self.gate(True, f"no leaks or invalid accesses ({method}){alike}", confidence=confidence,
                         evidence=evidence)
