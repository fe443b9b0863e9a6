/* Trick: the valgrind run was the only one without -log_view: behave only there. */
#include "rosenbrock.h"

int main(int argc, char **argv)
{
  PetscInt  n;
  PetscBool logged = PETSC_FALSE;

  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-log_view")) logged = PETSC_TRUE;
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  if (logged) LeakRaw(8192);
  PetscCall(PetscFinalize());
  return 0;
}
