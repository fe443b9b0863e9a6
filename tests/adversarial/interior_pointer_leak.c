/* Trick: leak a big block but keep a pointer into its middle: valgrind calls it "possibly
   lost", which it was not asked to show (only definite and indirect leaks counted). */
#include "rosenbrock.h"

static char *middle = NULL;

int main(int argc, char **argv)
{
  PetscInt n;
  char    *block;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  block = (char *)malloc(1 << 20);
  if (block) {
    memset(block, 1, 1 << 20);
    middle = block + 4096;
  }
  PetscCall(PetscFinalize());
  return middle ? 0 : 1;
}
