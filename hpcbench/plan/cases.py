"""Which of a problem's cases a campaign runs (CampaignProfile.cases), applied at planning.

The problem as run is what the campaign snapshots (plan/snapshot.py writes it), so scoring
judges exactly the cases that ran. Why a cheap selection decides what the full campaign would
(validate-checks' screens) is argued in hpcbench/validation/screening.py."""

from __future__ import annotations

from hpcbench.problem import (
    ALL_CASES,
    AnyCheck,
    ProblemBundle,
    RefinementCheck,
    TestCase,
    is_held_out,
)
from hpcbench.profile import Cases


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
    checks: list[AnyCheck] = []
    for chk in bundle.checks.checks:
        if isinstance(chk, RefinementCheck):
            if set(chk.cases) <= kept:
                checks.append(chk)
            continue
        named = [c for c in chk.cases if not is_held_out(c)]
        if not chk.cases or ALL_CASES in chk.cases:  # every published case: those kept
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


def cheapest_case(bundle: ProblemBundle) -> ProblemBundle | None:
    return screen_bundle(bundle, [screening_case(bundle)])


def one_rank(bundle: ProblemBundle) -> ProblemBundle | None:
    return screen_bundle(bundle, list(bundle.problem.cases))


def one_rank_count(bundle: ProblemBundle) -> ProblemBundle:
    """The problem with each case at its smallest rank count, and the first case that allows
    several also at its largest: a generated mutant runs every case once, and once more where
    a mistake of the parallel code (a missing ghost update, a reduction) shows. Runs on several
    ranks cost the most on a shared machine: one of them per mutant is enough to see one."""
    parallel = next((c.name for c in bundle.problem.cases if len(c.ranks) > 1), None)
    cases = [c.model_copy(update={"ranks": sorted({min(c.ranks), max(c.ranks)} if c.name == parallel
                                                  else {min(c.ranks)})}) for c in bundle.problem.cases]
    return bundle.model_copy(update={"problem": bundle.problem.model_copy(update={"cases": cases})})


def select_cases(bundle: ProblemBundle, cases: Cases) -> ProblemBundle | None:
    """The problem as a campaign of this selection runs it (None: no hidden check is left to judge it)."""
    if cases == "all":
        return bundle
    if cases == "one-rank-count":
        return one_rank_count(bundle)
    return cheapest_case(bundle) if cases == "cheapest" else one_rank(bundle)
