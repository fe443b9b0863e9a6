/* The performance par of vec-scatter (docs/problems.md): the reference with the sines filled by
   a rotation recurrence (re-started exactly every 64 entries) and the three sums on rank 0 in one
   pass over the gathered copy instead of VecSum, VecNorm and a loop. */
/*
  Fill a distributed Vec with x_i = sin(0.3 i) + i/N (each rank sets only the
  entries it owns), scale it by alpha, gather it onto rank 0 with a VecScatter
  created by VecScatterCreateToZero, and print summary quantities from rank 0,
  among them an index-weighted sum that sees where each entry landed.

  Options: -n <N> global length, -alpha <a> scale factor.
*/
#include <petscvec.h>

int main(int argc, char **argv)
{
  Vec         x, x0;
  VecScatter  toZero;
  PetscInt    n = 30, rstart, rend;
  PetscScalar alpha = 2.5, *xa;
  PetscMPIInt rank, size;

  PetscCall(PetscInitialize(&argc, &argv, NULL, "Fill, scale and gather a distributed vector"));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCheck(size == 3, PETSC_COMM_WORLD, PETSC_ERR_WRONG_MPI_SIZE, "The task asks for exactly 3 MPI ranks, not %d", (int)size);
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Vec scatter options", NULL);
  PetscCall(PetscOptionsInt("-n", "global vector length", NULL, n, &n, NULL));
  PetscCall(PetscOptionsScalar("-alpha", "scale factor", NULL, alpha, &alpha, NULL));
  PetscOptionsEnd();
  PetscCheck(n > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be positive");

  PetscCall(VecCreate(PETSC_COMM_WORLD, &x));
  PetscCall(VecSetSizes(x, PETSC_DECIDE, n));
  PetscCall(VecSetFromOptions(x));
  PetscCall(VecGetOwnershipRange(x, &rstart, &rend));
  PetscCall(VecGetArray(x, &xa));
  {
    /* sin(0.3 i) by the rotation sin(t + d) = sin t cos d + cos t sin d, started afresh from
       PetscSinReal/PetscCosReal every 64 entries: a few multiplications instead of a sine per
       entry, the drift bounded by 64 rounding steps */
    const PetscReal d = 0.3, cd = PetscCosReal(d), sd = PetscSinReal(d), inv = 1.0 / (PetscReal)n;
    PetscReal       s = 0.0, c = 1.0;
    for (PetscInt i = rstart; i < rend; i++) {
      if ((i - rstart) % 64 == 0) {
        s = PetscSinReal(d * (PetscReal)i);
        c = PetscCosReal(d * (PetscReal)i);
      }
      xa[i - rstart] = s + (PetscReal)i * inv;
      const PetscReal s1 = s * cd + c * sd;
      c = c * cd - s * sd;
      s = s1;
    }
  }
  PetscCall(VecRestoreArray(x, &xa));
  PetscCall(VecScale(x, alpha));

  PetscCall(VecScatterCreateToZero(x, &toZero, &x0));
  PetscCall(VecScatterBegin(toZero, x, x0, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(toZero, x, x0, INSERT_VALUES, SCATTER_FORWARD));

  if (rank == 0) { /* x0 has all n entries on rank 0 and none elsewhere */
    PetscScalar        sum = 0.0;
    PetscReal          nrm, sq = 0.0, wsum = 0.0;
    const PetscScalar *a;

    PetscCall(VecGetArrayRead(x0, &a));
    /* one pass over the gathered copy for all three sums; each entry weighted by its 1-based
       position: sees an entry lost, shifted or swapped */
    for (PetscInt i = 0; i < n; i++) {
      const PetscReal v = PetscRealPart(a[i]);
      sum += v;
      sq += v * v;
      wsum += (PetscReal)(i + 1) * v;
    }
    nrm = PetscSqrtReal(sq);
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "sum: %.10e\nnorm2: %.10e\nweighted_sum: %.10e\nfirst_last: %.10e %.10e\n", (double)PetscRealPart(sum), (double)nrm, (double)wsum, (double)PetscRealPart(a[0]), (double)PetscRealPart(a[n - 1])));
    PetscCall(VecRestoreArrayRead(x0, &a));
  }
  PetscCall(VecScatterDestroy(&toZero));
  PetscCall(VecDestroy(&x0));
  PetscCall(VecDestroy(&x));
  PetscCall(PetscFinalize());
  return 0;
}
