"""Each reference checked against a source that does not depend on it: a wrong
reference would cap every correct answer, so these must fail when it is wrong."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import minimize

from hpcbench.problem import load_problems
from tests.petsc_tools import build, quantities, run

pytestmark = pytest.mark.petsc
PROBLEMS = load_problems()


@pytest.fixture(scope="module")
def binaries(tmp_path_factory):
    out = {}
    for pid in ("rosenbrock", "robertson", "vec-scatter"):
        out[pid] = build(PROBLEMS[pid].reference_dir, tmp_path_factory.mktemp(pid))
    return out


def run_fails(binary, args: list[str], ranks: int = 1) -> str:
    """Run a reference that must refuse to print a result; return its stderr."""
    import os
    import subprocess

    from hpcbench.jobs.launch import mpi_env

    cmd = ["mpiexec", "-n", str(ranks), "--oversubscribe", str(binary), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=binary.parent,
                          env={**os.environ, **mpi_env()})
    assert proc.returncode != 0, f"{cmd} printed a result it must refuse:\n{proc.stdout}"
    assert not quantities(proc.stdout), f"{cmd} failed but still printed quantities:\n{proc.stdout}"
    return proc.stdout + proc.stderr


def _rosenbrock(x, alpha: float, scale: float = 1.0) -> float:
    """The task's f: the chained Rosenbrock function of y = x / scale."""
    y = np.asarray(x) / scale
    return float(np.sum(alpha * (y[1:] - y[:-1] ** 2) ** 2 + (1 - y[:-1]) ** 2))


# (n, alpha, scale): the published cases (scale 1, the option left out) and a held-out-like draw
ROSENBROCK_ARGS = ((6, 50.0, 1.0), (20, 80.0, 1.0), (12, 98.3, 1.77))


def _rosenbrock_args(n: int, alpha: float, scale: float) -> list[str]:
    return ["-n", str(n), "-alpha", str(alpha)] + (["-scale", str(scale)] if scale != 1.0 else [])


def test_rosenbrock_reaches_the_known_minimiser_and_agrees_with_scipy(binaries):
    for n, alpha, scale in ROSENBROCK_ARGS:
        q = quantities(run(binaries["rosenbrock"], _rosenbrock_args(n, alpha, scale)))
        x0 = np.zeros(n)  # the task's start point
        sp = minimize(_rosenbrock, x0, args=(alpha, scale), method="BFGS",
                      options={"gtol": 1e-10, "maxiter": 20000}).x
        np.testing.assert_allclose(q["solution"], np.full(n, scale), atol=1e-6)  # x_i = s: the scale moves it
        np.testing.assert_allclose(q["solution"], sp, atol=1e-4)
        assert abs(q["objective"][0]) < 1e-10


@pytest.mark.parametrize("tao_type", ["nls", "bnls", "bntr", "tron", "lmvm", "cg"])
def test_rosenbrock_every_kind_of_method_reaches_the_global_minimiser(binaries, tao_type):
    """Newton line search, trust region, quasi-Newton and CG from the task's start point: the
    old start (-1.2, 1, ...) sent Newton methods to the local minimiser (f = 3.96) or stalled them."""
    for n, alpha, scale in ROSENBROCK_ARGS:
        q = quantities(run(binaries["rosenbrock"], [*_rosenbrock_args(n, alpha, scale), "-tao_type", tao_type]))
        np.testing.assert_allclose(q["solution"], np.full(n, scale), atol=1e-6, err_msg=tao_type)


def test_chained_rosenbrock_has_the_local_minimum_the_task_warns_of():
    """The task tells solvers a local minimiser exists near x_0 = -s with f close to 4: check it."""
    for n, alpha, fmin in ((6, 50.0, 3.9605), (20, 80.0, 3.9833)):
        for scale in (1.0, 1.77):
            x0 = scale * np.array([-1.0] + [1.0] * (n - 1))
            local = minimize(_rosenbrock, x0, args=(alpha, scale), method="BFGS", options={"gtol": 1e-10}).x
            assert local[0] < -0.9 * scale and _rosenbrock(local, alpha, scale) == pytest.approx(fmin, abs=1e-3)
            glob = minimize(_rosenbrock, np.zeros(n), args=(alpha, scale), method="BFGS", options={"gtol": 1e-10}).x
            assert _rosenbrock(glob, alpha, scale) < 1e-10


def test_references_fail_loudly_instead_of_printing_an_unconverged_result(binaries, tmp_path):
    err = run_fails(binaries["rosenbrock"], ["-n", "20", "-alpha", "80", "-tao_max_it", "3"])
    assert "did not converge" in err
    err = run_fails(binaries["robertson"], ["-tfinal", "40", "-ts_max_steps", "10"])
    assert "not at -tfinal" in err
    err = run_fails(binaries["vec-scatter"], ["-n", "30"], ranks=2)
    assert "exactly 3 MPI ranks" in err
    adv = build(PROBLEMS["advection1d"].reference_dir, tmp_path / "adv")
    # (PETSc 3.26's adaptive -ts_type rk ran out of steps at t = 0.794 and printed a result 4% off)
    err = run_fails(adv, ["-n", "200", "-ts_max_steps", "10"])
    assert "not at -tfinal" in err


def _robertson(t, y):
    return [-0.04 * y[0] + 1e4 * y[1] * y[2], 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2, 3e7 * y[1] ** 2]


def _jac(t, y):
    return [[-0.04, 1e4 * y[2], 1e4 * y[1]], [0.04, -1e4 * y[2] - 6e7 * y[1], -1e4 * y[1]], [0, 6e7 * y[1], 0]]


def test_robertson_agrees_with_a_tightly_converged_stiff_integrator(binaries):
    for tf in (40.0, 4e4):
        q = quantities(run(binaries["robertson"], ["-tfinal", str(tf)]))["y_final"]
        sol = solve_ivp(_robertson, (0, tf), [1.0, 0.0, 0.0], method="Radau", jac=_jac, rtol=1e-12, atol=1e-16)
        exact = sol.y[:, -1]
        # well inside the hidden check's rtol of 1e-5
        np.testing.assert_allclose(q, exact, rtol=2e-6, atol=1e-12)
        assert abs(sum(q) - 1.0) < 1e-9


def test_vec_scatter_matches_the_closed_form(binaries):
    for n, alpha in ((30, 2.5), (1000, -0.75)):
        q = quantities(run(binaries["vec-scatter"], ["-n", str(n), "-alpha", str(alpha)], ranks=3))
        i = np.arange(n)
        x = alpha * (np.sin(0.3 * i) + i / n)
        np.testing.assert_allclose(q["sum"], [x.sum()], rtol=1e-10)
        np.testing.assert_allclose(q["norm2"], [np.linalg.norm(x)], rtol=1e-10)
        np.testing.assert_allclose(q["first_last"], [x[0], x[-1]], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(q["weighted_sum"], [((i + 1) * x).sum()], rtol=1e-10)


def test_literal_check_values_match_the_closed_form():
    chk = PROBLEMS["vec-scatter"].checks.checks[0]
    i = np.arange(30)
    assert chk.reference.value[0] == pytest.approx(float((2.5 * (np.sin(0.3 * i) + i / 30)).sum()), rel=1e-14)
    cases = {c.name: c.args for c in PROBLEMS["vec-scatter"].problem.cases}
    weighted = [c for c in PROBLEMS["vec-scatter"].checks.checks
                if c.quantity == "weighted_sum" and c.reference.source == "literal"]
    assert len(weighted) == 2
    for chk in weighted:
        args = cases[chk.cases[0]]
        n = int(args[args.index("-n") + 1])
        alpha = float(args[args.index("-alpha") + 1]) if "-alpha" in args else 2.5
        i = np.arange(n)
        want = float(((i + 1) * alpha * (np.sin(0.3 * i) + i / n)).sum())
        assert chk.reference.value[0] == pytest.approx(want, rel=1e-13)


def _upwind_ssp3(n, a, tfinal):
    """The same scheme in numpy: upwind finite volumes, Shu-Osher SSPRK3 at CFL 0.5."""
    h = 1.0 / n
    x = (np.arange(n) + 0.5) * h
    u = np.exp(-100 * (x - 0.3) ** 2) + 0.5 * np.sin(4 * np.pi * x)
    steps = int(np.ceil(tfinal / (0.5 * h / abs(a)) - 1e-12))
    dt = tfinal / steps

    def rhs(v):
        return -a * (v - np.roll(v, 1)) / h if a > 0 else -a * (np.roll(v, -1) - v) / h

    for _ in range(steps):
        u1 = u + dt * rhs(u)
        u2 = 0.75 * u + 0.25 * (u1 + dt * rhs(u1))
        u = u / 3 + 2 / 3 * (u2 + dt * rhs(u2))
    return {"mass": h * u.sum(), "l2_norm": np.sqrt(h * (u**2).sum()), "max_value": u.max(),
            "moment": h * (x * u).sum(), "u_quarters": u[[n // 4, n // 2, 3 * n // 4]]}


def test_advection_matches_numpy_and_converges_to_the_exact_profile(tmp_path):
    binary = build(PROBLEMS["advection1d"].reference_dir, tmp_path / "adv")
    for case in PROBLEMS["advection1d"].problem.cases:
        opts = dict(zip(case.args[::2], case.args[1::2]))
        n, a, tf = int(opts.get("-n", 200)), float(opts.get("-a", 1.0)), float(opts.get("-tfinal", 1.0))
        q = quantities(run(binary, case.args, ranks=2))
        want = _upwind_ssp3(n, a, tf)
        assert q["mass"][0] == pytest.approx(want["mass"], abs=1e-10)
        # numpy's SSPRK3 has 3 stages, the reference's 4: they agree to about 1e-6
        for name in ("l2_norm", "max_value", "moment"):
            assert q[name][0] == pytest.approx(want[name], rel=1e-4), (case.name, name)
        np.testing.assert_allclose(q["u_quarters"], want["u_quarters"], rtol=1e-4, atol=1e-5)
        # the direction of travel shows in the position-dependent quantities, not in the others
        back = _upwind_ssp3(n, -a, tf)
        assert back["l2_norm"] == pytest.approx(want["l2_norm"], rel=1e-12)
        assert abs(back["moment"] - want["moment"]) > 20 * 1e-3 * abs(want["moment"]), case.name
    # After one period the exact solution is the initial profile; upwind's error is
    # first order, so the gap in the L2 norm halves when the grid is refined.
    gaps = []
    for n in (200, 400, 800):
        x = (np.arange(n) + 0.5) / n
        exact = np.sqrt(np.mean((np.exp(-100 * (x - 0.3) ** 2) + 0.5 * np.sin(4 * np.pi * x)) ** 2))
        gaps.append(exact - quantities(run(binary, ["-n", str(n)]))["l2_norm"][0])
    assert all(g > 0 for g in gaps)
    assert 1.6 < gaps[0] / gaps[1] < 2.4 and 1.6 < gaps[1] / gaps[2] < 2.4, gaps
