/*
  Sample agent "unchecked-coder": the reference rosenbrock program with every
  PetscCall()/PetscCallMPI() removed. It computes the same answer, but an error
  in any PETSc call would go unnoticed (the error-handling evaluator's lowest case).

  Minimise the chained Rosenbrock function
    f(x) = sum_{i=0}^{n-2} alpha (y_{i+1} - y_i^2)^2 + (1 - y_i)^2,  y = x / s
  with Tao, from the start point x_i = 0 (the function also has a local minimiser
  near x_0 = -s, in whose basin the classic start -1.2 s, s, ... lies), using the
  analytic gradient and Hessian (a tridiagonal matrix, so Newton-type methods
  such as -tao_type nls, ntr, bnls, tron work as well as the quasi-Newton
  default). The method is Tao's bounded quasi-Newton line search unless
  -tao_type says otherwise; tolerances from -tao_gatol etc. A solve that does
  not converge is an error: the printed minimiser is only ever a converged one.

  Options: -n <n> variables, -alpha <a> coupling coefficient, -scale <s> scale.
*/
#include <petsctao.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

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
  VecGetArrayRead(X, &x);
  VecGetArray(G, &g);
  for (PetscInt i = 0; i < user->n; i++) g[i] = 0.0;
  for (PetscInt i = 0; i < user->n - 1; i++) {
    PetscReal yi = PetscRealPart(x[i]) / user->scale, yj = PetscRealPart(x[i + 1]) / user->scale;
    PetscReal t1 = yj - yi * yi, t2 = 1.0 - yi;
    ff += user->alpha * t1 * t1 + t2 * t2;
    g[i] += (-4.0 * user->alpha * t1 * yi - 2.0 * t2) / user->scale;
    g[i + 1] += 2.0 * user->alpha * t1 / user->scale;
  }
  VecRestoreArray(G, &g);
  VecRestoreArrayRead(X, &x);
  *f = ff;
  PetscLogFlops(15.0 * (user->n - 1));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The Hessian is tridiagonal: d2f/dx_i^2 and d2f/dx_i dx_{i+1} of each term */
static PetscErrorCode FormHessian(Tao tao, Vec X, Mat H, Mat Hpre, void *ptr)
{
  AppCtx            *user = (AppCtx *)ptr;
  const PetscScalar *x;

  PetscFunctionBeginUser;
  MatZeroEntries(Hpre);
  VecGetArrayRead(X, &x);
  for (PetscInt i = 0; i < user->n - 1; i++) {
    PetscReal   s2 = user->scale * user->scale;
    PetscReal   xi = PetscRealPart(x[i]) / user->scale, xj = PetscRealPart(x[i + 1]) / user->scale;
    PetscInt    idx[2] = {i, i + 1};
    PetscScalar v[4];

    v[0] = (12.0 * user->alpha * xi * xi - 4.0 * user->alpha * xj + 2.0) / s2;
    v[1] = -4.0 * user->alpha * xi / s2;
    v[2] = v[1];
    v[3] = 2.0 * user->alpha / s2;
    MatSetValues(Hpre, 2, idx, 2, idx, v, ADD_VALUES);
  }
  VecRestoreArrayRead(X, &x);
  MatAssemblyBegin(Hpre, MAT_FINAL_ASSEMBLY);
  MatAssemblyEnd(Hpre, MAT_FINAL_ASSEMBLY);
  if (H != Hpre) {
    MatAssemblyBegin(H, MAT_FINAL_ASSEMBLY);
    MatAssemblyEnd(H, MAT_FINAL_ASSEMBLY);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  AppCtx             user = {6, 50.0, 1.0};
  Tao                tao;
  Vec                x;
  Mat                H;
  TaoConvergedReason reason;
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
  PetscOptionsReal("-scale", "scale of the variables", NULL, user.scale, &user.scale, NULL);
  PetscOptionsEnd();
  PetscCheck(user.n >= 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be at least 2");

  VecCreateSeq(PETSC_COMM_SELF, user.n, &x);
  VecGetArray(x, &xa);
  for (PetscInt i = 0; i < user.n; i++) xa[i] = 0.0;
  VecRestoreArray(x, &xa);

  TaoCreate(PETSC_COMM_SELF, &tao);
  TaoSetType(tao, TAOBQNLS);
  TaoSetSolution(tao, x);
  TaoSetObjectiveAndGradient(tao, NULL, FormFunctionGradient, &user);
  MatCreateSeqAIJ(PETSC_COMM_SELF, user.n, user.n, 3, NULL, &H);
  MatSetOption(H, MAT_SYMMETRIC, PETSC_TRUE);
  TaoSetHessian(tao, H, H, FormHessian, &user);
  TaoSetTolerances(tao, 1e-8, 0.0, 0.0); /* |x - x*| ~ 1e-8: every method reaches it */
  TaoSetMaximumIterations(tao, 10000);
  TaoSetFromOptions(tao);
  TaoSolve(tao);
  TaoGetConvergedReason(tao, &reason);
  PetscCheck(reason > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "Tao did not converge: %s", TaoConvergedReasons[reason]);

  TaoGetSolutionStatus(tao, NULL, &f, NULL, NULL, NULL, NULL);
  VecGetArrayRead(x, &xs);
  PetscPrintf(PETSC_COMM_WORLD, "solution:");
  for (PetscInt i = 0; i < user.n; i++) PetscPrintf(PETSC_COMM_WORLD, " %.10e", (double)PetscRealPart(xs[i]));
  PetscPrintf(PETSC_COMM_WORLD, "\nobjective: %.10e\n", (double)f);
  VecRestoreArrayRead(x, &xs);
  TaoDestroy(&tao);
  MatDestroy(&H);
  VecDestroy(&x);
  PetscFinalize();
  return 0;
}
