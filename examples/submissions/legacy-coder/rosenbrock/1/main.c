/* Rosenbrock with Tao (written in the pre-3.17 CHKERRQ style). */
#include <petsctao.h>

typedef struct {
  PetscInt  n;
  PetscReal alpha, scale; /* y = x / scale */
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
    PetscReal yi = PetscRealPart(x[i]) / user->scale, yj = PetscRealPart(x[i + 1]) / user->scale;
    PetscReal t1 = yj - yi * yi, t2 = 1.0 - yi;
    ff += user->alpha * t1 * t1 + t2 * t2;
    g[i] += (-4.0 * user->alpha * t1 * yi - 2.0 * t2) / user->scale;
    g[i + 1] += 2.0 * user->alpha * t1 / user->scale;
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
  AppCtx             user = {6, 50.0, 1.0};
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
  ierr = PetscOptionsGetReal(NULL, NULL, "-scale", &user.scale, NULL);CHKERRQ(ierr);
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
