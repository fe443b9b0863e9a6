"""Robertson's stiff chemical kinetics, y(0) = (1, 0, 0), integrated to -tfinal: the petsc4py
counterpart of reference/main.c (the same integrator, tolerances, options and output).
The rate constants span nine orders of magnitude, so the problem is stiff: an L-stable implicit
integrator (Rosenbrock-W, TSROSW) with the analytic Jacobian and adaptive steps at tight
tolerances. Any integrator can be chosen with -ts_type; tolerances with -ts_rtol/-ts_atol. A run
that did not reach -tfinal (a fixed-step or explicit method that ran out of steps) is an error,
never a printed result.

Options: -tfinal <T> final time."""
import sys

import petsc4py

petsc4py.init(sys.argv)
from petsc4py import PETSc  # noqa: E402  (after init: the options come from the command line)


def ifunction(ts, t, y, ydot, f) -> None:
    y0, y1, y2 = y.getArray(readonly=True)
    d0, d1, d2 = ydot.getArray(readonly=True)
    f.setArray([d0 + 0.04 * y0 - 1e4 * y1 * y2,
                d1 - 0.04 * y0 + 1e4 * y1 * y2 + 3e7 * y1 * y1,
                d2 - 3e7 * y1 * y1])


def ijacobian(ts, t, y, ydot, a, jac, jpre) -> None:
    _, y1, y2 = y.getArray(readonly=True)
    rows = [0, 1, 2]
    jpre.setValues(rows, rows, [a + 0.04, -1e4 * y2, -1e4 * y1,
                                -0.04, a + 1e4 * y2 + 6e7 * y1, 1e4 * y1,
                                0.0, -6e7 * y1, a])
    jpre.assemble()
    if jac != jpre:
        jac.assemble()


def main() -> None:
    comm = PETSc.COMM_WORLD
    if comm.getSize() != 1:
        raise SystemExit("Three unknowns: run on one rank")
    tfinal = PETSc.Options().getReal("tfinal", 40.0)

    y = PETSc.Vec().createSeq(3, comm=PETSc.COMM_SELF)
    y.setArray([1.0, 0.0, 0.0])
    jac = PETSc.Mat().createDense([3, 3], comm=PETSc.COMM_SELF)
    jac.setUp()

    ts = PETSc.TS().create(comm=PETSc.COMM_SELF)
    ts.setProblemType(PETSc.TS.ProblemType.NONLINEAR)
    ts.setType(PETSc.TS.Type.ROSW)
    ts.setIFunction(ifunction, None)
    ts.setIJacobian(ijacobian, jac, jac)
    ts.setMaxTime(tfinal)
    ts.setExactFinalTime(PETSc.TS.ExactFinalTime.MATCHSTEP)
    ts.setTimeStep(1e-6)
    ts.setMaxSteps(1000000)
    ts.setTolerances(rtol=1e-8, atol=1e-12)
    ts.setFromOptions()
    ts.solve(y)
    reason = ts.getConvergedReason()
    tend = ts.getSolveTime()
    if reason <= 0 or abs(tend - tfinal) > 1e-10 * tfinal:
        raise SystemExit(f"TS stopped at t = {tend:g}, not at -tfinal {tfinal:g} (reason {reason})")

    y0, y1, y2 = y.getArray(readonly=True).real
    PETSc.Sys.Print(f"y_final: {y0:.10e} {y1:.10e} {y2:.10e}")
    jac.destroy()
    y.destroy()
    ts.destroy()


if __name__ == "__main__":
    main()
