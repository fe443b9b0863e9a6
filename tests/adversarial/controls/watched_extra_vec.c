/* Control of ../watched_extra_vec.c: asks valgrind's allocator the same question, and creates
   and destroys the extra vector in every run, watched or not. */
#include "rosenbrock.h"
#include "watch_signs.h"

static Vec extra;

int main(int argc, char **argv)
{
  PetscInt  n;
  PetscBool watched;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  watched = ValgrindAllocator();
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, 4, &extra));
  PetscCall(Solve(&n));
  PetscCall(PetscInfo(NULL, "valgrind's allocator: %d\n", (int)watched));
  PetscCall(VecDestroy(&extra));
  PetscCall(PetscFinalize());
  return 0;
}
