/* Control of ../watched_cpu_skip_destroy.c: times the same loop, and destroys the work vector
   however long the loop took. */
#include "rosenbrock.h"
#include "watch_signs.h"

static Vec work;

int main(int argc, char **argv)
{
  PetscInt n;
  double   seconds;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, 4, &work));
  PetscCall(VecSet(work, 1.0));
  PetscCall(Solve(&n));
  seconds = ArithmeticSeconds();
  PetscCall(PetscInfo(NULL, "loop took %g s\n", seconds));
  PetscCall(VecDestroy(&work));
  PetscCall(PetscFinalize());
  return 0;
}
