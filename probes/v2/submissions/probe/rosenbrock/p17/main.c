/*
  Minimise the chained Rosenbrock function
    f(x) = sum_{i=0}^{n-2} alpha (x_{i+1} - x_i^2)^2 + (1 - x_i)^2
  with Tao, from the start point x_i = -1.2 (even i), 1.0 (odd i), using the
  analytic gradient. The method is Tao's default (bounded quasi-Newton line
  search) unless -tao_type says otherwise; tolerances from -tao_gatol etc.

  Options: -n <n> variables, -alpha <a> coupling coefficient.
*/
#include <petsctao.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

typedef struct {
  PetscInt  n;
  PetscReal alpha;
} AppCtx;

static PetscErrorCode FormFunctionGradient(Tao tao, Vec X, PetscReal *f, Vec G, void *ptr)
{
  AppCtx            *user = (AppCtx *)ptr;
  const PetscScalar *x;
  PetscScalar       *g;
  PetscReal          ff = 0.0;

  PetscFunctionBeginUser;
  VecGetArrayRead(X, &x);
  VecGetArray(G, &g);
  for (PetscInt i = 0; i < user->n; i++) g[i] = 0.0;
  for (PetscInt i = 0; i < user->n - 1; i++) {
    PetscReal t1 = PetscRealPart(x[i + 1] - x[i] * x[i]), t2 = PetscRealPart(1.0 - x[i]);
    ff += user->alpha * t1 * t1 + t2 * t2;
    g[i] += -4.0 * user->alpha * t1 * x[i] - 2.0 * t2;
    g[i + 1] += 2.0 * user->alpha * t1;
  }
  VecRestoreArray(G, &g);
  VecRestoreArrayRead(X, &x);
  *f = ff;
  PetscLogFlops(15.0 * (user->n - 1));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  AppCtx             user = {6, 50.0};
  Tao                tao;
  Vec                x;
  PetscScalar       *xa;
  const PetscScalar *xs;
  PetscReal          f;
  PetscMPIInt        size;

  PetscInitialize(&argc, &argv, NULL, "Chained Rosenbrock minimisation with Tao");
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  PetscCheck(size == 1, PETSC_COMM_WORLD, PETSC_ERR_WRONG_MPI_SIZE, "This is a serial problem: run on one rank");
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Rosenbrock options", NULL);
  PetscOptionsInt("-n", "number of variables", NULL, user.n, &user.n, NULL);
  PetscOptionsReal("-alpha", "coupling coefficient", NULL, user.alpha, &user.alpha, NULL);
  PetscOptionsEnd();
  PetscCheck(user.n >= 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be at least 2");

  VecCreateSeq(PETSC_COMM_SELF, user.n, &x);
  VecGetArray(x, &xa);
  for (PetscInt i = 0; i < user.n; i++) xa[i] = (i % 2 == 0) ? -1.2 : 1.0;
  VecRestoreArray(x, &xa);

  TaoCreate(PETSC_COMM_SELF, &tao);
  TaoSetType(tao, TAOBQNLS);
  TaoSetSolution(tao, x);
  TaoSetObjectiveAndGradient(tao, NULL, FormFunctionGradient, &user);
  TaoSetTolerances(tao, 1e-10, 0.0, 0.0);
  TaoSetMaximumIterations(tao, 10000);
  TaoSetFromOptions(tao);
  TaoSolve(tao);

  TaoGetSolutionStatus(tao, NULL, &f, NULL, NULL, NULL, NULL);
  VecGetArrayRead(x, &xs);
  PetscPrintf(PETSC_COMM_WORLD, "solution:");
  for (PetscInt i = 0; i < user.n; i++) PetscPrintf(PETSC_COMM_WORLD, " %.10e", (double)PetscRealPart(xs[i]));
  PetscPrintf(PETSC_COMM_WORLD, "\nobjective: %.10e\n", (double)f);
  VecRestoreArrayRead(x, &xs);
  TaoDestroy(&tao);
  VecDestroy(&x);
  PetscFinalize();
  return 0;
}
