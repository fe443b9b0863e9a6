"""Quality: does the program check the error code of every call that returns one?

Every call of a function returning PetscErrorCode (the list comes from the
headers of the PETSc the campaign used, stored in campaign.h5 /petsc), of the
program's own PetscErrorCode functions, and of MPI is classified from the
syntax tree: wrapped in PetscCall/PetscCallMPI and kin (full credit), legacy
`ierr = F(...); CHKERRQ(ierr)` (partial credit, named as legacy), checked by
hand (`if (ierr)`), discarded with (void), or unchecked (none). The score is
the mean credit per call. Deprecated functions and macros found are evidence
for the best-practices judge."""

from __future__ import annotations

from collections import Counter

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register
from hpcbench.evaluators.petsc_conventions import CREDIT, ERROR_HANDLING_CODES, check_error_handling
from hpcbench.evaluators.pysource import analyse, swallowed_calls

MAX_LISTED = 200  # calls listed one by one in the evidence; the counts cover all


@register
class ErrorHandling(Evaluator):
    name = "error_handling"
    stage = "quality"
    category = "library"
    order = 10

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        if ctx.language == "python":
            return self._python(ctx)
        srcs = ctx.c_sources()
        if not srcs:
            return self.unscored("no C sources to parse")
        api = ctx.petsc_api
        reports = [check_error_handling(n, s, api) for n, s in sorted(srcs.items())]
        calls = [c for r in reports for c in r.calls]
        if not calls:
            return self.unscored("no call returning an error code found")
        score = sum(c.credit for c in calls) / len(calls)
        forms = Counter(c.form for c in calls)
        parts = [f"{forms[f]} {f}" for f in CREDIT if forms[f]]
        rationale = f"{len(calls)} calls returning an error code: " + ", ".join(parts)
        legacy = sorted({c.how for c in calls if c.form == "legacy"})
        if legacy:
            rationale += f"; legacy error checking ({', '.join(legacy)}) credited {CREDIT['legacy']} per call"
        worst = [c for c in calls if c.form == "unchecked"][:3]
        if worst:
            rationale += "; unchecked e.g. " + ", ".join(f"{c.name} at {c.file}:{c.line}" for c in worst)
        deprecated = [d for r in reports for d in r.deprecated]
        if deprecated:
            rationale += f"; deprecated: {', '.join(sorted({d['name'] for d in deprecated}))}"
        exact = api is not None and bool(api.errorcode_functions)
        confidence = 1.0 if exact else 0.7
        if not exact:
            rationale += " (no PETSc header list in this campaign: PETSc calls recognised by name prefix)"
        if any(r.parse_error for r in reports):
            confidence = min(confidence, 0.8)
        evidence = {
            "calls": [{"file": c.file, "line": c.line, "name": c.name, "kind": c.kind, "form": c.form,
                       "how": c.how, "function": c.function} for c in calls[:MAX_LISTED]],
            "counts": dict(forms), "total_calls": len(calls),
            "credit": dict(CREDIT),
            "findings": [str(f) for r in reports for f in r.findings if f.code in ERROR_HANDLING_CODES][:MAX_LISTED],
            "deprecated": deprecated,
            "functions_missing_begin": sorted({f for r in reports for f in r.functions_missing_begin}),
            "errorcode_list": (f"{len(api.errorcode_functions)} functions from {api.source} (PETSc {api.version})"
                               if api is not None and exact else "name-prefix fallback"),
            "parse_errors": [n for n, r in zip(sorted(srcs), reports) if r.parse_error],
        }
        return self.result(score, rationale, confidence=confidence, evidence=evidence)

    def _python(self, ctx: EvalContext) -> EvalResult:
        """petsc4py raises every PETSc error as PETSc.Error: the program handles errors unless it
        catches them broadly and goes on (a swallowed failure prints answers from a failed solve)."""
        total, hidden = 0, []
        for n, s in sorted(ctx.py_sources().items()):
            calls, lines = swallowed_calls(s, analyse(n, s))
            total += calls
            hidden += [f"{n}:{line}" for line in lines]
        if not total:
            return self.unscored("no call into PETSc found")
        score = 1.0 - len(hidden) / total
        rationale = (f"{total} calls into PETSc; petsc4py raises each failure as PETSc.Error"
                     + (f"; {len(hidden)} inside a try that swallows it, e.g. {hidden[0]}" if hidden
                        else ", none swallowed by a broad except"))
        return self.result(score, rationale, evidence={"language": "python", "petsc_calls": total,
                                                       "swallowed": hidden[:MAX_LISTED]})
