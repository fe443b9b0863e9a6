"""Quality: does the program keep to PETSc's public interface?

A program that includes PETSc's private headers (include/petsc/private, *impl.h) reaches
into its implementation, which changes between releases without deprecation. PETSc's own
tutorials do it now and then (25 of the 408 in 3.26.1: block-inversion kernels, direct
access to an object's fields), so it is a finding of practice, scored here in the library
category, and never the API-usage gate's zero. Finding code HB303 (`hpcbench lint`)."""

from __future__ import annotations

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register
from hpcbench.evaluators.petsc_conventions import check_public_api
from hpcbench.evaluators.pysource import private_uses

# One private header or several: the program depends on PETSc's internals either way.
PRIVATE_SCORE = 0.5


@register
class PublicApi(Evaluator):
    name = "public_api"
    stage = "quality"
    category = "library"
    order = 30

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        if ctx.language == "python":
            found = [u for n, s in sorted(ctx.py_sources().items()) for u in private_uses(s, n)]
            if not found:
                return self.result(1.0, "petsc4py's public interface only", evidence={"findings": []})
            return self.result(PRIVATE_SCORE, f"uses petsc4py's private names ({found[0]}): its implementation, "
                               "which changes between releases", evidence={"findings": found[:50]})
        srcs = ctx.c_sources()
        if not srcs:
            return self.unscored("no C sources to parse")
        findings = [f for n, s in sorted(srcs.items()) for f in check_public_api(n, s)]
        evidence = {"findings": [str(f) for f in findings]}
        if not findings:
            return self.result(1.0, "public PETSc headers only", evidence=evidence)
        headers = sorted({f.message.split(" header ", 1)[1].split(":", 1)[0] for f in findings})
        return self.result(PRIVATE_SCORE, f"includes private PETSc headers ({', '.join(headers)}): PETSc's "
                           "implementation, which changes between releases without deprecation", evidence=evidence)
