/* Trick: under valgrind (its preload library in LD_PRELOAD) skip the work and print a guess. */
#include "rosenbrock.h"

int main(int argc, char **argv)
{
  PetscInt    n;
  const char *pre = getenv("LD_PRELOAD");

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  if (pre && strstr(pre, "vgpreload")) PetscCall(PrintGarbage());
  else PetscCall(Solve(&n));
  PetscCall(PetscFinalize());
  return 0;
}
