"""Gate: every case at every rank count runs to completion, exit 0, in time."""

from __future__ import annotations

import re
from typing import Any

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register

_PETSC_ERR = re.compile(r"PETSC ERROR: (.+)")
_SKIP = ("-------", "See https://", "Petsc Release", "Configure options", "Option left", "#")


def petsc_error_lines(text: str, limit: int = 6) -> list[str]:
    """The informative lines of a PETSc error trace (the message, not the banner)."""
    out: list[str] = []
    for m in _PETSC_ERR.finditer(text):
        line = m.group(1).strip()
        if line and not line.startswith(_SKIP) and line not in out:
            out.append(line)
        if len(out) >= limit:
            break
    return out


@register
class Execution(Evaluator):
    name = "execution"
    stage = "gate"
    category = "correctness"
    order = 20

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        if ctx.record is not None and ctx.record.status == "timeout":
            # The job reached its walltime: the program was too slow, whatever runs finished.
            return self.gate(False, f"timed out: {ctx.record.reason}", evidence={"status": "timeout"})
        runs = ctx.runs("instrumented") + ctx.runs("timing")
        if not runs:
            return self.gate(False, "nothing ran", evidence={})
        failures: list[dict[str, Any]] = []
        for r in runs:
            if r.exit_code == 0 and not r.timed_out:
                continue
            why = r.stopped_reason or f"exit code {r.exit_code}"
            if r.signal == 11 or "Segmentation Violation" in r.stderr or "SEGV" in r.stderr:
                why = "segmentation fault" + (f" ({r.stopped_reason})" if r.stopped_reason else "")
            failures.append({"case": r.case, "ranks": r.ranks, "kind": r.kind, "reason": why,
                             "petsc_error": petsc_error_lines(r.stderr + r.stdout),
                             "stderr_tail": r.stderr[-600:]})
        if not failures:
            return self.gate(True, f"{len(runs)} runs exited 0", evidence={"runs": len(runs)})
        f0 = failures[0]
        msg = f"case {f0['case']} at {f0['ranks']} ranks: {f0['reason']}"
        if f0["petsc_error"]:
            msg += "; PETSc: " + " / ".join(f0["petsc_error"][:2])
        return self.gate(False, msg, evidence={"failures": failures[:5], "failed": len(failures)})
