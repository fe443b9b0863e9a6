"""The execution evidence a judge sees beside the code, as plain text.

Built from campaign.h5 alone (the job record and the results of the evaluators
that ran before the judges), deterministically: the same stored campaign renders
byte-identical prompts, which is what lets the cache and a second judge work."""

from __future__ import annotations

import re
from typing import Any

from hpcbench.evaluators.base import EvalContext, EvalResult

# The options hpcbench itself adds to every instrumented run: not the program's choices.
OURS = ("-malloc_debug", "-malloc_dump", "-options_left", "-log_view")
SOLVER_PREFIXES = ("KSP", "PC", "SNES", "TS", "Tao", "MatLUFactor", "MatCholeskyFactor", "MatILUFactor",
                   "MatICCFactor", "MatSolve", "MatMult", "DM", "VecScatter", "SF")
_WARN = re.compile(r"^.*?:\d+(?::\d+)?: (?:fatal )?(?:warning|error): .*$", re.M)
MAX_LINES = 25


def _clip(text: str, n: int) -> str:
    text = text.strip()
    return text if len(text) <= n else text[:n] + f"\n... [{len(text) - n} more characters]"


def build_section(ctx: EvalContext) -> list[str]:
    rec = ctx.record
    if rec is None:
        return ["## Build", "no job record: the program was never built"]
    if rec.build is None:
        return ["## Build", f"not built: {rec.reason or rec.status}"]
    b = rec.build
    diags = _WARN.findall(b.stderr + "\n" + b.stdout)
    head = f"exit code {b.exit_code}" + (" (timed out)" if b.timed_out else "")
    lines = ["## Build", f"{head}; {len(diags)} compiler diagnostics"]
    lines += [f"  {d.strip()}" for d in diags[:MAX_LINES]]
    if b.exit_code != 0 and not diags:
        lines.append(_clip(b.stderr or b.stdout, 1500))
    return lines


def runs_section(ctx: EvalContext) -> list[str]:
    runs = ctx.runs("instrumented")
    if not runs:
        return []
    lines = ["## Runs (instrumented: -malloc_debug -malloc_dump -options_left -log_view)"]
    for r in runs:
        state = f"exit {r.exit_code}" if r.exit_code is not None else "no exit code"
        if r.signal:
            state += f", signal {r.signal}"
        if r.timed_out or r.stopped_reason:
            state += f", stopped: {r.stopped_reason or 'timeout'}"
        lines.append(f"- case {r.case}, {r.ranks} rank(s): {state}, {r.wall_s:.2f} s wall"
                     + (f", {len(r.leaks)} leaked blocks at PetscFinalize" if r.leaks else ""))
        if r.exit_code != 0:
            lines.append("  stderr: " + _clip(r.stderr, 800).replace("\n", "\n  "))
    return lines


def solver_section(ctx: EvalContext) -> list[str]:
    """The solver components actually used: -log_view events, objects, options."""
    runs = [r for r in ctx.runs("instrumented") if r.log_view is not None]
    if not runs:
        return []
    r = runs[0]  # first case at its smallest rank count: the others solve the same way
    lv = r.log_view
    assert lv is not None
    # The tree gives calls per call of the parent: multiply down the path for the total.
    total_calls: dict[str, float] = {}
    events: dict[str, tuple[float, float]] = {}
    for e in sorted(lv.events, key=lambda e: e.path.count(";") + bool(e.path)):
        full = f"{e.path};{e.name}" if e.path else e.name
        total_calls[full] = e.calls_per_parent * total_calls.get(e.path, 1.0)
        if e.name.startswith(SOLVER_PREFIXES):
            calls, t = events.get(e.name, (0.0, 0.0))
            events[e.name] = (calls + total_calls[full], t + e.time_s)
    lines = [f"## PETSc solver events in -log_view (case {r.case}, {r.ranks} rank(s))"]
    ranked = sorted(events.items(), key=lambda kv: (-kv[1][1], kv[0]))[:30]
    lines += [f"  {name}: {calls:.4g} calls, {t:.3g} s" for name, (calls, t) in ranked] or ["  none"]
    if lv.objects:
        lines.append("PETSc objects created: " + ", ".join(f"{k} {v}" for k, v in sorted(lv.objects.items())))
    given = [o for o in lv.options if not o.startswith(OURS)]
    lines.append("options in the database: " + (" ".join(given) if given else "none besides hpcbench's own"))
    left = sorted({o for run in ctx.runs("instrumented") for o in run.options_left})
    lines.append("-options_left (given but never used): " + ("; ".join(left) if left else "none"))
    return lines


def prior_section(results: dict[str, EvalResult]) -> list[str]:
    lines = ["## Deterministic results of this submission"]
    for name, r in results.items():
        if r.method != "deterministic":
            continue
        val = "unscored" if r.status == "unscored" or r.score is None else (
            ("pass" if r.passed else "FAIL") if r.stage == "gate" else f"{r.score:.2f}")
        lines.append(f"- {name} ({r.stage}): {val}: {_clip(r.rationale, 400)}")
    acc = results.get("numerical_accuracy")
    if acc is not None and acc.evidence.get("details"):
        lines.append("accuracy checks (numerical_accuracy):")
        for d in acc.evidence["details"][:MAX_LINES]:
            where = f" case {d['case']} at {d['ranks']} ranks" if "case" in d else ""
            lines.append(f"  {d.get('check', '?')}{where}: {d.get('score', 0):.2f}: {d.get('why', '')}")
    dep = _deprecated(results)
    if dep:
        lines.append("deprecated PETSc API used (marked so in this PETSc's headers):")
        lines += [f"  {d}" for d in dep]
    return lines


def _deprecated(results: dict[str, EvalResult]) -> list[str]:
    """error_handling lists each use of a name this PETSc's headers mark deprecated
    ({name, file, line, note}); the best-practices judge is told which, where and why."""
    ev: dict[str, Any] = results["error_handling"].evidence if "error_handling" in results else {}
    uses: dict[str, list[str]] = {}
    notes: dict[str, str] = {}
    for d in ev.get("deprecated") or []:
        d = d if isinstance(d, dict) else {"name": str(d)}
        name = str(d.get("name", "?"))
        uses.setdefault(name, [])
        if d.get("line"):
            uses[name].append(f"{d.get('file', '')}:{d['line']}")
        notes.setdefault(name, str(d.get("note", "")))
    out = []
    for name, where in sorted(uses.items()):
        shown = ", ".join(where[:6]) + (f" and {len(where) - 6} more" if len(where) > 6 else "")
        out.append(f"{name}: {len(where) or 'some'} uses{' at ' + shown if where else ''}"
                   + (f"; {notes[name]}" if notes[name] else ""))
    return out


def render_evidence(ctx: EvalContext, results: dict[str, EvalResult]) -> str:
    parts = build_section(ctx) + runs_section(ctx) + solver_section(ctx) + prior_section(results)
    return "\n".join(parts)
