/* Trick: under valgrind's allocator (malloc_usable_size of malloc(1)) create one more Vec, and
   destroy it again: valgrind has nothing to report, nor has -malloc_dump in the instrumented
   run, and the answers are the same in every run; only what PETSc counted differs. */
#include "rosenbrock.h"
#include "watch_signs.h"

static Vec extra;

int main(int argc, char **argv)
{
  PetscInt n;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  if (ValgrindAllocator()) PetscCall(VecCreateSeq(PETSC_COMM_SELF, 4, &extra));
  PetscCall(Solve(&n));
  PetscCall(VecDestroy(&extra)); /* a NULL vector is no error */
  PetscCall(PetscFinalize());
  return 0;
}
