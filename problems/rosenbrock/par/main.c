/* The performance par of rosenbrock (docs/problems.md): the reference with Tao's Newton line
   search (TAONLS) and the analytic tridiagonal Hessian in place of the bounded quasi-Newton
   method: a handful of Newton steps instead of hundreds of quasi-Newton ones. */
/*
  Minimise the chained Rosenbrock function in scaled variables y = x / s,
    f(x) = sum_{i=0}^{n-2} alpha (y_{i+1} - y_i^2)^2 + (1 - y_i)^2,
  with Tao, from the start point x_i = 0 (the function also has a local minimiser
  near x_0 = -s, in whose basin the classic start -1.2 s, s, ... lies), using the
  analytic gradient and Hessian (a tridiagonal matrix, so Newton-type methods
  such as -tao_type nls, ntr, bnls, tron work as well as the quasi-Newton
  default). The global minimiser is x_i = s, f = 0: the scale moves it, so the
  answer depends on every input (s = 1 is the classic function). The method is
  Tao's bounded quasi-Newton line search unless -tao_type says otherwise;
  tolerances from -tao_gatol etc. A solve that does not converge is an error:
  the printed minimiser is only ever a converged one.

  Options: -n <n> variables, -alpha <a> coupling coefficient, -scale <s> scale (s > 0).
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
  PetscCall(VecGetArrayRead(X, &x));
  PetscCall(VecGetArray(G, &g));
  for (PetscInt i = 0; i < user->n; i++) g[i] = 0.0;
  /* in y = x / s: df/dx = (df/dy) / s */
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
  PetscCall(PetscLogFlops(21.0 * (user->n - 1)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The Hessian is tridiagonal: d2f/dx_i^2 and d2f/dx_i dx_{i+1} of each term (d2f/dy2 / s^2) */
static PetscErrorCode FormHessian(Tao tao, Vec X, Mat H, Mat Hpre, void *ptr)
{
  AppCtx            *user = (AppCtx *)ptr;
  const PetscScalar *x;

  PetscFunctionBeginUser;
  PetscCall(MatZeroEntries(Hpre));
  PetscCall(VecGetArrayRead(X, &x));
  for (PetscInt i = 0; i < user->n - 1; i++) {
    PetscReal   s2 = user->scale * user->scale;
    PetscReal   yi = PetscRealPart(x[i]) / user->scale, yj = PetscRealPart(x[i + 1]) / user->scale;
    PetscInt    idx[2] = {i, i + 1};
    PetscScalar v[4];

    v[0] = (12.0 * user->alpha * yi * yi - 4.0 * user->alpha * yj + 2.0) / s2;
    v[1] = -4.0 * user->alpha * yi / s2;
    v[2] = v[1];
    v[3] = 2.0 * user->alpha / s2;
    PetscCall(MatSetValues(Hpre, 2, idx, 2, idx, v, ADD_VALUES));
  }
  PetscCall(VecRestoreArrayRead(X, &x));
  PetscCall(MatAssemblyBegin(Hpre, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(Hpre, MAT_FINAL_ASSEMBLY));
  if (H != Hpre) {
    PetscCall(MatAssemblyBegin(H, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(H, MAT_FINAL_ASSEMBLY));
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

  PetscCall(PetscInitialize(&argc, &argv, NULL, "Chained Rosenbrock minimisation with Tao"));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCheck(size == 1, PETSC_COMM_WORLD, PETSC_ERR_WRONG_MPI_SIZE, "This is a serial problem: run on one rank");
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Rosenbrock options", NULL);
  PetscCall(PetscOptionsInt("-n", "number of variables", NULL, user.n, &user.n, NULL));
  PetscCall(PetscOptionsReal("-alpha", "coupling coefficient", NULL, user.alpha, &user.alpha, NULL));
  PetscCall(PetscOptionsReal("-scale", "scale s of the variables (the minimiser is x_i = s)", NULL, user.scale, &user.scale, NULL));
  PetscOptionsEnd();
  PetscCheck(user.n >= 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be at least 2");
  PetscCheck(user.scale > 0.0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-scale must be positive");

  PetscCall(VecCreateSeq(PETSC_COMM_SELF, user.n, &x));
  PetscCall(VecGetArray(x, &xa));
  for (PetscInt i = 0; i < user.n; i++) xa[i] = 0.0;
  PetscCall(VecRestoreArray(x, &xa));

  PetscCall(TaoCreate(PETSC_COMM_SELF, &tao));
  PetscCall(TaoSetType(tao, TAONLS)); /* par: Newton line search with the analytic Hessian */
  PetscCall(TaoSetSolution(tao, x));
  PetscCall(TaoSetObjectiveAndGradient(tao, NULL, FormFunctionGradient, &user));
  PetscCall(MatCreateSeqAIJ(PETSC_COMM_SELF, user.n, user.n, 3, NULL, &H));
  PetscCall(MatSetOption(H, MAT_SYMMETRIC, PETSC_TRUE));
  PetscCall(TaoSetHessian(tao, H, H, FormHessian, &user));
  PetscCall(TaoSetTolerances(tao, 1e-8, 0.0, 0.0)); /* |x - x*| ~ 1e-8: every method reaches it */
  PetscCall(TaoSetMaximumIterations(tao, 10000));
  PetscCall(TaoSetFromOptions(tao));
  PetscCall(TaoSolve(tao));
  PetscCall(TaoGetConvergedReason(tao, &reason));
  PetscCheck(reason > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "Tao did not converge: %s", TaoConvergedReasons[reason]);

  PetscCall(TaoGetSolutionStatus(tao, NULL, &f, NULL, NULL, NULL, NULL));
  PetscCall(VecGetArrayRead(x, &xs));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "solution:"));
  for (PetscInt i = 0; i < user.n; i++) PetscCall(PetscPrintf(PETSC_COMM_WORLD, " %.10e", (double)PetscRealPart(xs[i])));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\nobjective: %.10e\n", (double)f));
  PetscCall(VecRestoreArrayRead(x, &xs));
  PetscCall(TaoDestroy(&tao));
  PetscCall(MatDestroy(&H));
  PetscCall(VecDestroy(&x));
  PetscCall(PetscFinalize());
  return 0;
}
