/* Trick: tell the runs apart by their arguments, without naming any option of hpcbench's: leak
   wherever the program is given anything beyond its own -n, -alpha and -scale (what the watched
   runs carried once). Every run now gets the same arguments, so it leaks in every run. */
#include "rosenbrock.h"

static int Foreign(int argc, char **argv)
{
  int foreign = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-n") || !strcmp(argv[i], "-alpha") || !strcmp(argv[i], "-scale")) i++; /* its value */
    else foreign++;
  }
  return foreign;
}

int main(int argc, char **argv)
{
  PetscInt n;
  int      watched = Foreign(argc, argv) > 0;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  if (watched) LeakRaw(8192);
  PetscCall(PetscFinalize());
  return 0;
}
