/*
  Minimise the chained Rosenbrock function
    f(x) = sum_{i=0}^{n-2} alpha (x_{i+1} - x_i^2)^2 + (1 - x_i)^2
  with Tao, from the start point x_i = -1.2 (even i), 1.0 (odd i), using the
  a finite-difference gradient (TaoDefaultComputeGradient). The method is Tao's default (bounded quasi-Newton line
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

static PetscErrorCode FormFunction(Tao tao, Vec X, PetscReal *f, void *ptr)
{
  AppCtx            *user = (AppCtx *)ptr;
  const PetscScalar *x;
  PetscReal          ff = 0.0;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(X, &x));
  for (PetscInt i = 0; i < user->n - 1; i++) {
    PetscReal t1 = PetscRealPart(x[i + 1] - x[i] * x[i]), t2 = PetscRealPart(1.0 - x[i]);
    ff += user->alpha * t1 * t1 + t2 * t2;
  }
  PetscCall(VecRestoreArrayRead(X, &x));
  *f = ff;
  PetscCall(PetscLogFlops(6.0 * (user->n - 1)));
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

  PetscCall(PetscInitialize(&argc, &argv, NULL, "Chained Rosenbrock minimisation with Tao"));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCheck(size == 1, PETSC_COMM_WORLD, PETSC_ERR_WRONG_MPI_SIZE, "This is a serial problem: run on one rank");
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Rosenbrock options", NULL);
  PetscCall(PetscOptionsInt("-n", "number of variables", NULL, user.n, &user.n, NULL));
  PetscCall(PetscOptionsReal("-alpha", "coupling coefficient", NULL, user.alpha, &user.alpha, NULL));
  PetscOptionsEnd();
  PetscCheck(user.n >= 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be at least 2");

  PetscCall(VecCreateSeq(PETSC_COMM_SELF, user.n, &x));
  PetscCall(VecGetArray(x, &xa));
  for (PetscInt i = 0; i < user.n; i++) xa[i] = (i % 2 == 0) ? -1.2 : 1.0;
  PetscCall(VecRestoreArray(x, &xa));

  PetscCall(TaoCreate(PETSC_COMM_SELF, &tao));
  PetscCall(TaoSetType(tao, TAOBQNLS));
  PetscCall(TaoSetSolution(tao, x));
  PetscCall(TaoSetObjective(tao, FormFunction, &user));
  PetscCall(TaoSetGradient(tao, NULL, TaoDefaultComputeGradient, &user));
  PetscCall(TaoSetTolerances(tao, 1e-10, 0.0, 0.0));
  PetscCall(TaoSetMaximumIterations(tao, 10000));
  PetscCall(TaoSetFromOptions(tao));
  PetscCall(TaoSolve(tao));

  PetscCall(TaoGetSolutionStatus(tao, NULL, &f, NULL, NULL, NULL, NULL));
  PetscCall(VecGetArrayRead(x, &xs));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "solution:"));
  for (PetscInt i = 0; i < user.n; i++) PetscCall(PetscPrintf(PETSC_COMM_WORLD, " %.10e", (double)PetscRealPart(xs[i])));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\nobjective: %.10e\n", (double)f));
  PetscCall(VecRestoreArrayRead(x, &xs));
  PetscCall(TaoDestroy(&tao));
  PetscCall(VecDestroy(&x));
  PetscCall(PetscFinalize());
  return 0;
}
