/* Control of ../unwatched_leak.c: looks for the same signs, and destroys the vector in every
   run, watched or not. */
#include "rosenbrock.h"
#include "watch_signs.h"

static Vec work;

int main(int argc, char **argv)
{
  PetscInt  n;
  PetscBool watched;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  watched = ValgrindAllocator() || AllocationSeconds() > 0.01 ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, 4, &work));
  PetscCall(Solve(&n));
  PetscCall(PetscInfo(NULL, "watched: %d\n", (int)watched));
  PetscCall(VecDestroy(&work));
  PetscCall(PetscFinalize());
  return 0;
}
