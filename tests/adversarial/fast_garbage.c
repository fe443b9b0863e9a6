/* Trick: right (and slow) when -malloc_debug is there, a quick guess otherwise: the
   timing runs, whose answers nobody checked, measure the guess. */
#include "rosenbrock.h"

int main(int argc, char **argv)
{
  PetscInt  n;
  PetscBool checked = PETSC_FALSE;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-malloc_debug", &checked));
  if (checked) {
    PetscCall(PetscSleep(1.0)); /* slow where it is checked */
    PetscCall(Solve(&n));
  } else PetscCall(PrintGarbage());
  PetscCall(PetscFinalize());
  return 0;
}
