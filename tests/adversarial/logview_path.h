/* Part of the tricks that aim at the harness's own files (symlink_logs, fifo_logs, huge_xml,
   valgrind_detect_argv): only they include it, so the other tricks' sources name no option. */
#include <stdio.h>
#include <string.h>
/* Where this run's -log_view file is: named on the command line, or in the options file the
   command line names (hpcbench's runs pass their instruments that way); "" when neither says. */
PETSC_UNUSED static void LogViewPath(int argc, char **argv, char *buf, size_t len)
{
  buf[0] = 0;
  for (int i = 1; i + 1 < argc; i++) {
    if (!strcmp(argv[i], "-log_view") && argv[i + 1][0] == ':') snprintf(buf, len, "%s", argv[i + 1] + 1);
    else if (!strcmp(argv[i], "-options_file")) {
      FILE *f = fopen(argv[i + 1], "r");
      char  line[2048];
      while (f && fgets(line, sizeof(line), f)) {
        char *p = strstr(line, "-log_view");
        if (p && (p = strchr(p, ':'))) {
          snprintf(buf, len, "%s", p + 1);
          break;
        }
      }
      if (f) fclose(f);
    }
  }
  char *colon = strchr(buf, ':');
  if (colon) *colon = 0;
}
