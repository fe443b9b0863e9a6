static char help[] = "Solid-fuel ignition (Bratu) on the rectangle [0,w] x [0,1]: the turning point (fold) of the\n"
                     "solution branch by natural-parameter continuation with step halving, and the minimal\n"
                     "solution at 99% of it, by Newton's method.\n"
                     "  -n <int> : grid intervals per unit length (the grid has (w n + 1) x (n + 1) points)\n"
                     "  -w <int> : width of the rectangle\n"
                     "  -ky <real>: the coefficient of u_yy (default 1)\n\n";

/*
  Solves -(u_xx + ky u_yy) = lambda exp(u) in (0,w) x (0,1), u = 0 on the boundary (ky = 1: -lap u),
  with the five-point difference on a uniform grid of spacing h = 1/n that includes the boundary points (their rows
  read u = 0, scaled like the interior rows so the Jacobian stays well conditioned).

  1. The fold lambda*: the largest lambda at which the discrete equations have a solution. The
     lower branch is followed upward in lambda from the solution at lambda = 1, each Newton
     solve (SNES, analytic Jacobian) starting from the last converged state; a step whose solve
     fails is halved, until the step is below 1e-9 lambda. Near the fold the Jacobian is nearly
     singular, so the linear solves are direct by default (LU; redundant LU on several ranks),
     and a solve that fails says the branch has turned, not that something broke.
  2. The minimal (lower-branch) solution at 0.99 lambda*: Newton from u = 0, a subsolution from
     which Newton's iterates rise monotonically to the minimal solution (the problem is convex).

  Output (rank 0): the fold, and the maximum and discrete L2 norm of the solution at 0.99 lambda*.
*/

#include <petscdmda.h>
#include <petscsnes.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

typedef struct {
  PetscReal lambda; /* the parameter the callbacks use */
  PetscReal h;      /* grid spacing */
  PetscReal ky;     /* the coefficient of u_yy (-ky): a drawn real, so the answers cannot be tabulated by -n and -w */
} Ctx;

static PetscErrorCode Residual(SNES snes, Vec U, Vec F, void *ptr)
{
  Ctx                *ctx = (Ctx *)ptr;
  DM                  da;
  DMDALocalInfo       info;
  Vec                 Ul;
  const PetscScalar **u;
  PetscScalar       **f;
  const PetscReal     ih2 = 1.0 / (ctx->h * ctx->h);

  PetscFunctionBeginUser;
  PetscCall(SNESGetDM(snes, &da));
  PetscCall(DMDAGetLocalInfo(da, &info));
  PetscCall(DMGetLocalVector(da, &Ul));
  PetscCall(DMGlobalToLocal(da, U, INSERT_VALUES, Ul));
  PetscCall(DMDAVecGetArrayRead(da, Ul, &u));
  PetscCall(DMDAVecGetArray(da, F, &f));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j) {
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
      if (i == 0 || j == 0 || i == info.mx - 1 || j == info.my - 1) f[j][i] = 4.0 * ih2 * u[j][i];
      else f[j][i] = ih2 * (4.0 * u[j][i] - u[j][i - 1] - u[j][i + 1] - u[j - 1][i] - u[j + 1][i]) + (ctx->ky - 1.0) * ih2 * (2.0 * u[j][i] - u[j - 1][i] - u[j + 1][i]) - ctx->lambda * PetscExpScalar(u[j][i]);
    }
  }
  PetscCall(DMDAVecRestoreArrayRead(da, Ul, &u));
  PetscCall(DMDAVecRestoreArray(da, F, &f));
  PetscCall(DMRestoreLocalVector(da, &Ul));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Jacobian(SNES snes, Vec U, Mat J, Mat P, void *ptr)
{
  Ctx                *ctx = (Ctx *)ptr;
  DM                  da;
  DMDALocalInfo       info;
  const PetscScalar **u;
  const PetscReal     ih2 = 1.0 / (ctx->h * ctx->h);

  PetscFunctionBeginUser;
  (void)J;
  PetscCall(SNESGetDM(snes, &da));
  PetscCall(DMDAGetLocalInfo(da, &info));
  PetscCall(DMDAVecGetArrayRead(da, U, &u));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j) {
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
      MatStencil  row = {0}, col[5] = {{0}};
      PetscScalar v[5];
      row.i = i;
      row.j = j;
      if (i == 0 || j == 0 || i == info.mx - 1 || j == info.my - 1) {
        v[0] = 4.0 * ih2;
        PetscCall(MatSetValuesStencil(P, 1, &row, 1, &row, v, INSERT_VALUES));
        continue;
      }
      for (PetscInt k = 0; k < 5; ++k) col[k] = row;
      col[1].i = i - 1;
      col[2].i = i + 1;
      col[3].j = j - 1;
      col[4].j = j + 1;
      v[0] = 4.0 * ih2 - ctx->lambda * PetscExpScalar(u[j][i]);
      v[1] = v[2] = -ih2;
      v[0] += 2.0 * (ctx->ky - 1.0) * ih2;
      v[3] = v[4] = -ctx->ky * ih2;
      PetscCall(MatSetValuesStencil(P, 1, &row, 5, col, v, INSERT_VALUES));
    }
  }
  PetscCall(DMDAVecRestoreArrayRead(da, U, &u));
  PetscCall(MatAssemblyBegin(P, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(P, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Solve at lambda from the state in U; on failure U is left as it was and *ok is false. */
static PetscErrorCode SolveAt(SNES snes, Ctx *ctx, PetscReal lambda, Vec U, Vec work, PetscBool *ok)
{
  SNESConvergedReason reason;

  PetscFunctionBeginUser;
  ctx->lambda = lambda;
  PetscCall(VecCopy(U, work));
  PetscCall(SNESSolve(snes, NULL, work));
  PetscCall(SNESGetConvergedReason(snes, &reason));
  *ok = reason > 0 ? PETSC_TRUE : PETSC_FALSE;
  if (*ok) PetscCall(VecCopy(work, U));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  DM        da;
  SNES      snes;
  KSP       ksp;
  PC        pc;
  Vec       U, W, X;
  Ctx       ctx;
  PetscInt  n = 32, w = 2;
  PetscReal umax, unorm, lam, step;
  PetscBool ok;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Bratu fold options", NULL);
  PetscCall(PetscOptionsInt("-n", "grid intervals per unit length", NULL, n, &n, NULL));
  PetscCall(PetscOptionsInt("-w", "width of the rectangle", NULL, w, &w, NULL));
  ctx.ky = 1.0;
  PetscCall(PetscOptionsReal("-ky", "the coefficient of u_yy", NULL, ctx.ky, &ctx.ky, NULL));
  PetscOptionsEnd();
  PetscCheck(n >= 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be at least 2");
  PetscCheck(w >= 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-w must be at least 1");
  PetscCheck(ctx.ky > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-ky must be positive");
  ctx.h = 1.0 / n;

  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, w * n + 1, n + 1, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateGlobalVector(da, &U));
  PetscCall(VecDuplicate(U, &W));
  PetscCall(VecDuplicate(U, &X));

  PetscCall(SNESCreate(PETSC_COMM_WORLD, &snes));
  PetscCall(SNESSetDM(snes, da));
  PetscCall(SNESSetFunction(snes, NULL, Residual, &ctx));
  PetscCall(SNESSetJacobian(snes, NULL, NULL, Jacobian, &ctx));
  PetscCall(SNESSetTolerances(snes, 1e-12, 1e-10, PETSC_DEFAULT, 30, PETSC_DEFAULT));
  PetscCall(SNESGetKSP(snes, &ksp));
  PetscCall(KSPSetType(ksp, KSPPREONLY));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCLU));
  {
    PetscMPIInt size;
    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    if (size > 1) PetscCall(PCSetType(pc, PCREDUNDANT));
  }
  PetscCall(SNESSetFromOptions(snes));

  /* 1. the fold: continuation upward in lambda from lambda = 1, halving a step whose solve fails */
  PetscCall(VecZeroEntries(U));
  lam = 1.0;
  PetscCall(SolveAt(snes, &ctx, lam, U, X, &ok));
  PetscCheck(ok, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "no solution at lambda = 1");
  step = 0.25;
  while (step > 1e-9 * lam) {
    PetscCall(SolveAt(snes, &ctx, lam + step, U, X, &ok));
    if (ok) lam += step;
    else step *= 0.5;
  }

  /* 2. the minimal solution at 0.99 lambda*, from u = 0 */
  PetscCall(VecZeroEntries(W));
  PetscCall(SolveAt(snes, &ctx, 0.99 * lam, W, X, &ok));
  PetscCheck(ok, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "Newton did not converge at 0.99 lambda* = %g", (double)(0.99 * lam));
  PetscCall(VecMax(W, NULL, &umax));
  PetscCall(VecNorm(W, NORM_2, &unorm));
  unorm *= ctx.h; /* discrete L2 norm: sqrt(h^2 sum u^2) */

  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "lambda_fold: %.10e\n", (double)lam));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "umax: %.10e\n", (double)umax));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "unorm: %.10e\n", (double)unorm));

  PetscCall(VecDestroy(&U));
  PetscCall(VecDestroy(&W));
  PetscCall(VecDestroy(&X));
  PetscCall(SNESDestroy(&snes));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
