/* Signs of being watched that hpcbench cannot hide, for the tricks that behave differently
   when observed (watched_extra_vec, watched_cpu_skip_destroy, unwatched_leak) and their
   controls: none of them is an option, a variable or a file the harness names. */
#include <malloc.h>
#include <time.h>

/* valgrind's malloc answers malloc_usable_size with the size asked for; glibc's with its chunk (24 here). */
PETSC_UNUSED static PetscBool ValgrindAllocator(void)
{
  void  *p    = malloc(1);
  size_t size = p ? malloc_usable_size(p) : 0;

  free(p);
  return size > 0 && size < 8 ? PETSC_TRUE : PETSC_FALSE;
}

/* CPU seconds of a small arithmetic loop: about 0.06 s natively, 7 times that under valgrind. */
PETSC_UNUSED static double ArithmeticSeconds(void)
{
  clock_t         t0  = clock();
  volatile double sum = 0.0;

  for (long i = 0; i < 20000000; i++) sum += 1e-9 * (double)i;
  return (double)(clock() - t0) / CLOCKS_PER_SEC;
}

/* CPU seconds of PETSc allocations: about 0.003 s natively; -malloc_debug checks the whole heap at
   each (0.02 s), and with the instrumented run's -malloc_view as well 0.05 s. */
PETSC_UNUSED static double AllocationSeconds(void)
{
  clock_t t0 = clock();

  for (int i = 0; i < 200000; i++) {
    void *p;
    if (PetscMalloc(64, &p) || PetscFree(p)) break;
  }
  return (double)(clock() - t0) / CLOCKS_PER_SEC;
}
