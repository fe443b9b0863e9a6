"""The petsc4py counterpart of reference/main.c (the same steps, options and output): fill a
distributed Vec with x_i = sin(0.3 i) + i/N (each rank sets only the entries it
owns), scale it by alpha, gather it onto rank 0 with a scatter to zero, and print summary
quantities from rank 0, among them an index-weighted sum that sees where each entry landed.

Options: -n <N> global length, -alpha <a> scale factor."""
import sys

import petsc4py

petsc4py.init(sys.argv)
import numpy as np  # noqa: E402
from petsc4py import PETSc  # noqa: E402  (after init: the options come from the command line)


def main() -> None:
    comm = PETSc.COMM_WORLD
    if comm.getSize() != 3:
        raise SystemExit(f"The task asks for exactly 3 MPI ranks, not {comm.getSize()}")
    opts = PETSc.Options()
    n = opts.getInt("n", 30)
    alpha = opts.getScalar("alpha", 2.5)
    if n <= 0:
        raise SystemExit("-n must be positive")

    x = PETSc.Vec().create(comm=comm)
    x.setSizes((PETSc.DECIDE, n))
    x.setFromOptions()
    rstart, rend = x.getOwnershipRange()
    i = np.arange(rstart, rend, dtype=float)
    with x as xa:  # the local array, restored on exit
        xa[:] = np.sin(0.3 * i) + i / n
    x.scale(alpha)

    to_zero, x0 = PETSc.Scatter.toZero(x)
    to_zero.scatter(x, x0, addv=PETSc.InsertMode.INSERT_VALUES, mode=PETSc.ScatterMode.FORWARD)
    if comm.getRank() == 0:  # x0 holds all n entries on rank 0 and none elsewhere
        a = x0.getArray(readonly=True)
        wsum = float(np.dot(np.arange(1, n + 1, dtype=float), a))
        PETSc.Sys.Print(f"sum: {x0.sum().real:.10e}\nnorm2: {x0.norm(PETSc.NormType.NORM_2):.10e}\n"
                        f"weighted_sum: {wsum:.10e}\nfirst_last: {a[0].real:.10e} {a[n - 1].real:.10e}",
                        comm=PETSc.COMM_SELF)
    to_zero.destroy()
    x0.destroy()
    x.destroy()


if __name__ == "__main__":
    main()
