"""Parse what PETSc's unprefixed KSP says of its solves: `-ksp_monitor ascii:<file>` (one line per
iteration, "  12 KSP Residual norm 1.705182164120e-11") and `-ksp_view ascii:<file>` (the
solver's configuration after each KSPSolve). Problems whose task states a residual reduction
judge it from these (problem.ResidualCheck, evaluators/metrics/numerical_accuracy.py).

Both files are the program's to write into as much as PETSc's: they are read capped, and a
line that is not the monitor's is ignored, not trusted. A solve ends where the iteration count
stops growing (each KSPSolve starts its monitor at 0). Formats: PETSc 3.26
src/ksp/ksp/interface/iterativ.c KSPMonitorResidual, itcreate.c KSPView."""

from __future__ import annotations

import math
import re

from hpcbench.jobs.records import KspSolve, KspSolves

MAX_BYTES = 8 << 20
MAX_SOLVES = 1000
# "%3D KSP Residual norm %14.12e" (KSPMonitorResidual; "KSP <norm> resid norm" in the older and
# the true-residual forms), indented by the viewer's tab level
_LINE = re.compile(r"^\s*(\d+) KSP (?:\w+ )?[Rr]esid(?:ual)? norm\s+(\S+)")
# KSPView: the top-level object's lines are indented by two spaces exactly, its PC's and inner
# solvers' by more
_GUESS = re.compile(r"^  maximum iterations=\d+, (initial guess is zero|nonzero initial guess)")
_RTOL = re.compile(r"^  tolerances: +relative=(\S+?),")
_NORM = re.compile(r"^  using (\w+) norm type for convergence test")


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def parse_monitor(data: bytes) -> tuple[list[KspSolve], int]:
    """(the solves, how many more there were than MAX_SOLVES) in a -ksp_monitor record."""
    solves: list[KspSolve] = []
    more, last_it = 0, -1
    for raw in data.decode("utf-8", "replace").splitlines():
        m = _LINE.match(raw)
        if m is None:
            continue
        it, norm = int(m.group(1)), _number(m.group(2))
        starts, last_it = not solves or it <= last_it, it
        if starts and len(solves) >= MAX_SOLVES:
            more += 1
        elif starts:
            solves.append(KspSolve(iterations=it, first=norm, last=norm))
        elif not more:
            solves[-1].iterations, solves[-1].last = it, norm
    return solves, more


def parse_view(data: bytes) -> tuple[bool | None, float | None, str]:
    """(nonzero initial guess?, relative tolerance, norm type) of the last top-level KSP in a
    -ksp_view record (None, None, "" where it holds none)."""
    guess: bool | None = None
    rtol: float | None = None
    norm = ""
    for line in data.decode("utf-8", "replace").splitlines():
        if line.startswith("KSP Object:"):  # a new solve's view: what follows is its
            guess, rtol, norm = None, None, ""
        elif m := _GUESS.match(line):
            guess = m.group(1) == "nonzero initial guess"
        elif m := _RTOL.match(line):
            rtol = _number(m.group(1))
        elif m := _NORM.match(line):
            norm = m.group(1).lower()
    return guess, rtol, norm


def parse_ksp(monitor: bytes, view: bytes) -> KspSolves:
    solves, more = parse_monitor(monitor)
    guess, rtol, norm = parse_view(view)
    return KspSolves(solves=solves, more=more, nonzero_guess=guess, rtol=rtol, norm=norm)
