"""Gate: the sources compile and link against PETSc with PETSc's makefiles."""

from __future__ import annotations

import re

from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, register

_DIAG = re.compile(r"^(.*?:\d+:\d+: (?:fatal )?error: .*)$", re.M)


@register
class Compilation(Evaluator):
    name = "compilation"
    stage = "gate"
    category = "correctness"
    order = 10

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        rec = ctx.record
        if rec is None or rec.build is None:
            reason = rec.reason if rec else "the job never produced a record"
            return self.gate(False, f"no build result: {reason}", evidence={"status": rec.status if rec else ""})
        b = rec.build
        if b.replaces:
            names = sorted({n for ns in b.replaces.values() for n in ns})
            return self.gate(False, f"refused before running: it defines {', '.join(names[:8])}"
                             f"{' ...' if len(names) > 8 else ''}, which its libraries export (its definition "
                             "would replace theirs, for their own calls too)",
                             evidence={"replaces": b.replaces, "command": b.command})
        if b.exit_code == 0:
            return self.gate(True, f"built in {b.wall_s:.1f} s", evidence={"command": b.command})
        errors = _DIAG.findall(b.stderr + "\n" + b.stdout)[:10]
        why = "build timed out" if b.timed_out else f"make exited {b.exit_code}"
        return self.gate(False, f"{why}: {errors[0] if errors else (b.stderr or b.stdout)[-300:]}",
                         evidence={"errors": errors, "command": b.command,
                                   "stderr_path": f"{ctx.h5_path}/build/stderr"})
