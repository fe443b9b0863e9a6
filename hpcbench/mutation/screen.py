"""Screening generated mutants on one cheap case before running them on all.

Most generated mutants are wrong everywhere, and a mutant is killed as soon as one hidden
check fails (hpcbench.mutation.verdict). So every mutant first runs the problem's cheapest
published case alone, in a campaign of its own, scored by the checks that judge that case;
only a mutant that case does not kill (it passed there, printed the reference's numbers, or
its job did not finish) runs every case. A kill at the screening case is the same verdict the
full run would give: a check that fails at one case fails in the full run too (a check's
score at a case depends on that case's output and the reference's alone), and a failed gate
there is a failed gate of the full run. What screening gives up is the full run's accuracy
figure of such a mutant (how far below 0.5 it fell), reported as not measured."""

from __future__ import annotations

import shutil
from pathlib import Path

from hpcbench.problem import (
    CompareCheck,
    ProblemBundle,
    RefinementCheck,
    SanityCheck,
    TestCase,
    is_held_out,
    load_problem,
)


def screening_case(bundle: ProblemBundle) -> TestCase:
    """The published case that costs least to run: fewest ranks, then the shortest time limit
    (the author's measure of its cost), then the first declared."""
    cases = bundle.problem.cases
    return min(cases, key=lambda c: (min(c.ranks), c.time_limit_s, cases.index(c)))


def screen_bundle(bundle: ProblemBundle) -> ProblemBundle | None:
    """`bundle` reduced to its screening case at its smallest rank count: no held-out cases,
    no performance case, and the checks that judge that case, restricted to it (a refinement
    check needs several cases and goes). None when no check judges the case."""
    case = screening_case(bundle)
    checks = []
    for chk in bundle.checks.checks:
        if isinstance(chk, RefinementCheck):
            continue
        named = [c for c in chk.cases if not is_held_out(c)]
        if chk.cases and case.name not in named:
            continue
        assert isinstance(chk, CompareCheck | SanityCheck)
        checks.append(chk.model_copy(update={"cases": [case.name]}))
    if not checks:
        return None
    one = case.model_copy(update={"ranks": [min(case.ranks)]})
    problem = bundle.problem.model_copy(update={"cases": [one], "held_out": None, "performance": None,
                                                "scaling": None})
    return bundle.model_copy(update={"problem": problem,
                                     "checks": bundle.checks.model_copy(update={"checks": checks})})


def write_screen_problem(bundle: ProblemBundle, root: Path) -> ProblemBundle | None:
    """screen_bundle written as a problem folder `root/<id>/` (problem.json, checks.json and
    the reference) and loaded from there: a campaign snapshots a problem's files, not the
    bundle in memory, and scoring reads the snapshot, so the screening campaign must be
    planned on files that say what it runs. None when no check judges the case."""
    screen = screen_bundle(bundle)
    if screen is None:
        return None
    folder = Path(root) / bundle.id
    folder.mkdir(parents=True, exist_ok=True)
    for name, model in (("problem.json", screen.problem), ("checks.json", screen.checks)):
        text = model.model_dump_json(indent=1, exclude_none=True) + "\n"
        if not (folder / name).is_file() or (folder / name).read_text() != text:
            (folder / name).write_text(text)
    shutil.copytree(bundle.reference_dir, folder / "reference", dirs_exist_ok=True)
    return load_problem(folder)
