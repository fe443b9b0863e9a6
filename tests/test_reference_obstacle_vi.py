"""obstacle-vi's reference against a source that does not depend on it: the same discrete
complementarity problem solved here by the primal-dual active-set method (Hintermueller,
Ito and Kunisch, SIAM J. Optim. 13 (2003) 865-888) with numpy/scipy, which terminates with
the exact discrete solution for this M-matrix problem; and the constraint and complementarity
checked on that solution. A wrong reference caps every correct answer, so these tests must
fail when it is wrong."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from hpcbench.problem import load_problems
from tests.petsc_tools import build, quantities, run

pytestmark = pytest.mark.petsc
PROBLEM = load_problems()["obstacle-vi"]


def dome(x, y):
    return 0.3 - 4.0 * ((x - 0.6) ** 2 + (y - 0.5) ** 2)


def pdas(n: int, load: float) -> dict:
    """Interior unknowns; A = -lap_h; find u >= psi, r = A u + L >= 0, r (u - psi) = 0."""
    h, m = 1.0 / n, n - 1
    T = sp.diags([-np.ones(m - 1), 2 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
    A = ((sp.kron(sp.eye(m), T) + sp.kron(T, sp.eye(m))) / h**2).tocsr()
    g = np.arange(1, n) * h
    X, Y = np.meshgrid(g, g, indexing="xy")  # row j (y), column i (x)
    psi = dome(X, Y).ravel()
    b = -load * np.ones(m * m)
    u, lam = np.maximum(np.zeros(m * m), psi), np.zeros(m * m)
    active = None
    for _ in range(200):
        new = lam + 1.0 * (psi - u) > 0
        if active is not None and np.array_equal(new, active):
            break
        active = new
        free = ~active
        u = psi.copy()
        rhs = b[free] - A[free][:, active] @ psi[active]
        u[free] = spla.spsolve(A[free][:, free].tocsc(), rhs)
        lam = A @ u - b
        lam[free] = 0.0
    r = A @ u - b
    assert np.all(u >= psi - 1e-12) and np.all(r >= -1e-8) and np.abs(r * (u - psi)).max() < 1e-8
    U = u.reshape(m, m)
    line = [U[n // 2 - 1, k * n // 10 - 1] for k in range(1, 10)]
    return {"u_line": line, "u_l2": h * float(np.linalg.norm(u)), "contact_force": h * h * float(r.sum()),
            "contact_points": int(active.sum())}


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    return build(PROBLEM.reference_dir, tmp_path_factory.mktemp("obstacle"))


@pytest.mark.parametrize("n,load,ranks", [(20, 4.0, 1), (40, 8.0, 2), (40, 1.0, 1)])
def test_reference_matches_a_primal_dual_active_set_solve(binary, n, load, ranks):
    q = quantities(run(binary, ["-n", str(n), "-load", str(load)], ranks=ranks))
    ind = pdas(n, load)
    assert ind["contact_points"] > 10  # the dome really is touched
    np.testing.assert_allclose(q["u_line"], ind["u_line"], rtol=1e-8, atol=1e-11)
    assert q["u_l2"][0] == pytest.approx(ind["u_l2"], rel=1e-9)
    assert q["contact_force"][0] == pytest.approx(ind["contact_force"], rel=1e-7)


def test_clipping_the_free_membrane_is_not_the_solution():
    """What the problem tests: the free membrane clipped to the dome differs from the
    constrained one off the contact set (the sample 'clipping' program's mistake)."""
    n, h = 40, 1.0 / 40
    m = n - 1
    T = sp.diags([-np.ones(m - 1), 2 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1])
    A = ((sp.kron(sp.eye(m), T) + sp.kron(T, sp.eye(m))) / h**2).tocsc()
    g = np.arange(1, n) * h
    X, Y = np.meshgrid(g, g, indexing="xy")
    clipped = np.maximum(spla.spsolve(A, -4.0 * np.ones(m * m)), dome(X, Y).ravel()).reshape(m, m)
    right = pdas(n, 4.0)["u_line"]
    got = [clipped[n // 2 - 1, k * n // 10 - 1] for k in range(1, 10)]
    assert max(abs(a - b) for a, b in zip(got, right)) > 1e-2
