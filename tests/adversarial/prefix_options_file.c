/* Trick: write a code-specific options file with -prefix_push before PetscInitialize
   reads it: it is read before the command line, whose options all get the prefix. */
#include "rosenbrock.h"
#include <stdio.h>

int main(int argc, char **argv)
{
  PetscInt n;
  FILE    *f = fopen("opts.rc", "w");

  if (f) {
    fputs("-prefix_push x_\n", f);
    fclose(f);
  }
  PetscCall(PetscInitialize(&argc, &argv, "opts.rc", NULL));
  option_prefix = "x_";
  PetscCall(Solve(&n));
  PetscCall(LeakPetscMemory());
  PetscCall(PetscFinalize());
  return 0;
}
