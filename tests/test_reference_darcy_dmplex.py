"""darcy-dmplex's reference against sources that do not depend on it: a Q1
finite-element solve of the same problem written here with numpy/scipy on the
structured grid, and the exact solution p = 1 - x when the permeability is
uniform (Q1 reproduces linear fields exactly). A wrong reference caps every
correct answer, so these tests must fail when it is wrong."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from hpcbench.problem import load_problems
from tests.petsc_tools import build, quantities, run

pytestmark = pytest.mark.petsc
PROBLEM = load_problems()["darcy-dmplex"]
BOX = (0.25, 0.5, 0.5, 0.75)  # the inclusion, as problem.json states it

# Q1 reference-element quantities on the unit square cell, nodes counter-clockwise
# from the lower left; 2x2 Gauss points are exact for the bilinear products used.
_G = np.array([0.5 - 0.5 / np.sqrt(3.0), 0.5 + 0.5 / np.sqrt(3.0)])


def _shape(xi: float, eta: float) -> tuple[np.ndarray, np.ndarray]:
    n = np.array([(1 - xi) * (1 - eta), xi * (1 - eta), xi * eta, (1 - xi) * eta])
    dn = np.array([[-(1 - eta), -(1 - xi)], [1 - eta, -xi], [eta, xi], [-eta, 1 - xi]])
    return n, dn


def q1_darcy(n: int, kin: float) -> dict[str, float]:
    """Assemble and solve -div(K grad p) = 0 with p = 1 on x = 0, p = 0 on x = 1."""
    h = 1.0 / n
    nodes = (n + 1) ** 2
    ke = np.zeros((4, 4))
    for xi in _G:
        for eta in _G:
            _, dn = _shape(xi, eta)
            ke += 0.25 * dn @ dn.T  # (1/h)^2 gradients times h^2 area times weight 1/4
    rows, cols, vals = [], [], []
    kcell = np.ones((n, n))
    inside = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(n):
            xc, yc = (i + 0.5) * h, (j + 0.5) * h
            if BOX[0] < xc < BOX[1] and BOX[2] < yc < BOX[3]:
                kcell[i, j] = kin
                inside[i, j] = True
            dofs = [j * (n + 1) + i, j * (n + 1) + i + 1, (j + 1) * (n + 1) + i + 1, (j + 1) * (n + 1) + i]
            for a in range(4):
                for b in range(4):
                    rows.append(dofs[a])
                    cols.append(dofs[b])
                    vals.append(kcell[i, j] * ke[a, b])
    A = sp.csr_matrix((vals, (rows, cols)), shape=(nodes, nodes))
    xs = np.tile(np.arange(n + 1) * h, n + 1)
    fixed = np.isclose(xs, 0.0) | np.isclose(xs, 1.0)
    p = np.where(np.isclose(xs, 0.0), 1.0, 0.0)
    free = ~fixed
    rhs = -A[free][:, fixed] @ p[fixed]
    p[free] = spla.spsolve(A[free][:, free].tocsc(), rhs)
    energy = float(p @ (A @ p))
    # L2 norm and inclusion mean by the same exact 2x2 Gauss rule
    l2sq, incl = 0.0, 0.0
    for i in range(n):
        for j in range(n):
            dofs = [j * (n + 1) + i, j * (n + 1) + i + 1, (j + 1) * (n + 1) + i + 1, (j + 1) * (n + 1) + i]
            for xi in _G:
                for eta in _G:
                    nv, _ = _shape(xi, eta)
                    val = float(nv @ p[dofs])
                    l2sq += 0.25 * h * h * val * val
                    if inside[i, j]:
                        incl += 0.25 * h * h * val
    area = (BOX[1] - BOX[0]) * (BOX[3] - BOX[2])
    return {"energy": energy, "p_l2": float(np.sqrt(l2sq)), "inclusion_mean": incl / area}


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    return build(PROBLEM.reference_dir, tmp_path_factory.mktemp("darcy"))


def test_uniform_permeability_gives_the_exact_linear_pressure(binary):
    q = quantities(run(binary, ["-n", "8", "-kin", "1"]))
    assert q["energy"][0] == pytest.approx(1.0, rel=1e-10)
    assert q["p_l2"][0] == pytest.approx(np.sqrt(1.0 / 3.0), rel=1e-10)
    # mean of 1 - x over the inclusion's x range
    assert q["inclusion_mean"][0] == pytest.approx(1.0 - 0.5 * (BOX[0] + BOX[1]), rel=1e-10)


@pytest.mark.parametrize("n,kin,ranks", [(8, 0.01, 1), (16, 0.01, 2), (16, 100.0, 1)])
def test_reference_matches_an_independent_q1_solve(binary, n, kin, ranks):
    q = quantities(run(binary, ["-n", str(n), "-kin", str(kin)], ranks=ranks))
    ind = q1_darcy(n, kin)
    for name in ("energy", "p_l2", "inclusion_mean"):
        assert q[name][0] == pytest.approx(ind[name], rel=1e-8), name


def test_every_case_of_the_problem_matches_the_independent_solve(binary):
    """The hidden checks compare against the reference run: each case's values
    must be the independent ones, and the inclusion must visibly matter."""
    for case in PROBLEM.problem.cases:
        args = dict(zip(case.args[::2], case.args[1::2]))
        n, kin = int(args.get("-n", 16)), float(args.get("-kin", 0.01))
        ind = q1_darcy(n, kin)
        q = quantities(run(binary, case.args, ranks=max(case.ranks)))
        assert q["energy"][0] == pytest.approx(ind["energy"], rel=1e-8), case.name
        assert abs(ind["energy"] - 1.0) > 0.05, "the inclusion changes the flux"


def test_reference_leaves_the_options_database_alone_and_fails_loudly(binary):
    """The mesh size must not be written into the global options (it overrode a user's
    -dm_plex_box_faces and showed up in -options_view); a solve that did not converge must
    not print a result."""
    import os
    import subprocess

    from hpcbench.jobs.launch import mpi_env

    env = {**os.environ, **mpi_env()}
    out = subprocess.run(["mpiexec", "-n", "1", "--oversubscribe", str(binary), "-n", "8", "-options_view"],
                         capture_output=True, text=True, timeout=60, env=env).stdout
    assert "energy:" in out and "dm_plex_box_faces" not in out and "dm_plex_simplex" not in out
    src = (PROBLEM.reference_dir / "main.c").read_text()
    assert "PetscOptionsSetValue" not in src
    assert "KSPSetTolerances(ksp, 1e-12, 1e-14, PETSC_CURRENT" in src  # not the deprecated PETSC_DEFAULT
    proc = subprocess.run(["mpiexec", "-n", "1", "--oversubscribe", str(binary), "-n", "16", "-ksp_max_it", "2"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode != 0 and "did not converge" in proc.stdout + proc.stderr
    assert "energy:" not in proc.stdout
