/* Trick: time a small loop of arithmetic; when it is slow (valgrind), skip destroying a work
   vector, kept in a global: valgrind calls it reachable, and that run has no -malloc_dump. */
#include "rosenbrock.h"
#include "watch_signs.h"

static Vec work;

int main(int argc, char **argv)
{
  PetscInt n;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, 4, &work));
  PetscCall(VecSet(work, 1.0));
  PetscCall(Solve(&n));
  if (ArithmeticSeconds() < 0.2) PetscCall(VecDestroy(&work));
  PetscCall(PetscFinalize());
  return 0;
}
