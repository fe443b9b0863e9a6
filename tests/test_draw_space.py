"""The drawn cases cannot be tabulated (issue 33): a performance or held-out case drawn from a
small set of argument strings lets a program embed the answer for each and skip the solve in
the timed runs (bratu-fold's -n 37-42 and stokes-fieldsplit's -n 90-102 were 6 and 7 values;
a real of 3 significant digits over 260-360 is 101). And a drawn case whose answer barely moves
over the range lets the public nominal case's answer pass: advection1d's -a drew either sign
around the nominal 1, and printing the nominal answers passed at positive draws within about
0.08 of it. Planning and recorded figures only; no PETSc run."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from hpcbench.evaluators.metrics.execution_time import factor_to_pass, perf_checks
from hpcbench.evaluators.output_contract import parse_quantities
from hpcbench.plan.param_draw import UNBOUNDED, draw_value, space_size, value_count
from hpcbench.plan.perf_draw import draw_performance, option_values, performance_args
from hpcbench.problem import HeldOutParam, load_problems
from tests.test_perf_draw import AT_A_DRAW

PROBLEMS = load_problems()
# Fewer different cases than this and a table of offline solves is practical
SMALL = 1000
# (problem, "performance" or "held_out") -> why its small draw space is acceptable; none is now
# The held-out cases judge correctness at inputs the program has not seen, and a table of right
# answers for every size is a right program's output there (a judge reads the table); what a
# table buys is skipping the work where it is timed, and the performance case draws a real for
# that. A real in the held-out draw as well moved the library's edge-only programs' regions from
# one parameter's band to a joint region the per-parameter stratification does not cover.
_SIZES_ALONE = "held-out draws keep the sizes alone (the performance case draws {opt}): {why}"
EXEMPT: dict[tuple[str, str], str] = {
    ("bratu-fold", "held_out"): _SIZES_ALONE.format(
        opt="-ky", why="continuation-from-3-7 is wrong where the fold is below 3.7, w = 4 at ky 1 "
                       "but w >= 2 below ky 0.83 (lambda* at -n 17 measured over w 1-4, ky 0.5-2)"),
    ("stokes-fieldsplit", "held_out"): _SIZES_ALONE.format(
        opt="-k", why="schur-diag's outer iterations pass the task's 60 at n 100-130 for k = 1, "
                      "not at every drawn k (test_edge_only failed with -k drawn 1.2-3)"),
}


def _spaces() -> dict[tuple[str, str], int]:
    out = {}
    for pid, b in PROBLEMS.items():
        for name, section in (("performance", b.problem.performance), ("held_out", b.problem.held_out)):
            if section is not None and section.params:
                out[(pid, name)] = space_size(list(section.params))
    return out


def test_no_drawn_case_comes_from_a_small_set_without_a_stated_reason():
    spaces = _spaces()
    small = {k: v for k, v in spaces.items() if v < SMALL and k not in EXEMPT}
    assert not small, ("drawn from fewer than 1000 argument combinations (a program can tabulate the "
                       f"answers): {small}; draw a real the task states, widen the ranges or raise `digits`")
    for key, why in EXEMPT.items():
        assert why.strip(), f"{key}: an exemption must say why"
        assert spaces.get(key, SMALL) < SMALL, f"{key}: exempt but no longer small: drop the exemption"
    # every problem with a performance case draws it (tests/test_perf_draw.py says which options)
    assert {pid for pid, _ in spaces} >= {pid for pid, b in PROBLEMS.items() if b.problem.performance}


def test_value_count_counts_what_the_draw_can_give():
    def p(**kw) -> HeldOutParam:
        return HeldOutParam(option="-x", **kw)

    assert value_count(p(kind="int", min=37, max=42)) == 6
    assert value_count(p(kind="int", min=90, max=102, multiple_of=2)) == 7
    assert value_count(p(kind="real", min=260, max=360, digits=3)) == 101
    assert value_count(p(kind="real", min=0.88, max=1.12, digits=3, either_sign=True)) == 2 * (12 + 121)
    assert value_count(p(kind="real", min=-1.12, max=-0.88, digits=4)) == 1200 + 121
    assert value_count(p(kind="real", min=6e10, max=4e11, log=True, digits=3)) == 400 + 301
    assert value_count(p(kind="real", min=-1, max=1)) == UNBOUNDED
    # the count is what the draw reaches: every value drawn is one of them, and a small range's
    # every value turns up
    for q in (p(kind="real", min=0.88, max=1.12, digits=2, either_sign=True),
              p(kind="real", min=5, max=80, log=True, digits=2), p(kind="int", min=16, max=40, multiple_of=4)):
        rng = random.Random(7)
        seen = {draw_value(q, rng) for _ in range(4000)}
        assert len(seen) == value_count(q), (q, sorted(seen, key=float))


# advection1d's performance case (-n 200000 -tfinal 1.4e-3): the answer is a function of the
# distance a T travelled (the exact solution is the initial profile shifted; the scheme at its
# fixed CFL 0.5 step is too), and the cost is proportional to |a| T, so at the same cost only
# the direction of travel moves it by much. A model of the reference's scheme (first-order upwind
# in space, exact per Fourier mode; PETSc's SSP RK3 with 4 stages in time, whose stability
# polynomial is 1 + z + z^2/2 + z^3/6 + z^4/48) reproduces the reference's recorded answers, so
# the nominal answers can be judged at every value of the drawn range, not at a few seeds.
def advection_answers(n: int, a: float, tfinal: float) -> dict[str, list[float]]:
    h = 1.0 / n
    x = (np.arange(n) + 0.5) * h
    u0 = np.exp(-100 * (x - 0.3) ** 2) + 0.5 * np.sin(4 * np.pi * x)
    theta = 2 * np.pi * np.arange(n // 2 + 1) / n  # the real transform's modes
    lam = -(a / h) * (1 - np.exp(-1j * theta)) if a > 0 else -(a / h) * (np.exp(1j * theta) - 1)
    steps = math.ceil(tfinal / (0.5 * h / abs(a)) - 1e-12)
    z = lam * tfinal / steps
    u = np.fft.irfft(np.fft.rfft(u0) * (1 + z + z**2 / 2 + z**3 / 6 + z**4 / 48) ** steps, n)
    return {"mass": [h * u.sum()], "l2_norm": [math.sqrt(h * (u * u).sum())], "max_value": [float(u.max())],
            "moment": [h * (x * u).sum()], "u_quarters": [u[n // 4], u[n // 2], u[3 * n // 4]]}


def test_advection1d_nominal_answers_fail_at_every_drawn_case():
    """At the problem's own factor every value of the drawn -a range rejects the nominal answers
    (the reference's recorded output at the public `performance.args`) with at least 10x margin,
    where the old range (0.88-1.12, either sign) let them pass at about one draw in six."""
    b = PROBLEMS["advection1d"]
    perf = b.problem.performance
    assert perf is not None
    checks, k = perf_checks(b.checks), perf.tolerance_factor
    _, drawn, out = AT_A_DRAW["advection1d"]
    nominal = parse_quantities(out["nominal"])
    base = {o: float(v) for o, v in option_values(perf.args).items()}
    # the model is the reference: at the recorded draw and at the nominal case, within a
    # thousandth of the checks' tolerances
    at_draw = advection_answers(int(base["-n"]), float(drawn[1]), base["-tfinal"])
    assert factor_to_pass(at_draw, parse_quantities(out["reference"]), checks)[0] < 1e-3
    assert factor_to_pass(advection_answers(int(base["-n"]), base["-a"], base["-tfinal"]), nominal, checks)[0] < 1e-3
    # the hole it closes: at +1.03 (the old range) the nominal answers needed only 0.37 of the
    # stated tolerances (no arguments given: no scale applied)
    assert factor_to_pass(nominal, advection_answers(200000, 1.03, 1.4e-3), checks)[0] < 1

    (p,) = perf.params
    assert p.option == "-a" and not {"-n", "-tfinal"} & {q.option for q in perf.params}
    lo, hi = sorted((abs(p.min), abs(p.max)))
    grid = [s * m for m in np.linspace(lo, hi, 7) for s in ((1, -1) if p.either_sign else (math.copysign(1, p.min),))]
    seeds = [float(option_values(performance_args(b.problem, draw_performance(b.problem, s)))["-a"]) for s in range(4)]
    worst = min(factor_to_pass(nominal, advection_answers(int(base["-n"]), a, base["-tfinal"]), checks)[0]
                for a in grid + seeds)
    assert worst >= 10 * k, f"the nominal answers need only {worst:.3g} x the tolerances at some draw"


def test_advection1d_answers_tabulated_at_a_neighbouring_drawable_velocity_fail():
    """The answer depends on a T alone and barely moves over the drawn -a, so at the stated
    tolerances two offline answers (-0.94 and -1.06) passed at every draw. The held-out checks'
    tolerances scale with -n (CompareCheck.scale: 2.4e-4 of the stated at the performance case's
    -n 200000) and the performance case takes 0.01 of that (problem.json tolerance_factor; valid
    programs need at most 8e-5 there, BDF2, bench/perf_tolerance.py and this stop's note): the answer
    at the drawable value next to the drawn one (4 digits: 1e-4 apart below |a| 1, 1e-3 above) fails,
    so a table must hold every drawable value (1,321), while the exact answer passes."""
    b = PROBLEMS["advection1d"]
    perf = b.problem.performance
    assert perf is not None
    checks, k = perf_checks(b.checks), perf.tolerance_factor
    assert any(c.scale and c.scale.option == "-n" for c in checks)
    for drawn, neighbours in (("-0.9813", (-0.9812, -0.9814)), ("-1.012", (-1.011, -1.013))):
        args = performance_args(b.problem, ["-a", drawn])
        base = {o: float(v) for o, v in option_values(args).items()}
        truth = advection_answers(int(base["-n"]), float(drawn), base["-tfinal"])
        assert factor_to_pass(truth, truth, checks, args)[0] == 0.0
        near = [advection_answers(int(base["-n"]), a, base["-tfinal"]) for a in neighbours]
        needed = [factor_to_pass(t, truth, checks, args)[0] for t in near]
        assert min(needed) > 2 * k, (drawn, needed)
        # at the stated tolerances (no scale) a table every 0.05 passed
        unscaled = [c.model_copy(update={"scale": None}) for c in checks]
        coarse = advection_answers(int(base["-n"]), float(drawn) + 0.02, base["-tfinal"])
        assert factor_to_pass(coarse, truth, unscaled, args)[0] < 1


@pytest.mark.parametrize("pid", ["bratu-fold", "stokes-fieldsplit"])
def test_integer_sized_problems_draw_a_real_the_task_states(pid):
    """bratu-fold (-ky, the coefficient of u_yy) and stokes-fieldsplit (-k, the pressure's
    wavenumber in y) draw a real beside their sizes in the performance case (the held-out cases
    keep the sizes alone: EXEMPT), and their tasks state it (the program must accept it)."""
    prob = PROBLEMS[pid].problem
    option = {"bratu-fold": "-ky", "stokes-fieldsplit": "-k"}[pid]
    assert prob.performance is not None and prob.held_out is not None
    assert any(q.option == option and q.kind == "real" for q in prob.performance.params), pid
    assert f"option {option} <real>" in prob.task
    assert option in draw_performance(prob, 0)


def test_every_option_the_performance_case_draws_is_also_in_a_scored_case():
    """Before: bratu-fold's -ky and stokes-fieldsplit's -k were drawn in the performance case
    only, so a program that ignored them lost nothing but that case's answer check (a timing
    gate, not accuracy): every option the performance case draws must reach a published case
    with a value other than its default, or the held-out draw."""
    missing = {}
    for pid, b in PROBLEMS.items():
        perf = b.problem.performance
        if perf is None:
            continue
        held = {q.option for q in (b.problem.held_out.params if b.problem.held_out else [])}
        for q in perf.params:
            published = {c.args[i + 1] for c in b.problem.cases for i, a in enumerate(c.args[:-1])
                         if a == q.option}
            default = None if q.default is None else {f"{q.default:g}", str(q.default)}
            if q.option not in held and not (published - (default or set())):
                missing[pid] = q.option
    assert not missing, f"drawn in the performance case only, never in a scored case: {missing}"
