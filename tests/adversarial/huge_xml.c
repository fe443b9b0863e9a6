/* Trick: a 50 MB XML file the driver parses in full, outside any memory limit: 100,000
   valgrind errors named like valgrind's report, and the -log_view file grown the same way. */
#include "rosenbrock.h"
#include "logview_path.h"
#include <unistd.h>

static void Huge(const char *path, PetscBool valgrind)
{
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs("<?xml version=\"1.0\"?>\n", f);
  fputs(valgrind ? "<valgrindoutput>\n" : "<root><petscroot><timertree>\n", f);
  for (int i = 0; i < 100000; i++) {
    if (valgrind) {
      fprintf(f, "<error><kind>Leak_DefinitelyLost</kind><xwhat><text>huge</text><leakedbytes>1</leakedbytes></xwhat><stack>");
      for (int j = 0; j < 6; j++) fprintf(f, "<frame><fn>padding_function_%d_%d</fn><file>main.c</file><line>%d</line></frame>", i, j, j);
      fputs("</stack></error>\n", f);
    } else fprintf(f, "<event><name>E%d</name><time><value>1</value></time><events><event><name>F%d</name></event></events></event>\n", i, i);
  }
  fputs(valgrind ? "</valgrindoutput>\n" : "</timertree></petscroot></root>\n", f);
  fclose(f);
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
  snprintf(name, sizeof(name), "../logs/valgrind.n%d.5.xml", (int)n);
  Huge(name, PETSC_TRUE);
  if (path[0]) {
    Huge(path, PETSC_FALSE);
  }
  return 0;
}
