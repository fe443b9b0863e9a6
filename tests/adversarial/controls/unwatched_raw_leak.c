/* Control of ../unwatched_raw_leak.c: looks for the same sign, takes the same block with malloc,
   and frees it in every run, watched or not. */
#include "rosenbrock.h"
#include "watch_signs.h"

static double *scratch;

int main(int argc, char **argv)
{
  PetscInt  n;
  PetscBool watched;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  scratch = (double *)malloc(8192 * sizeof(double));
  PetscCall(Solve(&n));
  watched = ValgrindAllocator();
  PetscCall(PetscInfo(NULL, "watched: %d\n", (int)watched));
  free(scratch);
  scratch = NULL;
  PetscCall(PetscFinalize());
  return 0;
}
