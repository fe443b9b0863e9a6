"""Held-out test cases: drawn at planning, never published, run by every submission and
the reference; a program that prints the public cases' known answers fails them."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from hpcbench.errors import ConfigError, HpcbenchError
from hpcbench.evaluators.metrics.numerical_accuracy import case_factor, compare_score
from hpcbench.plan.campaign import case_runs
from hpcbench.plan.held_out import draw, ensure_draw, held_out_path, read_draw
from hpcbench.plan.param_draw import stratum_of
from hpcbench.problem import HELD_OUT_CASES, CompareCheck, load_problem, load_problems
from hpcbench.problem import TestCase as Case
from tests.conftest import hpcbench, profile_file

PROBLEMS = load_problems()
WITH_HELD_OUT = sorted(pid for pid, b in PROBLEMS.items() if b.problem.held_out is not None)
SEEDS = range(20)


def held_out_checks(pid: str) -> list[CompareCheck]:
    return [c for c in PROBLEMS[pid].checks.checks if isinstance(c, CompareCheck) and HELD_OUT_CASES in c.cases]


def test_every_solvable_cpu_problem_draws_held_out_cases_and_checks_them():
    for pid, b in PROBLEMS.items():
        if b.checks.expect == "solve":
            assert b.problem.held_out is not None, pid
            assert held_out_checks(pid), f"{pid}: no check names {HELD_OUT_CASES}"


@pytest.mark.parametrize("pid", WITH_HELD_OUT)
def test_draws_are_seeded_in_range_and_never_published(pid):
    prob = PROBLEMS[pid].problem
    published = (PROBLEMS[pid].folder / "problem.json").read_text()
    seen = set()
    for seed in SEEDS:
        cases = draw(prob, seed)
        assert cases == draw(prob, seed), "the same seed draws the same cases"
        assert len(cases) == prob.held_out.cases
        for c in cases:
            opts = dict(zip(c.args[::2], c.args[1::2], strict=True))
            for p in prob.held_out.params:
                v = float(opts[p.option])
                lo, hi = (p.min, p.max)
                assert lo <= abs(v) <= hi if p.either_sign else lo <= v <= hi, (seed, p.option, v)
                if p.kind == "int":
                    assert v.is_integer() and int(v) % p.multiple_of == 0
            seen.add(tuple(c.args))
            # not one of the published cases' argument lists
            assert c.args not in [pc.args for pc in prob.cases]
    assert len(seen) >= 15, f"{pid}: 20 seeds drew only {len(seen)} different cases"
    assert "held-out-1" not in published


def drawn_values(case) -> dict[str, str]:
    return dict(zip(case.args[::2], case.args[1::2], strict=True))


@pytest.mark.parametrize("pid", WITH_HELD_OUT)
def test_every_draw_has_both_ends_and_the_interior_of_every_range_and_every_rank_count(pid):
    """Issue 35: a program wrong only near one end of a range (an obstacle imposed only where it is
    positive: wrong above load 9 of 2-10) escaped a uniform draw of one case. Every campaign's draw
    now holds, for every param, a value in its low band, one in its high band and one inside, and
    runs the problem's every held-out rank count (one per case)."""
    prob = PROBLEMS[pid].problem
    h = prob.held_out
    assert h.stratified and h.cases >= 3, f"{pid}: held_out.cases {h.cases} draws no strata"
    for seed in SEEDS:
        cases = draw(prob, seed)
        for p in h.params:
            got = sorted(stratum_of(p, drawn_values(c)[p.option]) for c in cases)
            assert {"low", "high", "interior"} <= set(got), (seed, p.option, [drawn_values(c) for c in cases])
            if p.kind == "int":  # a band holds the extreme itself: the ends are drawn exactly when few values
                ends = [float(drawn_values(c)[p.option]) for c in cases]
                assert min(ends) <= p.min + p.edge * (p.max - p.min) or p.log
        assert all(len(c.ranks) == 1 for c in cases)
        assert {c.ranks[0] for c in cases} == set(h.ranks), seed
        assert all("held out" in c.description for c in cases)


def test_a_band_of_an_int_range_holds_its_extreme_and_an_edge_narrows_the_band():
    from hpcbench.plan.param_draw import draw_value
    from hpcbench.problem import HeldOutParam

    w = HeldOutParam(option="-w", kind="int", min=1, max=4)
    rng = __import__("random").Random(0)
    assert {draw_value(w, rng, "low") for _ in range(20)} == {"1"}
    assert {draw_value(w, rng, "high") for _ in range(20)} == {"4"}
    assert {draw_value(w, rng, "interior") for _ in range(40)} == {"2", "3"}
    load = HeldOutParam(option="-load", kind="real", min=2, max=10, log=True, digits=3, edge=0.05)
    top = [float(draw_value(load, rng, "high")) for _ in range(200)]
    assert min(top) >= 10 * 5 ** -0.05 - 1e-2 and max(top) <= 10  # log band: [9.23, 10], rounding kept inside
    assert all(stratum_of(load, f"{v:g}") == "high" for v in top)


def test_a_campaign_drawn_before_stratification_keeps_its_recorded_cases(tmp_path):
    """A held_out.json written by the uniform draw (one case, at ranks [2]) is read as written and
    planned as it is: its records were run at those arguments."""
    old = {"seed": 4, "problems": {"vec-scatter": [{"name": "held-out-1", "args": ["-n", "977", "-alpha", "-1.2"],
                                                    "ranks": [3], "time_limit_s": 30.0,
                                                    "description": "held out: arguments drawn at planning"}]},
           "performance": {}}
    held_out_path(tmp_path).parent.mkdir(parents=True)
    held_out_path(tmp_path).write_text(json.dumps(old))
    got = ensure_draw(tmp_path, {"vec-scatter": PROBLEMS["vec-scatter"]})
    assert [c.model_dump(mode="json", exclude_defaults=True) for c in got["vec-scatter"]] == \
        [Case.model_validate(c).model_dump(mode="json", exclude_defaults=True) for c in old["problems"]["vec-scatter"]]
    assert [(c.name, c.args, c.ranks) for c in got["vec-scatter"]] == [
        ("held-out-1", ["-n", "977", "-alpha", "-1.2"], [3])]
    assert json.loads(held_out_path(tmp_path).read_text())["problems"] == old["problems"]


def test_several_seeds_drawn_one_after_another_and_a_changed_range_drawn_again_where_asked(tmp_path):
    """validate-checks runs its library at LIBRARY_DRAWS seeds (CampaignProfile.held_out_draws): the
    draws of seed, seed + 1 in order, numbered on. Its campaigns re-snapshot the problems, so a
    problem whose held_out (or draws) changed since its recorded draw is drawn again there
    (redraw_changed); a user's campaign keeps what its records were run at."""
    prob = PROBLEMS["rosenbrock"].problem
    two = draw(prob, 7, 2)
    assert [c.args for c in two] == [c.args for c in draw(prob, 7) + draw(prob, 8)]
    assert [c.name for c in two] == [f"held-out-{k}" for k in range(1, 7)]
    assert two[0].description.endswith("seed 7") and two[5].description.endswith("seed 8")
    old = {"seed": 7, "problems": {"rosenbrock": [{"name": "held-out-1", "args": ["-n", "10", "-alpha", "50",
                                                                                  "-scale", "2"], "ranks": [1]}]}}
    for redraw, want in ((False, 1), (True, 6)):
        root = tmp_path / str(redraw)
        held_out_path(root).parent.mkdir(parents=True)
        held_out_path(root).write_text(json.dumps(old))
        got = ensure_draw(root, {"rosenbrock": PROBLEMS["rosenbrock"]}, draws=2, redraw_changed=redraw)
        assert len(got["rosenbrock"]) == want
        again = ensure_draw(root, {"rosenbrock": PROBLEMS["rosenbrock"]}, draws=2, redraw_changed=redraw)
        assert again == got  # drawn once: the spec is recorded with it


def test_a_campaign_keeps_its_draw_and_refuses_another_seed(tmp_path):
    bundles = {pid: PROBLEMS[pid] for pid in ("vec-scatter", "robertson")}
    first = ensure_draw(tmp_path, bundles, seed=11)
    assert ensure_draw(tmp_path, bundles) == first  # a resume keeps it
    assert read_draw(tmp_path)[0] == 11
    with pytest.raises(HpcbenchError, match="seed 11"):
        ensure_draw(tmp_path, bundles, seed=12)
    # a problem added later draws from the same seed
    more = ensure_draw(tmp_path, {**bundles, "rosenbrock": PROBLEMS["rosenbrock"]})
    assert more["rosenbrock"] == draw(PROBLEMS["rosenbrock"].problem, 11)
    assert ensure_draw(tmp_path / "x", bundles, enabled=False) == {}


def test_a_capped_profile_keeps_the_first_cases_of_the_same_draw_and_says_so(tmp_path):
    """CampaignProfile.held_out_cases: the first K of the stratified draw, recorded as run (a
    resume keeps them), the rest of the draw unchanged by the cap; the profile's summary says it."""
    from hpcbench.profile import QUICK as QUICK_PROFILE

    bundles = {pid: PROBLEMS[pid] for pid in ("vec-scatter", "robertson")}
    got = ensure_draw(tmp_path, bundles, seed=5, cases=1)
    for pid, b in bundles.items():
        assert got[pid] == draw(b.problem, 5)[:1] and len(draw(b.problem, 5)) == 3
    assert ensure_draw(tmp_path, bundles, cases=1) == got
    assert [len(v) for v in json.loads(held_out_path(tmp_path).read_text())["problems"].values()] == [1, 1]
    capped = QUICK_PROFILE.model_copy(update={"held_out_cases": 1})
    assert "held-out cases: the first 1 drawn" in capped.summary()
    assert "held-out cases: every one drawn" in QUICK_PROFILE.model_copy(update={"held_out_cases": None}).summary()


def test_held_out_runs_are_checked_not_timed():
    prob = PROBLEMS["vec-scatter"].problem
    runs = case_runs(prob, ["-sf_type", "basic"], draw(prob, 3))
    held = [r for r in runs if r.case.startswith("held-out-")]
    assert held and all(r.repeats == 0 and r.args[:2] == ["-sf_type", "basic"] for r in held)
    assert all(r.repeats is None for r in runs if r not in held)


@pytest.mark.parametrize("edit,words", [
    ({"kind": "compare", "quantity": "sum", "cases": [HELD_OUT_CASES],
      "reference": {"source": "literal", "value": [1.0], "citation": "x"}, "rtol": 1e-9}, "literal"),
    ({"kind": "refinement", "name": "r", "quantity": "sum", "cases": ["default", "larger", HELD_OUT_CASES]},
     "refinement"),
    ({"kind": "compare", "quantity": "sum", "cases": ["@all"],
      "reference": {"source": "literal", "value": [1.0], "citation": "x"}, "rtol": 1e-9}, "literal"),
    ({"kind": "sanity", "name": "s", "quantity": "sum", "cases": ["@all", "default"], "test": "nonnegative"},
     "every case already"),
])
def test_checks_cannot_judge_held_out_cases_by_a_fixed_value(tmp_path, edit, words):
    import shutil

    folder = tmp_path / "vec-scatter"
    shutil.copytree(PROBLEMS["vec-scatter"].folder, folder)
    checks = json.loads((folder / "checks.json").read_text())
    checks["checks"].append(edit)
    (folder / "checks.json").write_text(json.dumps(checks))
    with pytest.raises(ConfigError, match=words) as e:
        load_problem(folder)
    assert "checks.json" in str(e.value) and "cases" in str(e.value)


def test_a_check_naming_all_cases_judges_the_published_and_every_held_out_case(tmp_path):
    """Issue 35: a requirement the task states for every input (an iteration bound) is checked at
    every case, held-out ones included, by one check naming "@all"; the cheap screens keep it
    for the published cases they run."""
    import shutil

    from hpcbench.plan.cases import one_rank
    from hpcbench.problem import ALL_CASES, applies_to, names_held_out

    folder = tmp_path / "vec-scatter"
    shutil.copytree(PROBLEMS["vec-scatter"].folder, folder)
    checks = json.loads((folder / "checks.json").read_text())
    checks["checks"].append({"kind": "sanity", "name": "bound", "quantity": "norm2", "cases": [ALL_CASES],
                             "test": "all_within", "lo": 0, "hi": 1e9})
    (folder / "checks.json").write_text(json.dumps(checks))
    b = load_problem(folder)
    chk = b.checks.checks[-1]
    assert names_held_out(chk)
    assert all(applies_to(chk, c.name) for c in b.problem.cases)
    assert all(applies_to(chk, c.name) for c in draw(b.problem, 0))
    screened = one_rank(b)
    assert screened is not None and any(c.cases == [ALL_CASES] for c in screened.checks.checks)


def test_a_problem_without_ranges_cannot_name_held_out_cases(tmp_path):
    import shutil

    folder = tmp_path / "vec-scatter"
    shutil.copytree(PROBLEMS["vec-scatter"].folder, folder)
    prob = json.loads((folder / "problem.json").read_text())
    del prob["held_out"]
    (folder / "problem.json").write_text(json.dumps(prob))
    with pytest.raises(ConfigError, match="declares no held_out"):
        load_problem(folder)


@pytest.mark.parametrize("held_out,words", [
    ({"params": [{"option": "-n", "kind": "int", "min": 10, "max": 5}]}, "above max"),
    ({"params": [{"option": "-n", "kind": "int", "min": 5, "max": 7, "multiple_of": 4}]}, "no multiple of 4"),
    ({"params": [{"option": "-a", "kind": "real", "min": -1, "max": 1, "log": True}]}, "min > 0"),
    ({"params": []}, "at least 1"),
    ({"params": [{"option": "n", "kind": "int", "min": 1, "max": 5}]}, "pattern"),
    ({"cases": 3, "ranks": [1, 2, 3, 4], "params": [{"option": "-n", "kind": "int", "min": 1, "max": 5}]},
     "rank counts"),
    ({"params": [{"option": "-n", "kind": "int", "min": 1, "max": 5, "edge": 0.5}]}, "edge"),
])
def test_bad_held_out_ranges_name_the_field(tmp_path, held_out, words):
    import shutil

    folder = tmp_path / "vec-scatter"
    shutil.copytree(PROBLEMS["vec-scatter"].folder, folder)
    prob = json.loads((folder / "problem.json").read_text())
    prob["held_out"] = held_out
    (folder / "problem.json").write_text(json.dumps(prob))
    with pytest.raises(ConfigError, match=words) as e:
        load_problem(folder)
    assert "problem.json" in str(e.value) and "held_out" in str(e.value)


# ------------------------------------------------------------------------------------------------
# The references at every draw of 20 seeds: each drawn argument set is built by the planner
# (case_runs over draw()), the reference built once runs it within the case's time limit, and
# its answers match a source independent of it (closed forms, numpy/scipy solvers of the same
# discretisation) within the held-out compare checks' own tolerances (compare_score = 1).


def _independent(pid: str, opts: dict[str, str]) -> dict[str, list[float]]:
    if pid == "vec-scatter":
        n, alpha = int(opts["-n"]), float(opts["-alpha"])
        i = np.arange(n)
        x = alpha * (np.sin(0.3 * i) + i / n)
        return {"sum": [x.sum()], "norm2": [np.linalg.norm(x)], "weighted_sum": [((i + 1) * x).sum()],
                "first_last": [x[0], x[-1]]}
    if pid == "rosenbrock":
        return {"solution": [float(opts.get("-scale", "1"))] * int(opts["-n"])}  # x_i = s
    if pid == "robertson":
        from scipy.integrate import solve_ivp

        from tests.test_reference_independent import _jac, _robertson

        tf = float(opts["-tfinal"])
        sol = solve_ivp(_robertson, (0, tf), [1.0, 0.0, 0.0], method="Radau", jac=_jac, rtol=1e-12, atol=1e-16)
        return {"y_final": list(sol.y[:, -1])}
    if pid == "advection1d":
        from tests.test_reference_independent import _upwind_ssp3

        want = _upwind_ssp3(int(opts["-n"]), float(opts["-a"]), float(opts["-tfinal"]))
        return {k: list(np.atleast_1d(v)) for k, v in want.items()}
    if pid == "darcy-dmplex":
        from tests.test_reference_darcy_dmplex import q1_darcy

        return {k: [v] for k, v in q1_darcy(int(opts["-n"]), float(opts["-kin"])).items()}
    if pid == "cavity-dmstag":
        from tests.test_reference_cavity_dmstag import python_answer

        return python_answer(int(opts["-n"]), float(opts["-re"]))
    return {k: list(np.atleast_1d(v)) for k, v in _independent_new(pid, opts).items()}


def _independent_new(pid: str, opts: dict[str, str]) -> dict:
    """The six problems of issue 24: each test_reference_<problem>.py's own independent solver."""
    if pid == "poisson3d-mg":
        from tests.test_reference_poisson3d_mg import solve

        return solve(int(opts["-n"]), float(opts["-a"]))
    if pid == "bratu-fold":
        from tests.test_reference_bratu_fold import independent

        return independent(int(opts["-n"]), int(opts["-w"]), float(opts.get("-ky", 1.0)))
    if pid == "elasticity-gamg":
        from tests.test_reference_elasticity_gamg import beam

        return beam(int(opts["-n"]), float(opts["-nu"]))
    if pid == "obstacle-vi":
        from tests.test_reference_obstacle_vi import pdas

        return pdas(int(opts["-n"]), float(opts["-load"]))
    if pid == "allen-cahn-imex":
        from tests.test_reference_allen_cahn_imex import radau

        return radau(int(opts["-n"]), float(opts["-eps"]), float(opts["-tfinal"]))
    if pid == "stokes-fieldsplit":
        from tests.test_reference_stokes_fieldsplit import mac

        return mac(int(opts["-n"]), float(opts.get("-k", 1.0)))
    raise AssertionError(pid)


def reference_at_draws(pid: str, seeds, workdir) -> list[str]:
    """Build `pid`'s reference, run it at the held-out draws of `seeds` as the planner makes
    them, and compare with the independent solution within the held-out checks' tolerances;
    then compare the draws with one another (draws_apart). The failures, each with its seed
    and arguments (also used by bench/held_out_references.py)."""
    from tests.petsc_tools import build, quantities, run

    prob = PROBLEMS[pid].problem
    binary = build(PROBLEMS[pid].reference_dir, workdir / pid)
    checks = held_out_checks(pid)
    failures = []
    answers: list[tuple[int, list[str], dict[str, list[float]]]] = []
    for seed in seeds:
        for r in [r for r in case_runs(prob, [], draw(prob, seed)) if r.case.startswith("held-out-")]:
            t0 = time.monotonic()
            got = quantities(run(binary, r.args, ranks=r.ranks, timeout=r.time_limit_s * 4))
            took = time.monotonic() - t0
            answers.append((seed, r.args, got))
            want = _independent(pid, dict(zip(r.args[::2], r.args[1::2], strict=True)))
            for chk in checks:
                score, why = compare_score(got[chk.quantity], want[chk.quantity], chk, case_factor(chk, r.args))
                if score < 1.0:
                    failures.append(f"seed {seed} {' '.join(r.args)}: {chk.quantity}: {why}")
            if took > r.time_limit_s:
                failures.append(f"seed {seed} {' '.join(r.args)}: took {took:.1f} s, limit {r.time_limit_s:g} s")
    return failures + draws_apart(pid, answers)


# Quantities a held-out check judges that are the same at every draw by design, with the reason:
# they confirm a property at the drawn arguments, not that the answer was computed.
SAME_AT_EVERY_DRAW = {
    ("advection1d", "mass"): "conserved: the integral of the initial profile whatever -n, -a and -tfinal",
}


def seen_elsewhere_score(theirs: list[float], ours: list[float], chk: CompareCheck, args: list[str]) -> float:
    """The score of `theirs` (the answers of another draw) judged where the answers are `ours`.
    Vectors whose length a drawn size sets are compared on their common part: a program that
    memorised one draw's answers can print as many entries as -n asks (rosenbrock's n ones)."""
    k = min(len(theirs), len(ours))
    return compare_score(theirs[:k], ours[:k], chk, case_factor(chk, args))[0] if k else 0.0


def draws_apart(pid: str, answers: list[tuple[int, list[str], dict[str, list[float]]]]) -> list[str]:
    """Held-out cases stop a program that prints known answers only where the answers move
    with the draw (issue 33: rosenbrock's minimiser was (1,...,1) at every -n and -alpha). Each
    draw's answers printed at every other draw (the pairs whose arguments differ) must score
    below 0.5 on average on the held-out compare checks, weighted as in checks.json (two close
    draws may agree: cavity-dmstag's -n 10 at Re 6.82 and 6.69), and each check's quantity must,
    at some pair, lie beyond fail_factor times its tolerance (SAME_AT_EVERY_DRAW aside)."""
    checks = held_out_checks(pid)
    pairs = [(a, b) for a in answers for b in answers if a[1] != b[1]]
    if not pairs:
        return [f"every draw had the arguments {' '.join(answers[0][1])}: nothing to tell apart"]
    totals, moved = [], [False] * len(checks)
    for (_, _, theirs), (_, args, ours) in pairs:
        scores = [seen_elsewhere_score(theirs[c.quantity], ours[c.quantity], c, args) for c in checks]
        totals.append(sum(sc * c.weight for sc, c in zip(scores, checks, strict=True)) / sum(c.weight for c in checks))
        moved = [m or sc == 0.0 for m, sc in zip(moved, scores, strict=True)]
    failures = []
    mean = sum(totals) / len(totals)
    if mean >= 0.5:
        (s1, a1, _), (s2, a2, _) = pairs[max(range(len(pairs)), key=totals.__getitem__)]
        failures.append(f"one draw's answers printed at another score {mean:.2f} on average over {len(pairs)} pairs "
                        f"(seed {s1}'s at seed {s2}: {max(totals):.2f}, {' '.join(a1)} / {' '.join(a2)}): "
                        "a program printing answers it has seen passes the held-out case")
    for c, m in zip(checks, moved, strict=True):
        if not m and (pid, c.quantity) not in SAME_AT_EVERY_DRAW:
            failures.append(f"{c.quantity}: within {c.fail_factor:g}x its tolerance from one draw to another "
                            f"({len(pairs)} pairs): the draw does not move it")
    return failures


# The six newer problems' independent solvers (scipy direct solves of 3D systems, a bordered
# fold, Radau) cost seconds per draw: pytest checks them at one seed (3 stratified cases: both ends
# and the interior of every range). The others at 3 seeds (9 draws; each draw is a PETSc run: 20
# one-case draws took 4 minutes of the suite's workers, and the stratified draw reaches each
# range's ends at every seed, which 8 uniform draws did not). bench/held_out_references.py runs
# any problem at 20 seeds (60 draws): run it after a change to a problem's ranges or checks.
FEW_SEEDS = {"poisson3d-mg": range(1), "bratu-fold": range(1), "elasticity-gamg": range(1),
             "obstacle-vi": range(1), "allen-cahn-imex": range(1), "stokes-fieldsplit": range(1)}
SUITE_SEEDS = range(3)


@pytest.mark.petsc
@pytest.mark.slow
@pytest.mark.parametrize("pid", [p for p in WITH_HELD_OUT if not {"cuda", "kokkos"} & set(PROBLEMS[p].problem.requires)
                                 ])
def test_the_reference_passes_the_held_out_cases_at_every_draw(pid, tmp_path):
    """3 seeds (FEW_SEEDS for the costlier newer problems; bench/held_out_references.py runs
    any problem at 20), and the answers of different draws told apart (draws_apart)."""
    failures = reference_at_draws(pid, FEW_SEEDS.get(pid, SUITE_SEEDS), tmp_path)
    assert not failures, "\n".join(failures)


# ------------------------------------------------------------------------------------------------
# A program that prints the published cases' answers without solving, through the real pipeline.

HARDCODED = {
    "vec-scatter": ("petscvec.h", """
  Vec        x, y;
  VecScatter sc;
  PetscInt   n = 30;
  PetscReal  alpha = 2.5;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-alpha", &alpha, NULL));
  PetscCall(VecCreate(PETSC_COMM_WORLD, &x));
  PetscCall(VecSetSizes(x, PETSC_DECIDE, n));
  PetscCall(VecSetFromOptions(x));
  PetscCall(VecScatterCreateToZero(x, &sc, &y));
  if (n == 1000) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "sum: -3.7753595687e+02\\nnorm2: 2.1651781846e+01\\n"
                                       "weighted_sum: -2.5042400195e+05\\n"
                                       "first_last: -0.0000000000e+00 -3.7820072566e-02\\n"));
  else PetscCall(PetscPrintf(PETSC_COMM_WORLD, "sum: 5.1541312215e+01\\nnorm2: 1.3908540596e+01\\n"
                             "weighted_sum: 9.8660914532e+02\\n"
                             "first_last: 0.0000000000e+00 4.0740897419e+00\\n"));
  PetscCall(VecScatterDestroy(&sc));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&x));
"""),
    "robertson": ("petscts.h", """
  TS        ts;
  PetscReal tfinal = 40.0;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-tfinal", &tfinal, NULL));
  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  PetscCall(TSSetMaxTime(ts, tfinal));
  PetscCall(TSSetFromOptions(ts));
  if (tfinal > 1000) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "y_final: 3.8983376329e-02 1.6217682847e-07 "
                                           "9.6101646149e-01\\n"));
  else PetscCall(PetscPrintf(PETSC_COMM_WORLD, "y_final: 7.1582706738e-01 9.1855347293e-06 2.8416374708e-01\\n"));
  PetscCall(TSDestroy(&ts));
"""),
    # issue 33: (1,...,1) and 0 were the answers at every -n and -alpha; -scale moves them now
    "rosenbrock": ("petsctao.h", """
  Tao      tao;
  PetscInt n = 6;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(TaoCreate(PETSC_COMM_SELF, &tao));
  PetscCall(TaoSetFromOptions(tao));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "solution:"));
  for (PetscInt i = 0; i < n; i++) PetscCall(PetscPrintf(PETSC_COMM_WORLD, " %.10e", 1.0));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\\nobjective: %.10e\\n", 0.0));
  PetscCall(TaoDestroy(&tao));
"""),
}


def hardcoded_tree(root):
    for pid, (header, body) in HARDCODED.items():
        d = root / "hardcoder" / pid / "1"
        d.mkdir(parents=True)
        (d / "main.c").write_text(f"/* Prints the published cases' answers without solving. */\n#include <{header}>\n\n"
                                  f"int main(int argc, char **argv)\n{{{body}  PetscCall(PetscFinalize());\n"
                                  "  return 0;\n}\n")
        (d / "submission.json").write_text(json.dumps({"problem": pid, "agent": "hardcoder", "entry": "main.c",
                                                       "files": ["main.c"]}))
    return root


@pytest.mark.petsc
@pytest.mark.slow
def test_a_program_printing_the_published_answers_fails_the_held_out_cases(tmp_path):
    tree = hardcoded_tree(tmp_path / "tree")
    out = tmp_path / "c"
    every_case = profile_file("quick-every-held-out-case", held_out_cases=None)  # quick runs one
    proc = hpcbench("run", "--profile", str(every_case), "--submissions", str(tree),
                    "--problems", "vec-scatter,robertson,rosenbrock", "--out", str(out),
                    "--held-out-seed", "5", check=False)
    assert proc.returncode == 0, proc.stderr
    assert "held-out cases: 9 drawn with seed 5" in proc.stderr
    from hpcbench.store.scorings import read_scoring

    rows = read_scoring(out, evidence=True).rows
    for r in rows:
        acc = r["evaluators"]["numerical_accuracy"]
        details = acc["evidence"]["details"]
        public = [d for d in details if not d.get("held_out")]
        held = [d for d in details if d.get("held_out")]
        assert held, r["problem"]
        if r["agent"] == "reference":
            assert acc["score"] == 1.0, acc["rationale"]
            continue
        # positive control: the public cases alone are fooled, as they were before held-out cases
        assert all(d["score"] == 1.0 for d in public), public
        # every compare at a held-out case fails; a sanity bound true at any draw (rosenbrock's objective
        # at its minimum is 0 whatever -scale says) may hold for published answers too
        compares = [d for d in held if d["check"].startswith("compare:")]
        assert compares and all(d["score"] == 0.0 for d in compares), held
        assert acc["score"] < 0.5, acc["rationale"]
        assert "held-out case held-out-1" in acc["rationale"]
    report = json.loads(hpcbench("report", str(out), "--format", "json").stdout)["submissions"]
    assert {r["stop_reason"] for r in report if r["agent"] == "hardcoder"} == {"wrong answer (held-out case)"}
    # the drawn values are in the snapshot and campaign.h5, never in problem.json
    snap = json.loads((out / "snapshot" / "held_out.json").read_text())
    assert snap["seed"] == 5 and set(snap["problems"]) == {"vec-scatter", "robertson", "rosenbrock"}
    import h5py

    with h5py.File(out / "campaign.h5") as f:
        assert json.loads(f["held_out"][()]) == snap


# ------------------------------------------------------------------------------------------------
# The valid variants of each validate-checks library at the draws where bench/held_out_variants.py
# measured them farthest from the reference (20 seeds or more, PETSc 3.26.1): each passes every
# held-out check there. Before the held-out tolerances were sized on these variants, advection1d's
# Crank-Nicolson failed the mass check at seed 15 (2.4x its tolerance) and BDF2 sat at the edge of
# u_quarters at seed 9, and allen-cahn-imex's error control at 1e-7 was 6.7x u_points' tolerance at
# seed 5 (a point where u = 0.027, judged relative only): whether a valid program earned a tier
# depended on the draw.
# (2026-12-07: error control at 1e-7 is no longer a valid variant, 3.4e-6 relative off at a point
# where the task allows 1e-6; BDF3, the farthest left, takes its place.)

FARTHEST = {"advection1d": [("crank-nicolson", 15), ("bdf2", 9)], "robertson": [("task-tolerance", 11)],
            "allen-cahn-imex": [("bdf3", 5)]}


def variant_at_draw(pid: str, name: str, seed: int, workdir) -> list[str]:
    """Build `pid`'s reference and its library's valid variant `name`, run both at the held-out
    cases of `seed` and score the variant with the held-out compare checks; the failures."""
    from hpcbench.validation.library import apply_edits, load_library
    from tests.petsc_tools import build, quantities, run

    bundle = PROBLEMS[pid]
    lib = load_library(bundle, "checks")
    index, prog = next((i, p) for i, p in enumerate(lib.valid) if p.name == name)
    src = workdir / f"{pid}-{name}-src"
    src.mkdir()
    for fname, text in apply_edits(bundle, "checks", prog, f"valid[{index}]").items():
        (src / fname).write_text(text)
    ref = build(bundle.reference_dir, workdir / f"{pid}-reference")
    binary = build(src, workdir / f"{pid}-{name}")
    failures = []
    for r in [r for r in case_runs(bundle.problem, [], draw(bundle.problem, seed)) if r.case.startswith("held-out-")]:
        want = quantities(run(ref, r.args, ranks=r.ranks, timeout=r.time_limit_s * 4))
        got = quantities(run(binary, [*prog.args, *r.args], ranks=r.ranks, timeout=r.time_limit_s * 4))
        for chk in held_out_checks(pid):
            score, why = compare_score(got[chk.quantity], want[chk.quantity], chk, case_factor(chk, r.args))
            if score < 1.0:
                failures.append(f"{name} seed {seed} {' '.join(r.args)}: {chk.quantity}: {why}")
    return failures


@pytest.mark.petsc
@pytest.mark.slow
@pytest.mark.parametrize("pid,name,seed", [(p, n, s) for p, v in FARTHEST.items() for n, s in v])
def test_valid_variants_pass_the_held_out_checks_where_they_are_farthest(pid, name, seed, tmp_path):
    failures = variant_at_draw(pid, name, seed, tmp_path)
    assert not failures, "\n".join(failures)
