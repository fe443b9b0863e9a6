"""The execution evidence a judge sees beside the code, split by who wrote it.

`Evidence.measured` holds only what hpcbench produced: exit codes, signals, stop
reasons and times it measured, counts, the deterministic results' values, the
hidden checks' verdicts, the deprecated PETSc names its header scan found. Anything
the agent's program or source can shape goes to `Evidence.agent` as labelled text,
which the prompt fences off as data (hpcbench/judge/prompt.py): compiler diagnostics (they
quote the source), a failed run's stderr, PETSc's -log_view (written inside the
program's process, which can change it), the options the program left unused, and
the deterministic evaluators' rationales (they quote names and statements from the
source).

Built from campaign.h5 alone (the job record and the results of the evaluators
that ran before the judges), deterministically: the same stored campaign renders
byte-identical prompts, which is what lets the cache and a second judge work."""

from __future__ import annotations

import re
from typing import Any

from hpcbench.evaluators.base import EvalContext, EvalResult
from hpcbench.judge.evidence import Evidence

# The options hpcbench itself adds to every instrumented run: not the program's choices.
OURS = ("-malloc_debug", "-malloc_dump", "-malloc_view", "-options_left", "-log_view", "-options_file", "-skip_petscrc",
        "-ksp_monitor ascii:", "-ksp_view ascii:")
SOLVER_PREFIXES = ("KSP", "PC", "SNES", "TS", "Tao", "MatLUFactor", "MatCholeskyFactor", "MatILUFactor",
                   "MatICCFactor", "MatSolve", "MatMult", "DM", "VecScatter", "SF")
_WARN = re.compile(r"^.*?:\d+(?::\d+)?: (?:fatal )?(?:warning|error): .*$", re.M)
MAX_LINES = 25
# Results no judge is shown: the injection scan's finding must not move a judge either way
# (its verdict is applied by scoring, evaluators/judged/base.py), and quoting it would repeat the injection.
HIDDEN = ("prompt_injection",)


def _clip(text: str, n: int) -> str:
    text = text.strip()
    return text if len(text) <= n else text[:n] + f"\n... [{len(text) - n} more characters]"


def build_section(ctx: EvalContext, ev: Evidence) -> None:
    rec = ctx.record
    if rec is None:
        ev.measured += ["## Build", "no job record: the program was never built"]
        return
    if rec.build is None:
        ev.measured += ["## Build", f"not built: {rec.reason or rec.status}"]
        return
    b = rec.build
    diags = [d.strip() for d in _WARN.findall(b.stderr + "\n" + b.stdout)]
    head = f"exit code {b.exit_code}" + (" (timed out)" if b.timed_out else "")
    ev.measured += ["## Build", f"{head}; {len(diags)} compiler diagnostics"
                    + (" (quoted in the agent data below)" if diags else "")]
    if diags:
        more = f"\n... and {len(diags) - MAX_LINES} more" if len(diags) > MAX_LINES else ""
        ev.agent.append(("compiler diagnostics (the compiler's messages quote the agent's source)",
                         "\n".join(diags[:MAX_LINES]) + more))
    if b.exit_code != 0 and not diags:
        ev.agent.append(("build output (compiler and make, quoting the agent's source)",
                         _clip(b.stderr or b.stdout, 1500)))


def runs_section(ctx: EvalContext, ev: Evidence) -> None:
    runs = ctx.runs("instrumented")
    if not runs:
        return
    ev.measured.append("## Runs (instrumented: -malloc_debug -malloc_dump -options_left -log_view)")
    for r in runs:
        state = f"exit {r.exit_code}" if r.exit_code is not None else "no exit code"
        if r.signal:
            state += f", signal {r.signal}"
        if r.timed_out or r.stopped_reason:
            state += f", stopped: {r.stopped_reason or 'timeout'}"
        ev.measured.append(f"- case {r.case}, {r.ranks} rank(s): {state}, {r.wall_s:.2f} s wall"
                           + (f", {len(r.leaks)} leaked blocks at PetscFinalize" if r.leaks else ""))
        if r.exit_code != 0 and r.stderr.strip():
            ev.agent.append((f"stderr of case {r.case} at {r.ranks} rank(s) (the program's own output)",
                             _clip(r.stderr, 800)))


def solver_section(ctx: EvalContext, ev: Evidence) -> None:
    """The solver components actually used: -log_view events, objects, options."""
    runs = [r for r in ctx.runs("instrumented") if r.log_view is not None]
    if not runs:
        return
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
    ranked = sorted(events.items(), key=lambda kv: (-kv[1][1], kv[0]))[:30]
    lines = [f"{name}: {calls:.4g} calls, {t:.3g} s" for name, (calls, t) in ranked] or ["none"]
    if lv.objects:
        lines.append("PETSc objects created: " + ", ".join(f"{k} {v}" for k, v in sorted(lv.objects.items())))
    given = [o for o in lv.options if not o.startswith(OURS)]
    lines.append("options in the database: " + (" ".join(given) if given else "none besides hpcbench's own"))
    left = sorted({o for run in ctx.runs("instrumented") for o in run.options_left})
    lines.append("-options_left (given but never used): " + ("; ".join(left) if left else "none"))
    ev.measured.append(f"## PETSc solver events, objects and options: -log_view of case {r.case} at {r.ranks} "
                       "rank(s), in the agent data below")
    ev.agent.append((f"PETSc's -log_view of case {r.case} at {r.ranks} rank(s): solver events, objects, options "
                     "(PETSc writes it inside the program's process, which can change it)", "\n".join(lines)))


def prior_section(results: dict[str, EvalResult], ev: Evidence) -> None:
    ev.measured.append("## Deterministic results of this submission")
    why = []
    for name, r in results.items():
        if r.method != "deterministic" or name in HIDDEN:
            continue
        val = "unscored" if r.status == "unscored" or r.score is None else (
            ("pass" if r.passed else "FAIL") if r.stage == "gate" else f"{r.score:.2f}")
        ev.measured.append(f"- {name} ({r.stage}): {val}")
        if r.rationale:
            why.append(f"- {name}: {_clip(r.rationale, 400)}")
    acc = results.get("numerical_accuracy")
    if acc is not None and acc.evidence.get("details"):
        ev.measured.append("accuracy checks (numerical_accuracy):")
        for d in acc.evidence["details"][:MAX_LINES]:
            where = f" case {d['case']} at {d['ranks']} ranks" if "case" in d else ""
            ev.measured.append(f"  {d.get('check', '?')}{where}: {d.get('score', 0):.2f}: {d.get('why', '')}")
    dep = _deprecated(results)
    if dep:
        ev.measured.append("deprecated PETSc API used (marked so in this PETSc's headers):")
        ev.measured += [f"  {d}" for d in dep]
    if why:
        ev.agent.append(("hpcbench's rationales for the deterministic results above (they quote names, files "
                         "and statements of the agent's source)", "\n".join(why)))


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


def collect_evidence(ctx: EvalContext, results: dict[str, EvalResult]) -> Evidence:
    ev = Evidence()
    build_section(ctx, ev)
    runs_section(ctx, ev)
    solver_section(ctx, ev)
    prior_section(results, ev)
    return ev
