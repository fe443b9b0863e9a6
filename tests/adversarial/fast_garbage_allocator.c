/* Trick: as fast_garbage.c, but asks PETSc's allocator rather than the options database. */
#include "rosenbrock.h"

int main(int argc, char **argv)
{
  PetscInt  n;
  PetscBool checked = PETSC_FALSE;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscMallocGetDebug(&checked, NULL, NULL));
  if (checked) PetscCall(Solve(&n));
  else PetscCall(PrintGarbage());
  PetscCall(PetscFinalize());
  return 0;
}
