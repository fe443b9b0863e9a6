/*
  Minimise the chained Rosenbrock function
    f(x) = sum_{i=0}^{n-2} alpha (x_{i+1} - x_i^2)^2 + (1 - x_i)^2
  with Tao, from the start point x_i = -1.2 (even i), 1.0 (odd i), using the
  analytic gradient. The method is Tao's default (bounded quasi-Newton line
  search) unless -tao_type says otherwise; tolerances from -tao_gatol etc.

  Options: -n <n> variables, -alpha <a> coupling coefficient.
*/
#include <petsctao.h>

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

  PetscErrorCode ierr;

  PetscFunctionBeginUser;
  ierr = VecGetArrayRead(X, &x);CHKERRQ(ierr);
  ierr = VecGetArray(G, &g);CHKERRQ(ierr);
  for (PetscInt i = 0; i < user->n; i++) g[i] = 0.0;
  for (PetscInt i = 0; i < user->n - 1; i++) {
    PetscReal t1 = PetscRealPart(x[i + 1] - x[i] * x[i]), t2 = PetscRealPart(1.0 - x[i]);
    ff += user->alpha * t1 * t1 + t2 * t2;
    g[i] += -4.0 * user->alpha * t1 * x[i] - 2.0 * t2;
    g[i + 1] += 2.0 * user->alpha * t1;
  }
  ierr = VecRestoreArray(G, &g);CHKERRQ(ierr);
  ierr = VecRestoreArrayRead(X, &x);CHKERRQ(ierr);
  *f = ff;
  ierr = PetscLogFlops(15.0 * (user->n - 1));CHKERRQ(ierr);
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscErrorCode     ierr;
  AppCtx             user = {6, 50.0};
  Tao                tao;
  Vec                x;
  PetscScalar       *xa;
  const PetscScalar *xs;
  PetscReal          f;
  PetscMPIInt        size;

  ierr = PetscInitialize(&argc, &argv, NULL, "Chained Rosenbrock minimisation with Tao"); if (ierr) return ierr;
  ierr = MPI_Comm_size(PETSC_COMM_WORLD, &size);CHKERRQ(ierr);
  PetscCheck(size == 1, PETSC_COMM_WORLD, PETSC_ERR_WRONG_MPI_SIZE, "This is a serial problem: run on one rank");
  ierr = PetscOptionsGetInt(NULL, NULL, "-n", &user.n, NULL);CHKERRQ(ierr);
  ierr = PetscOptionsGetReal(NULL, NULL, "-alpha", &user.alpha, NULL);CHKERRQ(ierr);
  PetscCheck(user.n >= 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be at least 2");

  ierr = VecCreateSeq(PETSC_COMM_SELF, user.n, &x);CHKERRQ(ierr);
  ierr = VecGetArray(x, &xa);CHKERRQ(ierr);
  for (PetscInt i = 0; i < user.n; i++) xa[i] = (i % 2 == 0) ? -1.2 : 1.0;
  ierr = VecRestoreArray(x, &xa);CHKERRQ(ierr);

  ierr = TaoCreate(PETSC_COMM_SELF, &tao);CHKERRQ(ierr);
  ierr = TaoSetType(tao, TAOBQNLS);CHKERRQ(ierr);
  ierr = TaoSetSolution(tao, x);CHKERRQ(ierr);
  ierr = TaoSetObjectiveAndGradient(tao, NULL, FormFunctionGradient, &user);CHKERRQ(ierr);
  ierr = TaoSetTolerances(tao, 1e-10, 0.0, 0.0);CHKERRQ(ierr);
  ierr = TaoSetMaximumIterations(tao, 10000);CHKERRQ(ierr);
  ierr = TaoSetFromOptions(tao);CHKERRQ(ierr);
  ierr = TaoSolve(tao);CHKERRQ(ierr);

  ierr = TaoGetSolutionStatus(tao, NULL, &f, NULL, NULL, NULL, NULL);CHKERRQ(ierr);
  ierr = VecGetArrayRead(x, &xs);CHKERRQ(ierr);
  ierr = PetscPrintf(PETSC_COMM_WORLD, "solution:");CHKERRQ(ierr);
  for (PetscInt i = 0; i < user.n; i++) ierr = PetscPrintf(PETSC_COMM_WORLD, " %.10e", (double)PetscRealPart(xs[i]));CHKERRQ(ierr);
  ierr = PetscPrintf(PETSC_COMM_WORLD, "\nobjective: %.10e\n", (double)f);CHKERRQ(ierr);
  ierr = VecRestoreArrayRead(x, &xs);CHKERRQ(ierr);
  ierr = TaoDestroy(&tao);CHKERRQ(ierr);
  ierr = VecDestroy(&x);CHKERRQ(ierr);
  ierr = PetscFinalize();CHKERRQ(ierr);
  return ierr;
}
