"""allen-cahn-imex's reference against a source that does not depend on it: the same
semi-discrete system integrated here by scipy's Radau IIA (a fully implicit method, no
splitting) at a much tighter tolerance; and what the checks rest on: the energy decreases in
time (Allen-Cahn is the L2 gradient flow of the Ginzburg-Landau energy) and a loose tolerance
lands visibly off. A wrong reference caps every correct answer, so these tests must fail when
it is wrong."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.integrate import solve_ivp

from hpcbench.problem import load_problems
from tests.petsc_tools import build, quantities, run

pytestmark = pytest.mark.petsc
PROBLEM = load_problems()["allen-cahn-imex"]


def radau(n: int, eps: float, tfinal: float) -> dict:
    h = 1.0 / n
    g = np.arange(n) * h
    X, Y = np.meshgrid(g, g, indexing="xy")  # [j, i]
    u0 = (0.1 + 0.4 * np.cos(2 * np.pi * X) * np.cos(4 * np.pi * Y) + 0.2 * np.sin(2 * np.pi * (X + Y))).ravel()
    T = sp.diags([np.ones(n - 1), -2 * np.ones(n), np.ones(n - 1)], [-1, 0, 1]).tolil()
    T[0, n - 1] = T[n - 1, 0] = 1.0
    L = (sp.kron(sp.eye(n), T) + sp.kron(T, sp.eye(n))).tocsr() * (eps**2 / h**2)

    def rhs(t, u):
        return L @ u + u - u**3

    def jac(t, u):
        return (L + sp.diags(1 - 3 * u**2)).tocsc()

    sol = solve_ivp(rhs, (0, tfinal), u0, method="Radau", jac=jac, rtol=1e-11, atol=1e-12)
    assert sol.success
    u = sol.y[:, -1].reshape(n, n)
    dx, dy = np.roll(u, -1, axis=1) - u, np.roll(u, -1, axis=0) - u
    energy = float(np.sum(0.5 * eps**2 * (dx**2 + dy**2) + h * h * 0.25 * (u**2 - 1) ** 2))
    pts = [u[n // 2, n // 4], u[n // 4, n // 2], u[3 * n // 4, 3 * n // 4]]
    return {"energy": energy, "mean": float(h * h * u.sum()), "u_points": pts}


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    return build(PROBLEM.reference_dir, tmp_path_factory.mktemp("allen-cahn"))


@pytest.mark.parametrize("n,eps,tfinal,ranks", [(16, 0.05, 2.0, 1), (16, 0.08, 0.5, 2), (24, 0.05, 1.0, 1)])
def test_reference_matches_radau_on_the_same_semi_discrete_system(binary, n, eps, tfinal, ranks):
    args = ["-n", str(n), "-eps", str(eps), "-tfinal", str(tfinal)]
    q = quantities(run(binary, args, ranks=ranks))
    ind = radau(n, eps, tfinal)
    assert q["energy"][0] == pytest.approx(ind["energy"], rel=1e-7)
    assert q["mean"][0] == pytest.approx(ind["mean"], rel=1e-7)
    np.testing.assert_allclose(q["u_points"], ind["u_points"], rtol=1e-7)


def test_energy_decreases_and_a_loose_tolerance_misses_the_checks(binary):
    e = [quantities(run(binary, ["-n", "16", "-tfinal", str(t)]))["energy"][0] for t in (0.25, 1.0, 2.0)]
    assert e[0] > e[1] > e[2] > 0
    tight = quantities(run(binary, ["-n", "32"]))
    loose = quantities(run(binary, ["-n", "32", "-ts_rtol", "1e-4", "-ts_atol", "1e-4"]))
    # scored 0 by the n32 case's own u_points check (10x its tolerance or more)
    from hpcbench.evaluators.metrics.numerical_accuracy import compare_score

    chk = next(c for c in PROBLEM.checks.checks
               if c.kind == "compare" and c.quantity == "u_points" and c.cases == ["n32"])
    score, why = compare_score(loose["u_points"], tight["u_points"], chk)
    assert score == 0.0, why


def test_fully_implicit_methods_run_on_two_ranks_with_the_same_answer(binary):
    """TS adds the RHS Jacobian into the IJacobian for fully implicit methods; on 2 ranks that
    rebuilt the matrix and the next MatSetValuesStencil aborted (the reference now sets rows by
    global index). BDF and fully implicit ARK must run and agree with 1 rank."""
    for extra in (["-ts_arkimex_fully_implicit"], ["-ts_type", "bdf", "-ts_bdf_order", "3"]):
        one = quantities(run(binary, ["-n", "16", *extra]))
        two = quantities(run(binary, ["-n", "16", *extra], ranks=2))
        np.testing.assert_allclose(two["u_points"], one["u_points"], rtol=1e-8)
