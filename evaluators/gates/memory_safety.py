"""Gate: no leaks and no invalid accesses in the submission's own code.

Evidence comes from PETSc's -malloc_debug -malloc_dump (every object PETSc
allocated and the program never freed, at every rank count) and, where
valgrind ran, memcheck errors whose stacks lie in the submission's sources.
MPI's own start-up leaks (tens of kilobytes "definitely lost" inside libmpi
even with suppressions) are kept as evidence and never counted."""

from __future__ import annotations

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register


@register
class MemorySafety(Evaluator):
    name = "memory_safety"
    stage = "gate"
    category = "correctness"
    order = 30

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        inst = ctx.runs("instrumented")
        vg = [r for r in ctx.runs("valgrind") if r.valgrind and r.valgrind.ran]
        if not inst:
            return self.unscored("no instrumented run to inspect")
        leaks = [lk for r in inst for lk in r.leaks]
        leak_bytes = sum(lk.bytes for lk in leaks)
        evidence: dict = {
            "malloc_dump_runs": len(inst),
            "malloc_dump_leaks": [f"[{lk.rank}] {lk.bytes} bytes {lk.function}() at {lk.file}:{lk.line}"
                                  for lk in leaks[:20]],
            "malloc_dump_leaked_bytes": leak_bytes,
        }
        problems = []
        if leaks:
            funcs = sorted({lk.function for lk in leaks})
            problems.append(f"-malloc_dump: {len(leaks)} blocks ({leak_bytes} bytes) never freed, "
                            f"allocated in {', '.join(funcs[:4])}")
        if vg:
            v = vg[0].valgrind
            assert v is not None
            own = [e for e in v.errors if e.in_submission]
            evidence.update(valgrind_submission_lost_bytes=v.submission_lost_bytes,
                            valgrind_submission_invalid_accesses=v.submission_invalid_accesses,
                            valgrind_mpi_noise_lost_bytes=v.definitely_lost_bytes - v.submission_lost_bytes,
                            valgrind_errors=[{"kind": e.kind, "what": e.what, "frames": e.frames[:6]}
                                             for e in own[:10]])
            if v.submission_invalid_accesses:
                first = next(e for e in own if e.kind not in ("Leak_DefinitelyLost", "Leak_IndirectlyLost"))
                problems.append(f"valgrind: {v.submission_invalid_accesses} invalid accesses in the "
                                f"submission's code, first {first.kind} at {first.frames[:1]}")
            if v.submission_lost_bytes:
                problems.append(f"valgrind: {v.submission_lost_bytes} bytes lost from the submission's code")
        # Both tools: certain about what they saw. PETSc's tracer alone misses raw
        # malloc and out-of-bounds access, so say so through the confidence.
        confidence = 1.0 if vg else 0.8
        method = "malloc_dump + valgrind" if vg else "malloc_dump only (valgrind did not run)"
        if problems:
            return self.gate(False, "; ".join(problems), confidence=confidence, evidence=evidence)
        return self.gate(True, f"no leaks or invalid accesses ({method})", confidence=confidence,
                         evidence=evidence)
