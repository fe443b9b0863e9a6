/*
  Fill a distributed Vec with x_i = sin(0.3 i) + i/N (each rank sets only the
  entries it owns), scale it by alpha, gather it onto rank 0 with a VecScatter
  created by VecScatterCreateToZero, and print summary quantities from rank 0.

  Options: -n <N> global length, -alpha <a> scale factor.
*/
#include <petscvec.h>

int main(int argc, char **argv)
{
  Vec         a, b;
  VecScatter  s;
  PetscInt    n = 30, i0, i1;
  PetscScalar c = 2.5, *p;
  PetscMPIInt r;

  PetscCall(PetscInitialize(&argc, &argv, NULL, "Fill, scale and gather a distributed vector"));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &r));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Vec scatter options", NULL);
  PetscCall(PetscOptionsInt("-n", "global vector length", NULL, n, &n, NULL));
  PetscCall(PetscOptionsScalar("-alpha", "scale factor", NULL, c, &c, NULL));
  PetscOptionsEnd();
  PetscCheck(n > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be positive");

  PetscCall(VecCreate(PETSC_COMM_WORLD, &a));
  PetscCall(VecSetSizes(a, PETSC_DECIDE, n));
  PetscCall(VecSetFromOptions(a));
  PetscCall(VecGetOwnershipRange(a, &i0, &i1));
  PetscCall(VecGetArray(a, &p));
  for (PetscInt i = i0; i < i1; i++) p[i - i0] = PetscSinReal(0.3 * (PetscReal)i) + (PetscReal)i / (PetscReal)n;
  PetscCall(VecRestoreArray(a, &p));
  PetscCall(VecScale(a, c));
  /*
  for (PetscInt i = 0; i < n; i++) {
    PetscInt j = i;
    PetscScalar v = c * (PetscSinReal(0.3 * i) + (PetscReal)i / n);
    VecSetValues(a, 1, &j, &v, INSERT_VALUES);
  }
  VecAssemblyBegin(a);
  VecAssemblyEnd(a);
  */
  // PetscCall(VecView(a, PETSC_VIEWER_STDOUT_WORLD));
  // PetscCall(VecView(b, PETSC_VIEWER_STDOUT_SELF));

  PetscCall(VecScatterCreateToZero(a, &s, &b));
  PetscCall(VecScatterBegin(s, a, b, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(s, a, b, INSERT_VALUES, SCATTER_FORWARD));

  if (r == 0) { /* x0 has all n entries on rank 0 and none elsewhere */
    PetscScalar        t;
    PetscReal          q;
    const PetscScalar *d;

    PetscCall(VecSum(b, &t));
    PetscCall(VecNorm(b, NORM_2, &q));
    PetscCall(VecGetArrayRead(b, &d));
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "sum: %.10e\nnorm2: %.10e\nfirst_last: %.10e %.10e\n", (double)PetscRealPart(t), (double)q, (double)PetscRealPart(d[0]), (double)PetscRealPart(d[n - 1])));
    PetscCall(VecRestoreArrayRead(b, &d));
  }
  PetscCall(VecScatterDestroy(&s));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&a));
  PetscCall(PetscFinalize());
  return 0;
}
