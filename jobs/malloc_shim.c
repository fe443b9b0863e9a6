/* hpcbench's record of the memory a C program takes with the C library's allocator itself
   (jobs/raw_malloc.py builds it and reads what it writes).

   PETSc counts what goes through PetscMalloc and valgrind sees everything, but valgrind runs
   once, and a program can tell that run from the others (its allocator answers differently,
   the program runs several times slower): a program could leak with malloc only where
   valgrind is not looking (issue 33). This library is preloaded into every other run of the
   program alike, forwards every call to glibc's own allocator, and keeps the blocks whose
   caller lies in the program's executable (not PETSc's, MPI's or the C library's); what is
   still held when the process exits is written to a file the harness created. It is active
   only in the process whose executable is HPCBENCH_MALLOC_EXE (mpiexec and a launching shell
   are preloaded too).

   What it cannot see: blocks the program's code takes through a library that calls malloc for
   it (strdup, C++'s operator new, PetscMalloc, which -malloc_dump sees), and a program that
   calls glibc's __libc_malloc, mmap or sbrk itself (the source scan flags __libc_ and
   RTLD_NEXT); a program in the same process can write this file too. Valgrind's run does not
   preload it: memcheck replaces the allocator there and reports leaks itself. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void  __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);

#define SLOTS   (1u << 18) /* live blocks tracked at once; past that the record says "overflow" */
#define EMPTY   ((uintptr_t)0)
#define GONE    ((uintptr_t)1)
#define CALLERS 16         /* distinct call sites written at exit */
#define RANGES  8

struct slot {
  uintptr_t p, caller;
  size_t    size;
};

static struct slot  *table;
static unsigned long live, tracked;
static int           overflow, active;
static char          lock_flag;
static uintptr_t     lo[RANGES], hi[RANGES], base;
static int           nranges;
static char          report[4096];

static void lock(void)
{
  while (__atomic_test_and_set(&lock_flag, __ATOMIC_ACQUIRE)) { }
}

static void unlock(void)
{
  __atomic_clear(&lock_flag, __ATOMIC_RELEASE);
}

static int mine(uintptr_t ra)
{
  for (int i = 0; i < nranges; i++)
    if (ra >= lo[i] && ra < hi[i]) return 1;
  return 0;
}

static unsigned hash(uintptr_t p)
{
  return (unsigned)((p >> 4) * 0x9E3779B97F4A7C15ull >> 40) & (SLOTS - 1);
}

static void add(void *p, size_t size, uintptr_t caller)
{
  if (!p) return;
  lock();
  if (live >= SLOTS / 2) {
    overflow = 1;
  } else {
    unsigned h = hash((uintptr_t)p);
    while (table[h].p != EMPTY && table[h].p != GONE) h = (h + 1) & (SLOTS - 1);
    table[h] = (struct slot){(uintptr_t)p, caller, size};
    live++;
    tracked++;
  }
  unlock();
}

/* The caller of a tracked block `p` (0: not tracked), no longer tracked. */
static uintptr_t take(void *p)
{
  uintptr_t caller = 0;
  if (!p || !__atomic_load_n(&live, __ATOMIC_RELAXED)) return 0;
  lock();
  for (unsigned h = hash((uintptr_t)p), n = 0; table[h].p != EMPTY && n < SLOTS; h = (h + 1) & (SLOTS - 1), n++) {
    if (table[h].p == (uintptr_t)p) {
      caller     = table[h].caller;
      table[h].p = GONE;
      live--;
      break;
    }
  }
  unlock();
  return caller;
}

#define CALLER ((uintptr_t)__builtin_return_address(0))

void *malloc(size_t n)
{
  void *p = __libc_malloc(n);
  if (active && mine(CALLER)) add(p, n, CALLER);
  return p;
}

void *calloc(size_t m, size_t n)
{
  void *p = __libc_calloc(m, n);
  if (active && mine(CALLER)) add(p, m * n, CALLER);
  return p;
}

void *realloc(void *old, size_t n)
{
  uintptr_t was = active ? take(old) : 0;
  void     *p   = __libc_realloc(old, n);
  if (!p && n && was) add(old, 0, was); /* failed: the old block is still held */
  else if (active && (was || mine(CALLER))) add(p, n, mine(CALLER) ? CALLER : was);
  return p;
}

void free(void *p)
{
  if (active) take(p);
  __libc_free(p);
}

void *memalign(size_t align, size_t n)
{
  void *p = __libc_memalign(align, n);
  if (active && mine(CALLER)) add(p, n, CALLER);
  return p;
}

void *aligned_alloc(size_t align, size_t n)
{
  void *p = __libc_memalign(align, n);
  if (active && mine(CALLER)) add(p, n, CALLER);
  return p;
}

void *valloc(size_t n)
{
  void *p = __libc_valloc(n);
  if (active && mine(CALLER)) add(p, n, CALLER);
  return p;
}

int posix_memalign(void **out, size_t align, size_t n)
{
  if (align % sizeof(void *) || (align & (align - 1))) return EINVAL;
  void *p = __libc_memalign(align, n);
  if (!p) return ENOMEM;
  if (active && mine(CALLER)) add(p, n, CALLER);
  *out = p;
  return 0;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
  (void)size;
  (void)data;
  base = (uintptr_t)info->dlpi_addr;
  for (int i = 0; i < info->dlpi_phnum && nranges < RANGES; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      lo[nranges] = base + ph->p_vaddr;
      hi[nranges] = base + ph->p_vaddr + ph->p_memsz;
      nranges++;
    }
  }
  return 1; /* the first object is the executable */
}

static const char *rank(void)
{
  static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", "PALS_RANKID", "PMI_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return v;
  }
  return "0";
}

/* A forked child that does not exec holds a copy of the parent's blocks: the parent's record is
   the program's, so the child writes none. */
static void forked(void)
{
  active = 0;
}

__attribute__((constructor)) static void start(void)
{
  const char *want = getenv("HPCBENCH_MALLOC_EXE"), *to = getenv("HPCBENCH_MALLOC_REPORT");
  char        self[4096];
  ssize_t     n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (!want || !to || n <= 0) return;
  self[n] = 0;
  if (strcmp(self, want) != 0) return;
  if (snprintf(report, sizeof report, "%s.%s", to, rank()) >= (int)sizeof report) return;
  dl_iterate_phdr(first_object, NULL);
  void *t = mmap(NULL, SLOTS * sizeof *table, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (t == MAP_FAILED || !nranges) return;
  table = t;
  pthread_atfork(NULL, NULL, forked);
  active = 1;
}

/* After the program's own destructors and atexit handlers (this library was loaded first, so
   it is finalized last): what is still held was never freed. */
__attribute__((destructor)) static void finish(void)
{
  if (!active) return;
  active = 0;
  int fd = open(report, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC); /* the harness made it */
  if (fd < 0) return;
  uintptr_t     site[CALLERS];
  unsigned long blocks[CALLERS], bytes[CALLERS], held = 0, held_bytes = 0;
  int           nsites = 0;
  for (unsigned h = 0; h < SLOTS; h++) {
    if (table[h].p == EMPTY || table[h].p == GONE) continue;
    held++;
    held_bytes += table[h].size;
    int k = 0;
    while (k < nsites && site[k] != table[h].caller) k++;
    if (k == nsites && nsites < CALLERS) {
      site[k] = table[h].caller;
      blocks[k] = bytes[k] = 0;
      nsites++;
    }
    if (k < nsites) {
      blocks[k]++;
      bytes[k] += table[h].size;
    }
  }
  char buf[4096];
  int  len = snprintf(buf, sizeof buf, "hpcbench-malloc 1\nheld %lu %lu\ntracked %lu\noverflow %d\n", held, held_bytes,
                      tracked, overflow);
  for (int k = 0; k < nsites && len < (int)sizeof buf - 64; k++)
    len += snprintf(buf + len, sizeof buf - len, "caller 0x%lx %lu %lu\n", (unsigned long)(site[k] - base - 1),
                    blocks[k], bytes[k]);
  len += snprintf(buf + len, sizeof buf - len, "end\n");
  if (write(fd, buf, (size_t)len) < 0) { }
  close(fd);
}
