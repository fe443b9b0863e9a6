/* The performance par of bratu-fold (docs/problems.md): the reference with the fold found by
   amplitude continuation instead of natural-parameter continuation with step halving. The branch
   is parametrised by its amplitude s = h^2 sum u (which keeps growing through the fold) with
   lambda an unknown: the bordered Newton method solves F(u, lambda) = 0, h^2 sum u = s with two
   LU solves per iteration (J a = -F, J b = exp(u) inside), and the slope d lambda / d s =
   1 / (h^2 sum b) of the converged point comes with it. The fold is where that slope vanishes:
   steps in s with a tangent predictor until its sign turns, then the secant method on the slope.
   Every solve converges (the bordered system stays regular at the fold), where the reference's
   halvings end in about 30 failed Newton solves of 30 iterations each. Part 2, the minimal
   solution at 0.99 lambda*, is the reference's (Newton from u = 0). */
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

/* E = -dF/dlambda: exp(u) at the interior points, 0 on the boundary rows */
static PetscErrorCode Source(DM da, Vec U, Vec E)
{
  DMDALocalInfo       info;
  const PetscScalar **u;
  PetscScalar       **e;

  PetscFunctionBeginUser;
  PetscCall(DMDAGetLocalInfo(da, &info));
  PetscCall(DMDAVecGetArrayRead(da, U, &u));
  PetscCall(DMDAVecGetArray(da, E, &e));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j)
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) e[j][i] = (i == 0 || j == 0 || i == info.mx - 1 || j == info.my - 1) ? 0.0 : PetscExpScalar(u[j][i]);
  PetscCall(DMDAVecRestoreArrayRead(da, U, &u));
  PetscCall(DMDAVecRestoreArray(da, E, &e));
  PetscFunctionReturn(PETSC_SUCCESS);
}

typedef struct {
  Vec F, A, B, E; /* work: residual, J^-1 (-F), J^-1 E, E */
  Mat J;
  KSP ksp; /* the SNES's own (LU; redundant LU on several ranks) */
} Border;

/* Bordered Newton on F(u, lambda) = 0, h^2 sum u = s from (U, *lambda); on success U, *lambda
   and *slope (d lambda / d s at the solution) are updated, else they are left as they were. */
static PetscErrorCode SolveAtAmplitude(SNES snes, Ctx *ctx, Border *bd, PetscReal s, Vec U, Vec X, PetscReal *lambda, PetscReal *slope, PetscBool *ok)
{
  DM        da;
  PetscReal lam = *lambda, h2 = ctx->h * ctx->h, f0 = -1, fn, sa, sb, su, dlam;

  PetscFunctionBeginUser;
  *ok = PETSC_FALSE;
  PetscCall(SNESGetDM(snes, &da));
  PetscCall(VecCopy(U, X));
  for (PetscInt it = 0; it < 30; ++it) {
    ctx->lambda = lam;
    PetscCall(Residual(snes, X, bd->F, ctx));
    PetscCall(VecNorm(bd->F, NORM_2, &fn));
    if (f0 < 0) f0 = fn;
    PetscCall(Jacobian(snes, X, bd->J, bd->J, ctx));
    PetscCall(KSPSetOperators(bd->ksp, bd->J, bd->J));
    PetscCall(Source(da, X, bd->E));
    PetscCall(VecScale(bd->F, -1.0));
    PetscCall(KSPSolve(bd->ksp, bd->F, bd->A));
    PetscCall(KSPSolve(bd->ksp, bd->E, bd->B));
    PetscCall(VecSum(bd->A, &sa));
    PetscCall(VecSum(bd->B, &sb));
    PetscCall(VecSum(X, &su));
    if (!(PetscAbsReal(sb) > 0)) break;
    dlam = (s - h2 * su - h2 * sa) / (h2 * sb);
    if (it > 0 && (fn <= 1e-10 || fn <= 1e-12 * f0) && PetscAbsReal(dlam) <= 1e-13 * lam) {
      /* converged: the slope from this point's Jacobian */
      PetscCall(VecCopy(X, U));
      *lambda = lam;
      *slope  = 1.0 / (h2 * sb);
      *ok     = PETSC_TRUE;
      PetscFunctionReturn(PETSC_SUCCESS);
    }
    PetscCall(VecAXPY(X, 1.0, bd->A));
    PetscCall(VecAXPY(X, dlam, bd->B));
    lam += dlam;
    if (!(lam > 0) || PetscIsInfOrNanReal(lam)) break;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The fold: amplitude continuation from the solution U at lambda = *lambda until the slope
   d lambda / d s turns negative, then the secant method on the slope. */
static PetscErrorCode FindFold(SNES snes, Ctx *ctx, Vec U, PetscReal *lambda)
{
  Border    bd;
  DM        da;
  Vec       X, Uprev;
  PetscReal h2 = ctx->h * ctx->h, s, ds, lam = *lambda, slope = 0, su;
  PetscBool ok;
  PetscInt  k;

  PetscFunctionBeginUser;
  PetscCall(SNESGetDM(snes, &da));
  PetscCall(SNESGetKSP(snes, &bd.ksp));
  PetscCall(VecDuplicate(U, &bd.F));
  PetscCall(VecDuplicate(U, &bd.A));
  PetscCall(VecDuplicate(U, &bd.B));
  PetscCall(VecDuplicate(U, &bd.E));
  PetscCall(VecDuplicate(U, &X));
  PetscCall(VecDuplicate(U, &Uprev));
  PetscCall(DMCreateMatrix(da, &bd.J));
  PetscCall(VecSum(U, &su));
  s = h2 * su;
  /* the slope at the start: a converged point, one bordered iteration confirms it */
  PetscCall(SolveAtAmplitude(snes, ctx, &bd, s, U, X, &lam, &slope, &ok));
  PetscCheck(ok && slope > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "amplitude continuation could not start at lambda = %g", (double)lam);
  ds = s;
  /* march in s with a tangent predictor (u' = slope b) until the slope changes sign */
  for (k = 0; k < 200; ++k) {
    PetscReal lamt = lam + ds * slope, slopet = slope;
    PetscCall(VecCopy(U, Uprev));
    PetscCall(VecAXPY(Uprev, ds * slope, bd.B)); /* bd.B: J^-1 E at the last converged point */
    PetscCall(SolveAtAmplitude(snes, ctx, &bd, s + ds, Uprev, X, &lamt, &slopet, &ok));
    if (!ok) {
      ds *= 0.5;
      PetscCall(SolveAtAmplitude(snes, ctx, &bd, s, U, X, &lam, &slope, &ok)); /* B back to this point's */
      PetscCheck(ok && ds > 1e-12 * s, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "amplitude continuation stalled at lambda = %g", (double)lam);
      continue;
    }
    if (slopet <= 0) {
      /* bracketed: [s, s + ds] with slopes slope > 0 >= slopet; secant (Illinois) on the slope */
      PetscReal sa = s, fa = slope, la = lam, sbk = s + ds, fb = slopet, lb = lamt;
      Vec       Ua = U, Ub = Uprev;
      PetscInt  side = 0;
      PetscCall(VecCopy(X, Ub)); /* the converged point at sbk */
      for (PetscInt it = 0; it < 60; ++it) {
        PetscReal sc = (sa * fb - sbk * fa) / (fb - fa), lc, fc;
        Vec       Ug = (sc - sa < sbk - sc) ? Ua : Ub;
        lc = (Ug == Ua) ? la : lb;
        PetscCall(SolveAtAmplitude(snes, ctx, &bd, sc, Ug, X, &lc, &fc, &ok));
        PetscCheck(ok, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "amplitude continuation failed near the fold, lambda = %g", (double)lc);
        /* lambda is quadratic in s near its maximum: done once the secant step is negligible */
        if (PetscAbsReal(fc) * PetscMin(sc - sa, sbk - sc) <= 1e-13 * lc || sbk - sa <= 1e-13 * sc) {
          lam = lc;
          break;
        }
        if (fc > 0) {
          sa = sc;
          fa = fc;
          la = lc;
          PetscCall(VecCopy(X, Ua));
          if (side == 1) fb *= 0.5;
          side = 1;
        } else {
          sbk = sc;
          fb  = fc;
          lb  = lc;
          PetscCall(VecCopy(X, Ub));
          if (side == -1) fa *= 0.5;
          side = -1;
        }
        lam = PetscMax(la, lb);
      }
      break;
    }
    PetscCall(VecCopy(X, U));
    s += ds;
    lam   = lamt;
    slope = slopet;
    ds *= 1.5;
  }
  PetscCheck(k < 200, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "amplitude continuation did not reach the fold");
  *lambda = lam;
  PetscCall(VecDestroy(&bd.F));
  PetscCall(VecDestroy(&bd.A));
  PetscCall(VecDestroy(&bd.B));
  PetscCall(VecDestroy(&bd.E));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Uprev));
  PetscCall(MatDestroy(&bd.J));
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
  PetscReal umax, unorm, lam;
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

  /* 1. the fold: amplitude continuation from the solution at lambda = 1 */
  PetscCall(VecZeroEntries(U));
  lam = 1.0;
  PetscCall(SolveAt(snes, &ctx, lam, U, X, &ok));
  PetscCheck(ok, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "no solution at lambda = 1");
  PetscCall(FindFold(snes, &ctx, U, &lam));

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
