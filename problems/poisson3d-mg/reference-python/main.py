"""Variable-coefficient Poisson equation in the unit cube with a manufactured solution: the
petsc4py counterpart of reference/main.c (the same discretisation, solver, options and output).

  -div(k grad u) = f in (0,1)^3, u = g on the boundary, with k = 1 + a (x + 2 y z) and f, g taken
  from the exact solution u* = exp(x + y) sin(pi z).

Grid: (n+1)^3 points, boundary included, spacing h = 1/n. Interior rows are the conservative
seven-point difference (k at the midpoints between neighbours) times h (h^3 / h^2); boundary rows
are the identity (scaled by the interior diagonal's size), and the known boundary values are moved
to the right-hand side, so the operator stays symmetric positive definite and CG applies.

Solver: CG with PCMG on the DMDA hierarchy. Every level's operator comes from the same callback on
that level's DMDA (rediscretisation), set with KSP.setComputeOperators; the number of levels makes
the coarsest grid 4 intervals per side. Chebyshev/Jacobi smoothing (PETSc's default) keeps the
iteration count flat as h shrinks. Everything can be changed from the command line.

The stencil and the right-hand side are computed for all of a rank's points at once with numpy
(a Python loop per grid point would cost seconds at n = 64); each row goes to PETSc in one
setValuesLocalRCV call, a neighbour on the boundary given the column -1, which PETSc skips.

Options: -n <int> grid intervals per side (a multiple of 8), -a <real> strength of the coefficient's
variation."""
import sys

import petsc4py

petsc4py.init(sys.argv)
import numpy as np  # noqa: E402
from petsc4py import PETSc  # noqa: E402  (after init: the options come from the command line)

PI = np.pi


def coef(a: float, x, y, z):
    return 1.0 + a * (x + 2.0 * y * z)


def exact(x, y, z):
    return np.exp(x + y) * np.sin(PI * z)


def source(a: float, x, y, z):
    """f = -div(k grad u*) = -(k_x u_x + k_y u_y + k_z u_z + k lap u*)"""
    e, s, c = np.exp(x + y), np.sin(PI * z), np.cos(PI * z)
    u, uz = e * s, PI * e * c
    return -(a * u + 2.0 * a * z * u + 2.0 * a * y * uz + coef(a, x, y, z) * (2.0 - PI * PI) * u)


def owned_points(da):
    """The rank's grid indices gi, gj, gk (arrays shaped (zm, ym, xm), x fastest as PETSc stores
    them), the grid size m and the spacing h."""
    m = da.getSizes()[0]
    (xs, ys, zs), (xm, ym, zm) = da.getCorners()
    gk, gj, gi = np.meshgrid(np.arange(zs, zs + zm), np.arange(ys, ys + ym), np.arange(xs, xs + xm), indexing="ij")
    return gi, gj, gk, m, 1.0 / (m - 1)


def stencil(a: float, gi, gj, gk, h: float):
    """The 7 coefficients of each row: centre, then -x, +x, -y, +y, -z, +z. Rows are the difference
    quotient times the cell volume h^3: then the restriction maps a fine residual to the right size
    for the operator rediscretised at 2h (divided by h^2, each coarse correction would be 8 times
    too large)."""
    x, y, z = gi * h, gj * h, gk * h
    v1 = -h * coef(a, x - 0.5 * h, y, z)
    v2 = -h * coef(a, x + 0.5 * h, y, z)
    v3 = -h * coef(a, x, y - 0.5 * h, z)
    v4 = -h * coef(a, x, y + 0.5 * h, z)
    v5 = -h * coef(a, x, y, z - 0.5 * h)
    v6 = -h * coef(a, x, y, z + 0.5 * h)
    v0 = -(v1 + v2 + v3 + v4 + v5 + v6)
    return [v0, v1, v2, v3, v4, v5, v6]


def on_boundary(gi, gj, gk, m: int):
    return (gi == 0) | (gj == 0) | (gk == 0) | (gi == m - 1) | (gj == m - 1) | (gk == m - 1)


class Poisson:
    def __init__(self, a: float):
        self.a = a

    def operator(self, ksp, A, P) -> None:
        da = ksp.getDM()
        gi, gj, gk, m, h = owned_points(da)
        v = stencil(self.a, gi, gj, gk, h)
        (gxs, gys, gzs), (gxm, gym, _) = da.getGhostCorners()
        offsets = [(0, 0, 0), (-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1)]
        row_bdry = on_boundary(gi, gj, gk, m)
        cols = []
        for s, (di, dj, dk) in enumerate(offsets):
            local = (gi + di - gxs) + gxm * ((gj + dj - gys) + gym * (gk + dk - gzs))
            if s > 0:
                # a boundary row holds its diagonal only; a known neighbour value is in the right-hand side
                local = np.where(row_bdry | on_boundary(gi + di, gj + dj, gk + dk, m), -1, local)
            cols.append(local.ravel())
        C = np.stack(cols, axis=1).astype(PETSc.IntType)
        V = np.stack([c.ravel() for c in v], axis=1).astype(PETSc.ScalarType)
        P.setValuesLocalRCV(C[:, :1].copy(), C, V, addv=PETSc.InsertMode.INSERT_VALUES)
        P.assemble()

    def rhs(self, ksp, b) -> None:
        da = ksp.getDM()
        gi, gj, gk, m, h = owned_points(da)
        v = stencil(self.a, gi, gj, gk, h)
        x, y, z = gi * h, gj * h, gk * h
        r = h * h * h * source(self.a, x, y, z)
        r = np.where(gi == 1, r - v[1] * exact(0.0, y, z), r)
        r = np.where(gi == m - 2, r - v[2] * exact(1.0, y, z), r)
        r = np.where(gj == 1, r - v[3] * exact(x, 0.0, z), r)
        r = np.where(gj == m - 2, r - v[4] * exact(x, 1.0, z), r)
        r = np.where(gk == 1, r - v[5] * exact(x, y, 0.0), r)
        r = np.where(gk == m - 2, r - v[6] * exact(x, y, 1.0), r)
        r = np.where(on_boundary(gi, gj, gk, m), v[0] * exact(x, y, z), r)
        with b as ba:  # the local array, restored on exit
            ba[:] = r.ravel()


def measure(da, u):
    """max and discrete L2 error at the grid points, and u at the centre (a grid point: n is even)."""
    gi, gj, gk, m, h = owned_points(da)
    err = u.duplicate()
    ua = u.getArray(readonly=True).real
    with err as ea:
        ea[:] = np.abs(ua - exact(gi * h, gj * h, gk * h).ravel())
    emax = err.norm(PETSc.NormType.NORM_INFINITY)
    el2 = float(np.sqrt(err.dot(err).real * h * h * h))
    centre = ((2 * gi == m - 1) & (2 * gj == m - 1) & (2 * gk == m - 1)).ravel()
    with err as ea:  # the centre's value where it is owned, zero elsewhere: the sum is that value
        ea[:] = np.where(centre, ua, 0.0)
    value = err.sum().real
    err.destroy()
    return emax, el2, value


def main() -> None:
    opts = PETSc.Options()
    n = opts.getInt("n", 24)
    a = opts.getReal("a", 1.0)
    if n < 8 or n % 8 != 0:
        raise SystemExit("-n must be a positive multiple of 8")
    if a < 0:
        raise SystemExit("-a must be non-negative (k must stay positive)")
    levels, c = 1, n
    while c > 4:
        levels, c = levels + 1, c // 2

    da = PETSc.DMDA().create(dim=3, dof=1, sizes=(n + 1, n + 1, n + 1), stencil_width=1,
                             stencil_type=PETSc.DMDA.StencilType.STAR, comm=PETSc.COMM_WORLD)
    da.setUp()
    prob = Poisson(a)
    ksp = PETSc.KSP().create(comm=PETSc.COMM_WORLD)
    ksp.setDM(da)
    ksp.setComputeRHS(prob.rhs)
    ksp.setComputeOperators(prob.operator)
    ksp.setType(PETSc.KSP.Type.CG)
    ksp.setTolerances(rtol=1e-12, max_it=500)
    pc = ksp.getPC()
    pc.setType(PETSc.PC.Type.MG)
    pc.setMGLevels(levels)
    ksp.setFromOptions()
    # with a DM whose callbacks compute the right-hand side, the KSP fills b itself (KSPSolve's
    # NULL vectors of the C reference are not accepted by petsc4py)
    b, u = da.createGlobalVec(), da.createGlobalVec()
    ksp.solve(b, u)
    reason = ksp.getConvergedReason()
    if reason <= 0:
        raise SystemExit(f"the linear solve did not converge (reason {reason})")
    its = ksp.getIterationNumber()
    emax, el2, centre = measure(da, u)

    PETSc.Sys.Print(f"err_max: {emax:.10e}\nerr_l2: {el2:.10e}\nu_centre: {centre:.10e}\niterations: {its}")
    b.destroy()
    u.destroy()
    ksp.destroy()
    da.destroy()


if __name__ == "__main__":
    main()
