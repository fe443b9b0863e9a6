"""elasticity-gamg's reference against sources that do not depend on it: the same Q1
discretisation assembled here with numpy in Voigt notation (strain-displacement matrix B and
the isotropic 6 x 6 elasticity matrix D, rather than the reference's index formula) and solved
directly with scipy; Euler-Bernoulli/Timoshenko beam theory for the size of the sag; and the
iteration counts the problem's checks rest on (flat with the rigid-body near-null space, growing
without it). A wrong reference caps every correct answer, so these tests must fail when it is
wrong."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from hpcbench.problem import load_problems
from tests.petsc_tools import build, quantities, run

pytestmark = pytest.mark.petsc
PROBLEM = load_problems()["elasticity-gamg"]
E = 1000.0


def element_stiffness(nu: float, h: float) -> np.ndarray:
    lam, mu = E * nu / ((1 + nu) * (1 - 2 * nu)), E / (2 * (1 + nu))
    D = np.zeros((6, 6))
    D[:3, :3] = lam
    D[range(3), range(3)] += 2 * mu
    D[range(3, 6), range(3, 6)] = mu
    corners = list(itertools.product((0, 1), repeat=3))  # (iz, iy, ix) -> node ix + 2 iy + 4 iz below
    nodes = [(c[2], c[1], c[0]) for c in corners]
    K = np.zeros((24, 24))
    gauss = (0.5 - 0.5 / np.sqrt(3), 0.5 + 0.5 / np.sqrt(3))
    for xi in itertools.product(gauss, repeat=3):
        B = np.zeros((6, 24))
        for a, s in enumerate(nodes):
            f = [xi[d] if s[d] else 1 - xi[d] for d in range(3)]
            df = [1.0 if s[d] else -1.0 for d in range(3)]
            g = np.array([df[0] * f[1] * f[2], f[0] * df[1] * f[2], f[0] * f[1] * df[2]]) / h
            B[0, 3 * a], B[1, 3 * a + 1], B[2, 3 * a + 2] = g
            B[3, 3 * a + 1], B[3, 3 * a + 2] = g[2], g[1]  # gamma_yz
            B[4, 3 * a], B[4, 3 * a + 2] = g[2], g[0]  # gamma_xz
            B[5, 3 * a], B[5, 3 * a + 1] = g[1], g[0]  # gamma_xy
        K += B.T @ D @ B * h**3 / 8
    return K


def beam(n: int, nu: float) -> dict[str, float]:
    h = 1.0 / n
    nx, ny, nz = 4 * n + 1, n + 1, n + 1

    def node(i, j, k):
        return i + nx * (j + ny * k)

    Ke = element_stiffness(nu, h)
    rows, cols, vals = [], [], []
    f = np.zeros(3 * nx * ny * nz)
    for k, j, i in itertools.product(range(nz - 1), range(ny - 1), range(nx - 1)):
        ids = [node(i + (a & 1), j + ((a >> 1) & 1), k + ((a >> 2) & 1)) for a in range(8)]
        dofs = np.array([3 * d + c for d in ids for c in range(3)])
        rows.append(np.repeat(dofs, 24))
        cols.append(np.tile(dofs, 24))
        vals.append(Ke.ravel())
        f[dofs[2::3]] -= h**3 / 8
    N = 3 * nx * ny * nz
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(N, N))
    clamped = np.zeros(N, dtype=bool)
    for k, j in itertools.product(range(nz), range(ny)):
        clamped[3 * node(0, j, k):3 * node(0, j, k) + 3] = True
    free = ~clamped
    u = np.zeros(N)
    u[free] = spla.spsolve(A[free][:, free].tocsc(), f[free])
    return {"tip_uz": float(u[3 * node(4 * n, n // 2, n // 2) + 2]), "compliance": float(f @ u)}


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    return build(PROBLEM.reference_dir, tmp_path_factory.mktemp("elasticity"))


@pytest.mark.parametrize("n,nu,ranks", [(2, 0.3, 1), (4, 0.45, 2), (4, 0.0, 1)])
def test_reference_matches_an_independent_voigt_assembly_and_direct_solve(binary, n, nu, ranks):
    q = quantities(run(binary, ["-n", str(n), "-nu", str(nu)], ranks=ranks))
    ind = beam(n, nu)
    assert q["tip_uz"][0] == pytest.approx(ind["tip_uz"], rel=1e-7)
    assert q["compliance"][0] == pytest.approx(ind["compliance"], rel=1e-7)


def test_the_sag_is_what_beam_theory_gives():
    """Euler-Bernoulli tip deflection q L^4 / (8 E I) = 0.384 for q = 1, L = 4, I = 1/12, plus
    Timoshenko's shear term q L^2 / (2 k G A) = 0.050: about 0.43; trilinear elements are too
    stiff in bending on coarse meshes and approach it from below."""
    sag = [-beam(n, 0.3)["tip_uz"] for n in (2, 4)]
    assert 0.30 < sag[0] < sag[1] < 0.45


def test_iterations_stay_flat_with_the_rigid_body_modes_and_grow_without(binary, tmp_path):
    """What the iteration checks rest on: GAMG given the near-null space stays within the
    task's bounds; the same solver without it (MatSetNearNullSpace left out) exceeds them."""
    its = [int(quantities(run(binary, ["-n", str(n)]))["iterations"][0]) for n in (2, 4, 8)]
    assert max(its) <= 25 and its[2] - its[0] <= 5, its
    src = (PROBLEM.reference_dir / "main.c").read_text()
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "main.c").write_text(src.replace("  PetscCall(MatSetNearNullSpace(A, rigid));\n", ""))
    blind = build(bare, tmp_path / "bare-build")
    blind_its = [int(quantities(run(blind, ["-n", str(n)]))["iterations"][0]) for n in (4, 8)]
    assert blind_its[1] > 30 and blind_its[1] > blind_its[0], blind_its
    nu45 = int(quantities(run(blind, ["-n", "8", "-nu", "0.45"]))["iterations"][0])
    assert nu45 > 60, nu45
