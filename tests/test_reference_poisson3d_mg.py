"""poisson3d-mg's reference against sources that do not depend on it: the exact solution
the problem is manufactured from (second-order convergence of the error to it), and the same
finite-difference system assembled here with numpy/scipy on the interior points only and
solved directly. Also: the multigrid iteration count stays flat under refinement, and a
solver without a coarse-grid correction does not. A wrong reference caps every correct
answer, so these tests must fail when it is wrong."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from hpcbench.problem import load_problems
from tests.petsc_tools import build, quantities, run

pytestmark = pytest.mark.petsc
PROBLEM = load_problems()["poisson3d-mg"]


def exact(x, y, z):
    return np.exp(x + y) * np.sin(np.pi * z)


def coef(a, x, y, z):
    return 1.0 + a * (x + 2.0 * y * z)


def source(a, x, y, z):
    """-div(k grad u*) by the product rule, written out independently of the reference."""
    ux = uy = exact(x, y, z)
    uz = np.pi * np.exp(x + y) * np.cos(np.pi * z)
    lap = (2.0 - np.pi**2) * exact(x, y, z)
    return -(a * ux + 2 * a * z * uy + 2 * a * y * uz + coef(a, x, y, z) * lap)


def solve(n: int, a: float) -> dict[str, float]:
    h = 1.0 / n
    m = n - 1
    idx = np.arange(m**3).reshape(m, m, m)  # [i, j, k] of interior points 1..n-1
    rows, cols, vals = [], [], []
    b = np.zeros(m**3)
    g = np.arange(1, n) * h
    X, Y, Z = np.meshgrid(g, g, g, indexing="ij")
    b[:] = source(a, X, Y, Z).ravel() * h * h
    for axis in range(3):
        for sgn in (-1, 1):
            shift = np.zeros(3)
            shift[axis] = sgn * h
            kf = coef(a, X + shift[0] / 2, Y + shift[1] / 2, Z + shift[2] / 2)
            rows.append(idx.ravel())
            cols.append(idx.ravel())
            vals.append(kf.ravel())
            nb = np.stack(np.meshgrid(*[np.arange(1, n)] * 3, indexing="ij"), -1).reshape(-1, 3)
            nb[:, axis] += sgn
            inside = (nb[:, axis] >= 1) & (nb[:, axis] <= n - 1)
            src = idx.ravel()
            rows.append(src[inside])
            cols.append(idx[tuple((nb[inside] - 1).T)])
            vals.append(-kf.ravel()[inside])
            bx = nb[~inside] * h
            b[src[~inside]] += kf.ravel()[~inside] * exact(bx[:, 0], bx[:, 1], bx[:, 2])
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(m**3, m**3))
    u = spla.spsolve(A.tocsc(), b)
    err = np.abs(u - exact(X, Y, Z).ravel())
    # boundary points carry u* exactly: they add zeros to the max and the sum
    return {"err_max": float(err.max()), "err_l2": float(np.sqrt(h**3 * np.sum(err**2))),
            "u_centre": float(u[idx[n // 2 - 1, n // 2 - 1, n // 2 - 1]])}


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    return build(PROBLEM.reference_dir, tmp_path_factory.mktemp("poisson3d"))


@pytest.mark.parametrize("n,a,ranks", [(8, 1.0, 1), (16, 4.0, 2), (16, 0.0, 1)])
def test_reference_matches_an_independent_assembly_and_direct_solve(binary, n, a, ranks):
    q = quantities(run(binary, ["-n", str(n), "-a", str(a)], ranks=ranks))
    ind = solve(n, a)
    for name in ("err_max", "err_l2", "u_centre"):
        assert q[name][0] == pytest.approx(ind[name], rel=1e-7), name


def test_error_to_the_manufactured_solution_falls_at_second_order_with_flat_iterations(binary):
    got = [quantities(run(binary, ["-n", str(n)])) for n in (8, 16, 32)]
    l2 = [g["err_l2"][0] for g in got]
    assert 3.6 < l2[0] / l2[1] < 4.4 and 3.6 < l2[1] / l2[2] < 4.4, l2
    its = [int(g["iterations"][0]) for g in got]
    assert max(its) <= 15 and max(its) - min(its) <= 4, its
    assert got[2]["u_centre"][0] == pytest.approx(np.e * 1.0, rel=1e-3)  # u*(1/2,1/2,1/2) = e


def test_a_solver_without_coarse_grids_needs_ever_more_iterations(binary):
    """What the iteration check rests on: one-level smoothing (no coarse correction) grows with
    1/h and breaks the problem's bound of 25, while the reference stays flat."""
    its = [int(quantities(run(binary, ["-n", str(n), "-pc_type", "icc"]))["iterations"][0]) for n in (16, 32)]
    assert its[1] > 25 and its[1] > 1.5 * its[0], its
