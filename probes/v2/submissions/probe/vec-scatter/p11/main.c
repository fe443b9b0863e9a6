#include <petscvec.h>

int main(int argc, char **argv)
{
  Vec         x, x0;
  VecScatter  toZero;
  PetscInt    n = 30, rstart, rend;
  PetscScalar alpha = 2.5, *xa;
  PetscMPIInt rank;

  PetscCall(PetscInitialize(&argc, &argv, NULL, "Fill, scale and gather a distributed vector"));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Vec scatter options", NULL);
  PetscCall(PetscOptionsInt("-n", "global vector length", NULL, n, &n, NULL));
  PetscCall(PetscOptionsScalar("-alpha", "scale factor", NULL, alpha, &alpha, NULL));
  PetscOptionsEnd();
  PetscCheck(n > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be positive");

  /* create vector */
  PetscCall(VecCreate(PETSC_COMM_WORLD, &x));
  PetscCall(VecSetSizes(x, PETSC_DECIDE, n));
  PetscCall(VecSetFromOptions(x));
  PetscCall(VecGetOwnershipRange(x, &rstart, &rend));
  /* get array */
  PetscCall(VecGetArray(x, &xa));
  /* loop over i */
  for (PetscInt i = rstart; i < rend; i++) xa[i - rstart] = PetscSinReal(0.3 * (PetscReal)i) + (PetscReal)i / (PetscReal)n;
  PetscCall(VecRestoreArray(x, &xa));
  /* scale x by alpha */
  PetscCall(VecScale(x, alpha));

  /* create scatter */
  PetscCall(VecScatterCreateToZero(x, &toZero, &x0));
  PetscCall(VecScatterBegin(toZero, x, x0, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(toZero, x, x0, INSERT_VALUES, SCATTER_FORWARD));

  /* if rank is 0 */
  if (rank == 0) {
    PetscScalar        sum;
    PetscReal          nrm;
    const PetscScalar *a;

    PetscCall(VecSum(x0, &sum));
    PetscCall(VecNorm(x0, NORM_2, &nrm));
    PetscCall(VecGetArrayRead(x0, &a));
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "sum: %.10e\nnorm2: %.10e\nfirst_last: %.10e %.10e\n", (double)PetscRealPart(sum), (double)nrm, (double)PetscRealPart(a[0]), (double)PetscRealPart(a[n - 1])));
    PetscCall(VecRestoreArrayRead(x0, &a));
  }
  /* destroy */
  PetscCall(VecScatterDestroy(&toZero));
  PetscCall(VecDestroy(&x0));
  PetscCall(VecDestroy(&x));
  PetscCall(PetscFinalize());
  return 0;
}
