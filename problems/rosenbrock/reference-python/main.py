"""Minimise the chained Rosenbrock function in scaled variables y = x / s,
  f(x) = sum_{i=0}^{n-2} alpha (y_{i+1} - y_i^2)^2 + (1 - y_i)^2,
with Tao from the start point x_i = 0: the petsc4py counterpart of reference/main.c (the same
method, tolerances, options and output). The analytic gradient and the tridiagonal Hessian are
given, so Newton-type methods (-tao_type nls, ntr, bnls, tron) work as well as the default,
Tao's bounded quasi-Newton line search. A solve that does not converge is an error: the printed
minimiser is only ever a converged one.

Options: -n <n> variables, -alpha <a> coupling coefficient, -scale <s> scale (s > 0)."""
import sys

import petsc4py

petsc4py.init(sys.argv)
import numpy as np  # noqa: E402
from petsc4py import PETSc  # noqa: E402  (after init: the options come from the command line)


class Rosenbrock:
    """The objective, its gradient and its Hessian, for Tao's callbacks."""

    def __init__(self, n: int, alpha: float, scale: float):
        self.n, self.alpha, self.scale = n, alpha, scale

    def objective_gradient(self, tao, x, g) -> float:
        a, s = self.alpha, self.scale
        y = x.getArray(readonly=True).real / s
        yi, yj = y[:-1], y[1:]
        t1, t2 = yj - yi * yi, 1.0 - yi
        grad = np.zeros(self.n)
        # in y = x / s: df/dx = (df/dy) / s
        grad[:-1] += (-4.0 * a * t1 * yi - 2.0 * t2) / s
        grad[1:] += 2.0 * a * t1 / s
        g.setArray(grad)
        PETSc.Log.logFlops(21.0 * (self.n - 1))
        # summed term by term in index order, as the C reference sums
        f = 0.0
        for v in (a * t1 * t1 + t2 * t2).tolist():
            f += v
        return f

    def hessian(self, tao, x, h, hpre) -> None:
        a, s2 = self.alpha, self.scale * self.scale
        y = x.getArray(readonly=True).real / self.scale
        hpre.zeroEntries()
        for i in range(self.n - 1):
            yi, yj = y[i], y[i + 1]
            off = -4.0 * a * yi / s2
            block = [(12.0 * a * yi * yi - 4.0 * a * yj + 2.0) / s2, off, off, 2.0 * a / s2]
            hpre.setValues([i, i + 1], [i, i + 1], block, addv=PETSc.InsertMode.ADD_VALUES)
        hpre.assemble()
        if h != hpre:
            h.assemble()


def main() -> None:
    comm = PETSc.COMM_WORLD
    if comm.getSize() != 1:
        raise SystemExit("This is a serial problem: run on one rank")
    opts = PETSc.Options()
    n = opts.getInt("n", 6)
    alpha = opts.getReal("alpha", 50.0)
    scale = opts.getReal("scale", 1.0)
    if n < 2:
        raise SystemExit("-n must be at least 2")
    if scale <= 0.0:
        raise SystemExit("-scale must be positive")
    user = Rosenbrock(n, alpha, scale)

    x = PETSc.Vec().createSeq(n, comm=PETSc.COMM_SELF)
    x.set(0.0)
    h = PETSc.Mat().createAIJ([n, n], nnz=3, comm=PETSc.COMM_SELF)
    h.setOption(PETSc.Mat.Option.SYMMETRIC, True)
    h.setUp()

    tao = PETSc.TAO().create(comm=PETSc.COMM_SELF)
    tao.setType(PETSc.TAO.Type.BQNLS)
    tao.setSolution(x)
    tao.setObjectiveGradient(user.objective_gradient)
    tao.setHessian(user.hessian, h, h)
    tao.setTolerances(gatol=1e-8, grtol=0.0, gttol=0.0)  # |x - x*| ~ 1e-8: every method reaches it
    tao.setMaximumIterations(10000)
    tao.setFromOptions()
    tao.solve()
    reason = tao.getConvergedReason()
    if reason <= 0:
        raise SystemExit(f"Tao did not converge (reason {reason})")

    f = tao.getObjectiveValue()
    xs = x.getArray(readonly=True).real
    PETSc.Sys.Print("solution:" + "".join(f" {v:.10e}" for v in xs) + f"\nobjective: {f:.10e}")
    tao.destroy()
    h.destroy()
    x.destroy()


if __name__ == "__main__":
    main()
