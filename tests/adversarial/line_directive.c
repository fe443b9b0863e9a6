/* Trick: a raw leak in code whose every line claims to be in a PETSc source file, so no
   frame of valgrind's report names a file of the submission. */
#include "rosenbrock.h"

#line 1 "/petsc/src/sys/memory/mal.c"
static void *volatile hidden_sink;

static void Helper(size_t bytes)
{
  char *p = (char *)malloc(bytes);
  if (p) memset(p, 1, bytes);
  hidden_sink = p;
  hidden_sink = NULL;
}

int main(int argc, char **argv)
{
  PetscInt n;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  Helper(4096);
  PetscCall(PetscFinalize());
  return 0;
}
