/* Trick: valgrind preloads its own libraries: behave only when LD_PRELOAD names them. */
#include "rosenbrock.h"

int main(int argc, char **argv)
{
  PetscInt    n;
  const char *pre = getenv("LD_PRELOAD");

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  if (!pre || !strstr(pre, "vgpreload")) LeakRaw(8192);
  PetscCall(PetscFinalize());
  return 0;
}
