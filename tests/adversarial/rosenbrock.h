/*
  The honest part of every adversarial program in this folder: minimise the chained
  Rosenbrock function (in y = x / s) with Tao, as problems/rosenbrock/reference does, and print the
  output contract. Each trick program includes this file and adds its trick around it.
*/
#include <petsctao.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the program reads -n, -alpha and -scale (the prefix tricks read them under their prefix). */
static const char *option_prefix = NULL;

typedef struct {
  PetscInt  n;
  PetscReal alpha;
  PetscReal scale;
} AppCtx;

static PetscErrorCode FormFunctionGradient(Tao tao, Vec X, PetscReal *f, Vec G, void *ptr)
{
  AppCtx            *user = (AppCtx *)ptr;
  const PetscScalar *x;
  PetscScalar       *g;
  PetscReal          ff = 0.0;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(X, &x));
  PetscCall(VecGetArray(G, &g));
  for (PetscInt i = 0; i < user->n; i++) g[i] = 0.0;
  for (PetscInt i = 0; i < user->n - 1; i++) {
    PetscReal yi = PetscRealPart(x[i]) / user->scale, yj = PetscRealPart(x[i + 1]) / user->scale;
    PetscReal t1 = yj - yi * yi, t2 = 1.0 - yi;
    ff += user->alpha * t1 * t1 + t2 * t2;
    g[i] += (-4.0 * user->alpha * t1 * yi - 2.0 * t2) / user->scale;
    g[i + 1] += 2.0 * user->alpha * t1 / user->scale;
  }
  PetscCall(VecRestoreArray(G, &g));
  PetscCall(VecRestoreArrayRead(X, &x));
  *f = ff;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Where a copy of the printed answer goes (the caching tricks set it). */
static FILE *answer_copy = NULL;

/* Solve and print `solution:` and `objective:`; `n` gets the problem size. */
static PetscErrorCode Solve(PetscInt *n)
{
  AppCtx             user = {6, 50.0, 1.0};
  Tao                tao;
  Vec                x;
  const PetscScalar *xs;
  PetscReal          f;

  PetscFunctionBeginUser;
  PetscOptionsBegin(PETSC_COMM_WORLD, option_prefix, "Rosenbrock options", NULL);
  PetscCall(PetscOptionsInt("-n", "number of variables", NULL, user.n, &user.n, NULL));
  PetscCall(PetscOptionsReal("-alpha", "coupling coefficient", NULL, user.alpha, &user.alpha, NULL));
  PetscCall(PetscOptionsReal("-scale", "scale of the variables", NULL, user.scale, &user.scale, NULL));
  PetscOptionsEnd();
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, user.n, &x));
  PetscCall(VecSet(x, 0.0));
  PetscCall(TaoCreate(PETSC_COMM_SELF, &tao));
  PetscCall(TaoSetType(tao, TAOBQNLS));
  PetscCall(TaoSetSolution(tao, x));
  PetscCall(TaoSetObjectiveAndGradient(tao, NULL, FormFunctionGradient, &user));
  PetscCall(TaoSetTolerances(tao, 1e-8, 0.0, 0.0));
  PetscCall(TaoSetMaximumIterations(tao, 10000));
  PetscCall(TaoSetFromOptions(tao));
  PetscCall(TaoSolve(tao));
  PetscCall(TaoGetSolutionStatus(tao, NULL, &f, NULL, NULL, NULL, NULL));
  PetscCall(VecGetArrayRead(x, &xs));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "solution:"));
  for (PetscInt i = 0; i < user.n; i++) PetscCall(PetscPrintf(PETSC_COMM_WORLD, " %.10e", (double)PetscRealPart(xs[i])));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\nobjective: %.10e\n", (double)f));
  if (answer_copy) {
    fprintf(answer_copy, "solution:");
    for (PetscInt i = 0; i < user.n; i++) fprintf(answer_copy, " %.10e", (double)PetscRealPart(xs[i]));
    fprintf(answer_copy, "\nobjective: %.10e\n", (double)f);
  }
  PetscCall(VecRestoreArrayRead(x, &xs));
  PetscCall(TaoDestroy(&tao));
  PetscCall(VecDestroy(&x));
  *n = user.n;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Print a wrong answer of the right shape, without solving. */
PETSC_UNUSED static PetscErrorCode PrintGarbage(void)
{
  PetscInt n = 6;

  PetscFunctionBeginUser;
  PetscCall(PetscOptionsGetInt(NULL, option_prefix, "-n", &n, NULL));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "solution:"));
  for (PetscInt i = 0; i < n; i++) PetscCall(PetscPrintf(PETSC_COMM_WORLD, " %.10e", 0.5));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\nobjective: %.10e\n", 1.0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Memory from PetscMalloc never freed: PETSc's -malloc_dump lists it at PetscFinalize. Kept in
   a global, valgrind calls it "still reachable", not lost: only PETSc's dump sees this leak. */
static PetscScalar *kept_forever;
PETSC_UNUSED static PetscErrorCode LeakPetscMemory(void)
{
  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(512, &kept_forever));
  for (PetscInt i = 0; i < 512; i++) kept_forever[i] = 1.0;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A raw malloc never freed: only valgrind sees it ("definitely lost"). */
static void *volatile leak_sink;
PETSC_UNUSED static void LeakRaw(size_t bytes)
{
  char *p = (char *)malloc(bytes);
  if (p) memset(p, 7, bytes);
  leak_sink = p;
  leak_sink = NULL;
}
