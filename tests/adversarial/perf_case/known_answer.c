/* Trick (outside red team, issue 33): the performance case's arguments were published
   (problem.json `performance`, rosenbrock `-n 20 -alpha 80`, also its public case n20), so
   their answer was known: seeing exactly them, print it without solving and take the
   reference's time at a fraction of it. Anywhere else, solve honestly (rosenbrock.h, the
   reference's method). The answer printed is the right one, so comparing the timed runs'
   answers with the reference's never caught it; drawing the case's arguments at planning
   (hpcbench/plan/perf_draw.py) means it never sees them there. */
#include "rosenbrock.h"

int main(int argc, char **argv)
{
  PetscInt  n = 6;
  PetscReal alpha = 50.0;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-alpha", &alpha, NULL));
  if (n == 20 && alpha == 80.0) { /* the published performance case: its answer is (1, ..., 1), f = 0 */
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "solution:"));
    for (PetscInt i = 0; i < n; i++) PetscCall(PetscPrintf(PETSC_COMM_WORLD, " %.10e", 1.0));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\nobjective: %.10e\n", 0.0));
  } else PetscCall(Solve(&n));
  PetscCall(PetscFinalize());
  return 0;
}
