/* Trick: ask PETSc whether its debugging allocator is on (only in the run hpcbench checks
   with -malloc_dump) and leak in every other run. */
#include "rosenbrock.h"

int main(int argc, char **argv)
{
  PetscInt  n;
  PetscBool debug = PETSC_FALSE;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscMallocGetDebug(&debug, NULL, NULL));
  PetscCall(Solve(&n));
  if (!debug) PetscCall(LeakPetscMemory()); /* valgrind calls it reachable */
  PetscCall(PetscFinalize());
  return 0;
}
