"""bratu-fold's reference against sources that do not depend on it: the same five-point
discretisation solved here with scipy, the fold found by another method (Newton on the
bordered system F(u, lambda) = 0, J(u, lambda) v = 0, c.v = 1, which lands on the fold
directly instead of approaching it by continuation), and the unit square's fold of the
continuous problem as published: lambda* = 6.80812 (J. Karkowski, "Numerical experiments
with the Bratu equation in one, two and three dimensions", Comp. Appl. Math. 32 (2013)
231-244; PETSc's snes/tutorials/ex5.c allows 0 <= lambda <= 6.81 for it). A wrong reference caps
every correct answer, so these tests must fail when it is wrong."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from hpcbench.problem import load_problems
from tests.petsc_tools import build, quantities, run

pytestmark = pytest.mark.petsc
PROBLEM = load_problems()["bratu-fold"]


def laplacian(n: int, w: int, ky: float = 1.0) -> sp.csc_matrix:
    """Five-point -(d_xx + ky d_yy) on the interior points of the (w n + 1) x (n + 1) grid, h = 1/n."""
    h = 1.0 / n

    def second(m: int) -> sp.spmatrix:
        return sp.diags([-np.ones(m - 1), 2 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1]) / h**2

    nx, ny = w * n - 1, n - 1
    return (sp.kron(sp.eye(ny), second(nx)) + ky * sp.kron(second(ny), sp.eye(nx))).tocsc()


def newton(A: sp.csc_matrix, lam: float, u: np.ndarray) -> np.ndarray:
    # stop on the step, not on |F|: F's rows carry 1/h^2, so its round-off floor (about
    # 1e-11 at n = 32) is above any fixed absolute bound on finer or wider grids
    for _ in range(40):
        F = A @ u - lam * np.exp(u)
        du = spla.spsolve((A - sp.diags(lam * np.exp(u))).tocsc(), -F)
        u = u + du
        if np.linalg.norm(du) <= 1e-13 * max(1.0, float(np.linalg.norm(u))):
            return u
    raise AssertionError(f"Newton did not converge at lambda = {lam}")


def fold(A: sp.csc_matrix) -> float:
    """The fold by Newton on the bordered system in (u, v, lambda), from the branch at 2.5."""
    m = A.shape[0]
    lam, u, v, c = 2.5, newton(A, 2.5, np.zeros(m)), np.ones(m), np.ones(m) / m
    for _ in range(60):
        e = np.exp(u)
        J = (A - sp.diags(lam * e)).tocsc()
        M = sp.bmat([[J, None, -e[:, None]],
                     [-sp.diags(lam * e * v), J, -(e * v)[:, None]],
                     [None, c[None, :], None]]).tocsc()
        d = spla.spsolve(M, -np.concatenate([A @ u - lam * e, J @ v, [c @ v - 1]]))
        u, v, lam = u + d[:m], v + d[m:2 * m], lam + d[-1]
        if np.abs(d).max() < 1e-12:
            return float(lam)
    raise AssertionError("bordered Newton did not converge")


def independent(n: int, w: int, ky: float = 1.0) -> dict[str, float]:
    A = laplacian(n, w, ky)
    lam = fold(A)
    u = newton(A, 0.99 * lam, np.zeros(A.shape[0]))
    # boundary points hold u = 0: they add nothing to the max (u > 0 inside) or the norm
    return {"lambda_fold": lam, "umax": float(u.max()), "unorm": float(np.linalg.norm(u) / n)}


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    return build(PROBLEM.reference_dir, tmp_path_factory.mktemp("bratu"))


# -ky (the coefficient of u_yy, drawn in the held-out and performance cases so that their
# answers cannot be tabulated by -n and -w: issue 33) off its default too
@pytest.mark.parametrize("n,w,ranks,ky", [(8, 2, 1, 1.0), (16, 1, 2, 1.0), (16, 3, 1, 0.6789)])
def test_reference_matches_the_bordered_system_solved_with_scipy(binary, n, w, ranks, ky):
    q = quantities(run(binary, ["-n", str(n), "-w", str(w)] + (["-ky", f"{ky}"] if ky != 1.0 else []), ranks=ranks))
    ind = independent(n, w, ky)
    assert q["lambda_fold"][0] == pytest.approx(ind["lambda_fold"], rel=1e-8)
    assert q["umax"][0] == pytest.approx(ind["umax"], rel=1e-7)
    assert q["unorm"][0] == pytest.approx(ind["unorm"], rel=1e-7)


def test_unit_square_fold_extrapolates_to_the_published_value(binary):
    """Second-order convergence: Richardson from h = 1/16 and 1/32 gives the continuous
    lambda* of the unit square to 1e-5; the 2 x 1 rectangle's fold is well below it."""
    f16 = quantities(run(binary, ["-n", "16", "-w", "1"]))["lambda_fold"][0]
    f32 = quantities(run(binary, ["-n", "32", "-w", "1"]))["lambda_fold"][0]
    assert f32 + (f32 - f16) / 3 == pytest.approx(6.80812, abs=1e-4)
    assert quantities(run(binary, ["-n", "16"]))["lambda_fold"][0] < 4.3


def test_reference_fails_loudly_when_newton_cannot_converge(binary):
    import os
    import subprocess

    from hpcbench.jobs.launch import mpi_env

    proc = subprocess.run(["mpiexec", "-n", "1", str(binary), "-n", "8", "-snes_max_it", "1"], capture_output=True,
                          text=True, timeout=120, cwd=binary.parent, env={**os.environ, **mpi_env()})
    assert proc.returncode != 0 and "lambda_fold" not in proc.stdout
