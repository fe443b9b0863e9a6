"""Screening: deciding a wrong program's verdict from a cheap part of its runs.

validate-checks runs hundreds of programs, most of them wrong everywhere, on a shared 2-core
machine. Two screens let a cheap campaign decide what the full one would, and only the
programs it leaves undecided run every case at every rank count:

- generated mutants, at the problem's cheapest published case alone (`cheapest_case_screen`):
  a mutant is killed as soon as one hidden check fails (hpcbench.mutation.verdict), and a
  check's score at a case depends only on that case's output and the reference's, so a check
  below full marks there keeps the full run below full marks; a gate failed there is failed in
  the full run;
- the library's wrong programs, at every published case at its smallest rank count and no
  held-out case (`one_rank_screen`): the library's bar is accuracy below 0.5, and the full
  run's accuracy is at most the screen's. A compare or sanity check scores each case at its
  worst rank count (more rank counts can only lower it), a refinement check reads each case's
  smallest rank count (the one the screen runs), every published check is scored in both (so
  the weights' sum is the same), and the held-out cases only lower a score
  ((1 - share) P + share min(H, P) <= P).

What screening gives up is the full run's accuracy of a program it decided: the screen's
figure is an upper bound, reported as such."""

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


def screen_bundle(bundle: ProblemBundle, cases: list[TestCase]) -> ProblemBundle | None:
    """`bundle` reduced to `cases`, each at its smallest rank count: no held-out cases, no
    performance case, and the checks that judge those cases, restricted to them (a refinement
    check only where all its cases are kept). None when no check is left."""
    kept = {c.name for c in cases}
    checks: list[CompareCheck | SanityCheck | RefinementCheck] = []
    for chk in bundle.checks.checks:
        if isinstance(chk, RefinementCheck):
            if set(chk.cases) <= kept:
                checks.append(chk)
            continue
        assert isinstance(chk, CompareCheck | SanityCheck)
        named = [c for c in chk.cases if not is_held_out(c)]
        if not chk.cases:  # every published case: those kept
            checks.append(chk)
        elif kept & set(named):
            checks.append(chk.model_copy(update={"cases": [c for c in named if c in kept]}))
    if not checks:
        return None
    ones = [c.model_copy(update={"ranks": [min(c.ranks)]}) for c in cases]
    problem = bundle.problem.model_copy(update={"cases": ones, "held_out": None, "performance": None,
                                                "scaling": None})
    return bundle.model_copy(update={"problem": problem,
                                     "checks": bundle.checks.model_copy(update={"checks": checks})})


def cheapest_case_screen(bundle: ProblemBundle) -> ProblemBundle | None:
    return screen_bundle(bundle, [screening_case(bundle)])


def one_rank_screen(bundle: ProblemBundle) -> ProblemBundle | None:
    return screen_bundle(bundle, list(bundle.problem.cases))


def write_problem(bundle: ProblemBundle, root: Path) -> ProblemBundle:
    """`bundle` written as a problem folder `root/<id>/` (problem.json, checks.json and the
    reference) and loaded from there: a campaign snapshots a problem's files, not the bundle in
    memory, and scoring reads the snapshot, so a screening campaign must be planned on files
    that say what it runs."""
    folder = Path(root) / bundle.id
    folder.mkdir(parents=True, exist_ok=True)
    for name, model in (("problem.json", bundle.problem), ("checks.json", bundle.checks)):
        text = model.model_dump_json(indent=1, exclude_none=True) + "\n"
        if not (folder / name).is_file() or (folder / name).read_text() != text:
            (folder / name).write_text(text)
    shutil.copytree(bundle.reference_dir, folder / "reference", dirs_exist_ok=True)
    return load_problem(folder)
