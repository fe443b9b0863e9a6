/* The performance par of allen-cahn-imex (docs/problems.md): the reference with fifth-order ARK
   IMEX (TSARKIMEX5) in place of ARKIMEX 3, and the implicit stages solved as what they are, linear
   and symmetric positive definite: one Krylov solve per stage (SNESKSPONLY) by CG with Jacobi to
   rtol 1e-10, and the IJacobian shift I - eps^2 lap made by copying -eps^2 lap, assembled once,
   and shifting its diagonal, instead of assembling it row by row at every stage. On the
   performance case (-n 40 -eps 1.2: diffusion eigenvalues to -8 eps^2 n^2 = -18400) it takes
   about 50 steps where ARKIMEX 3 takes 700 and the explicit RK 5(4) 11000. Every option of the
   reference still applies (a fully implicit method needs -snes_type newtonls). */
static char help[] = "Allen-Cahn phase separation on the periodic unit square, integrated by additive Runge-Kutta\n"
                     "IMEX (TSARKIMEX) with adaptive steps: diffusion implicit, the double-well reaction explicit.\n"
                     "  -n <int>       : grid points per side (a multiple of 4)\n"
                     "  -eps <real>    : interface width parameter epsilon\n"
                     "  -tfinal <real> : final time\n\n";

/*
  u_t = eps^2 lap u + u - u^3 on the periodic unit square, from
  u(x, y, 0) = 0.1 + 0.4 cos(2 pi x) cos(4 pi y) + 0.2 sin(2 pi (x + y)).

  Grid: n x n points x_i = i/n, y_j = j/n (periodic DMDA), five-point Laplacian.

  Splitting: the diffusion eps^2 lap u is the stiff part (its eigenvalues reach -8 eps^2 n^2), the
  reaction u - u^3 is not (|f'(u)| <= 2 on |u| <= 1). The diffusion goes into the IFunction
  u_t - eps^2 lap u with its constant IJacobian shift I - eps^2 lap; the reaction is the
  RHSFunction, treated explicitly by the IMEX scheme. Its RHSJacobian (diag(1 - 3 u^2)) is also
  given, so that fully implicit methods (-ts_arkimex_fully_implicit, -ts_type bdf) can be chosen
  from the command line. Steps are chosen by TS's error control (rtol = atol = 1e-9).

  Output (rank 0): at -tfinal, the Ginzburg-Landau energy sum h^2 (eps^2/2 |grad_h u|^2 +
  (u^2 - 1)^2 / 4) with forward differences, the mean of u, and u at (1/4, 1/2), (1/2, 1/4) and
  (3/4, 3/4).
*/

#include <petscdmda.h>
#include <petscts.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif
/* PETSc < 3.22 says PETSC_DEFAULT where PETSC_CURRENT (keep the current value) is meant now */
#if PETSC_VERSION_LT(3, 22, 0)
  #define PETSC_CURRENT PETSC_DEFAULT
#endif

typedef struct {
  PetscReal eps2; /* eps^2 */
  PetscReal h;
  Mat       K; /* -eps^2 lap, assembled once; NULL while it is being assembled */
} Phase;

/* F = u_t - eps^2 lap u */
static PetscErrorCode ImplicitPart(TS ts, PetscReal t, Vec U, Vec Udot, Vec F, void *ptr)
{
  Phase              *ph = (Phase *)ptr;
  DM                  da;
  DMDALocalInfo       info;
  Vec                 Ul;
  const PetscScalar **u, **ud;
  PetscScalar       **f;
  const PetscReal     c = ph->eps2 / (ph->h * ph->h);

  PetscFunctionBeginUser;
  (void)t;
  PetscCall(TSGetDM(ts, &da));
  PetscCall(DMDAGetLocalInfo(da, &info));
  PetscCall(DMGetLocalVector(da, &Ul));
  PetscCall(DMGlobalToLocal(da, U, INSERT_VALUES, Ul));
  PetscCall(DMDAVecGetArrayRead(da, Ul, &u));
  PetscCall(DMDAVecGetArrayRead(da, Udot, &ud));
  PetscCall(DMDAVecGetArray(da, F, &f));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j)
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) f[j][i] = ud[j][i] - c * (u[j][i - 1] + u[j][i + 1] + u[j - 1][i] + u[j + 1][i] - 4.0 * u[j][i]);
  PetscCall(DMDAVecRestoreArrayRead(da, Ul, &u));
  PetscCall(DMDAVecRestoreArrayRead(da, Udot, &ud));
  PetscCall(DMDAVecRestoreArray(da, F, &f));
  PetscCall(DMRestoreLocalVector(da, &Ul));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Row (i, j) of a five-point operator: centre, -x, +x, -y, +y. Set with global indices from the
   DM's own local-to-global map, not MatSetValuesStencil: for fully implicit methods TS subtracts
   the RHS Jacobian from this matrix with MatAXPY and its default UNKNOWN_NONZERO_PATTERN
   (src/ts/interface/tscreate.c), which for a parallel AIJ matrix builds a new one and merges its
   header in (MatAXPY_Basic_Preallocate, MatHeaderMerge: src/mat/utils/axpy.c), losing the
   stencil information MatSetValuesStencil reads; the next Jacobian then aborted on 2 ranks. */
static PetscErrorCode SetRow5(DM da, Mat P, PetscInt i, PetscInt j, const PetscScalar v[5])
{
  ISLocalToGlobalMapping ltog;
  PetscInt               gxs, gys, gxm, loc[5], glob[5];

  PetscFunctionBeginUser;
  PetscCall(DMGetLocalToGlobalMapping(da, &ltog));
  PetscCall(DMDAGetGhostCorners(da, &gxs, &gys, NULL, &gxm, NULL, NULL));
  loc[0] = (j - gys) * gxm + (i - gxs);
  loc[1] = loc[0] - 1;
  loc[2] = loc[0] + 1;
  loc[3] = loc[0] - gxm;
  loc[4] = loc[0] + gxm;
  PetscCall(ISLocalToGlobalMappingApply(ltog, 5, loc, glob));
  PetscCall(MatSetValues(P, 1, glob, 5, glob, v, INSERT_VALUES));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ImplicitJacobian(TS ts, PetscReal t, Vec U, Vec Udot, PetscReal shift, Mat A, Mat P, void *ptr)
{
  Phase          *ph = (Phase *)ptr;
  DM              da;
  DMDALocalInfo   info;
  const PetscReal c = ph->eps2 / (ph->h * ph->h);

  PetscFunctionBeginUser;
  (void)t;
  (void)U;
  (void)Udot;
  (void)A;
  if (ph->K) { /* the operator only changes by its shift */
    PetscCall(MatCopy(ph->K, P, SAME_NONZERO_PATTERN));
    PetscCall(MatShift(P, shift));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(TSGetDM(ts, &da));
  PetscCall(DMDAGetLocalInfo(da, &info));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j)
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
      const PetscScalar v[5] = {shift + 4.0 * c, -c, -c, -c, -c};
      PetscCall(SetRow5(da, P, i, j, v)); /* periodic: the ghosts of -1 and n wrap around */
    }
  PetscCall(MatAssemblyBegin(P, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(P, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* G = u - u^3 */
static PetscErrorCode Reaction(TS ts, PetscReal t, Vec U, Vec G, void *ptr)
{
  const PetscScalar *u;
  PetscScalar       *g;
  PetscInt           nl;

  PetscFunctionBeginUser;
  (void)ts;
  (void)t;
  (void)ptr;
  PetscCall(VecGetLocalSize(U, &nl));
  PetscCall(VecGetArrayRead(U, &u));
  PetscCall(VecGetArray(G, &g));
  for (PetscInt k = 0; k < nl; ++k) g[k] = u[k] - u[k] * u[k] * u[k];
  PetscCall(VecRestoreArrayRead(U, &u));
  PetscCall(VecRestoreArray(G, &g));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* diag(1 - 3 u^2), stored with the five-point pattern of the IJacobian (explicit zeros off the
   diagonal), so that TS's sum of the two for fully implicit methods keeps that pattern */
static PetscErrorCode ReactionJacobian(TS ts, PetscReal t, Vec U, Mat A, Mat P, void *ptr)
{
  DM                  da;
  DMDALocalInfo       info;
  const PetscScalar **u;

  PetscFunctionBeginUser;
  (void)t;
  (void)A;
  (void)ptr;
  PetscCall(TSGetDM(ts, &da));
  PetscCall(DMDAGetLocalInfo(da, &info));
  PetscCall(DMDAVecGetArrayRead(da, U, &u));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j)
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
      const PetscScalar v[5] = {1.0 - 3.0 * u[j][i] * u[j][i], 0.0, 0.0, 0.0, 0.0};
      PetscCall(SetRow5(da, P, i, j, v));
    }
  PetscCall(DMDAVecRestoreArrayRead(da, U, &u));
  PetscCall(MatAssemblyBegin(P, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(P, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode InitialState(DM da, PetscReal h, Vec U)
{
  DMDALocalInfo info;
  PetscScalar **u;

  PetscFunctionBeginUser;
  PetscCall(DMDAGetLocalInfo(da, &info));
  PetscCall(DMDAVecGetArray(da, U, &u));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j)
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
      const PetscReal x = i * h, y = j * h;
      u[j][i] = 0.1 + 0.4 * PetscCosReal(2 * PETSC_PI * x) * PetscCosReal(4 * PETSC_PI * y) + 0.2 * PetscSinReal(2 * PETSC_PI * (x + y));
    }
  PetscCall(DMDAVecRestoreArray(da, U, &u));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* energy, mean and three point values, reduced over the ranks */
static PetscErrorCode Observe(DM da, const Phase *ph, Vec U, PetscReal out[5])
{
  DMDALocalInfo       info;
  Vec                 Ul;
  const PetscScalar **u;
  PetscReal           loc[5] = {0, 0, 0, 0, 0};
  const PetscReal     h = ph->h;

  PetscFunctionBeginUser;
  PetscCall(DMDAGetLocalInfo(da, &info));
  PetscCall(DMGetLocalVector(da, &Ul));
  PetscCall(DMGlobalToLocal(da, U, INSERT_VALUES, Ul));
  PetscCall(DMDAVecGetArrayRead(da, Ul, &u));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j)
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
      const PetscReal v = PetscRealPart(u[j][i]), dx = PetscRealPart(u[j][i + 1]) - v, dy = PetscRealPart(u[j + 1][i]) - v;
      loc[0] += 0.5 * ph->eps2 * (dx * dx + dy * dy) + h * h * 0.25 * (v * v - 1) * (v * v - 1);
      loc[1] += h * h * v;
      if (4 * i == info.mx && 2 * j == info.my) loc[2] = v;
      if (2 * i == info.mx && 4 * j == info.my) loc[3] = v;
      if (4 * i == 3 * info.mx && 4 * j == 3 * info.my) loc[4] = v;
    }
  PetscCall(DMDAVecRestoreArrayRead(da, Ul, &u));
  PetscCall(DMRestoreLocalVector(da, &Ul));
  PetscCallMPI(MPIU_Allreduce(loc, out, 5, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)da)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  DM        da;
  TS        ts;
  SNES      snes;
  KSP       ksp;
  PC        pc;
  Vec       U;
  Mat       J, Jr;
  Phase     ph;
  PetscInt  n = 48;
  PetscReal eps = 0.05, tfinal = 2.0, reached, obs[5];

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Allen-Cahn options", NULL);
  PetscCall(PetscOptionsInt("-n", "grid points per side", NULL, n, &n, NULL));
  PetscCall(PetscOptionsReal("-eps", "interface width parameter", NULL, eps, &eps, NULL));
  PetscCall(PetscOptionsReal("-tfinal", "final time", NULL, tfinal, &tfinal, NULL));
  PetscOptionsEnd();
  PetscCheck(n >= 8 && n % 4 == 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be a multiple of 4, at least 8");
  PetscCheck(eps > 0 && tfinal > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-eps and -tfinal must be positive");
  ph.eps2 = eps * eps;
  ph.h    = 1.0 / n;
  ph.K    = NULL;

  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DMDA_STENCIL_STAR, n, n, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateGlobalVector(da, &U));
  PetscCall(DMCreateMatrix(da, &J));
  PetscCall(DMCreateMatrix(da, &Jr));
  PetscCall(InitialState(da, ph.h, U));

  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  PetscCall(TSSetDM(ts, da));
  {
    Mat K;

    PetscCall(DMCreateMatrix(da, &K));
    PetscCall(ImplicitJacobian(ts, 0.0, U, U, 0.0, K, K, &ph));
    ph.K = K;
  }
  PetscCall(TSSetProblemType(ts, TS_NONLINEAR));
  PetscCall(TSSetType(ts, TSARKIMEX));
  PetscCall(TSARKIMEXSetType(ts, TSARKIMEX5));
  PetscCall(TSSetIFunction(ts, NULL, ImplicitPart, &ph));
  PetscCall(TSSetIJacobian(ts, J, J, ImplicitJacobian, &ph));
  PetscCall(TSSetRHSFunction(ts, NULL, Reaction, &ph));
  PetscCall(TSSetRHSJacobian(ts, Jr, Jr, ReactionJacobian, &ph));
  PetscCall(TSSetMaxTime(ts, tfinal));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetTimeStep(ts, 1e-3));
  PetscCall(TSSetTolerances(ts, 1e-9, NULL, 1e-9, NULL));
  PetscCall(TSSetMaxSteps(ts, 100000));
  PetscCall(TSGetSNES(ts, &snes));
  PetscCall(SNESSetType(snes, SNESKSPONLY));
  PetscCall(SNESGetKSP(snes, &ksp));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_CURRENT, PETSC_CURRENT, PETSC_CURRENT));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCJACOBI));
  PetscCall(TSSetFromOptions(ts));
  PetscCall(TSSolve(ts, U));
  PetscCall(TSGetSolveTime(ts, &reached));
  PetscCheck(PetscAbsReal(reached - tfinal) <= 1e-12 * tfinal, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "integration stopped at t = %g, not at -tfinal %g", (double)reached, (double)tfinal);

  PetscCall(Observe(da, &ph, U, obs));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "energy: %.10e\n", (double)obs[0]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "mean: %.10e\n", (double)obs[1]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "u_points: %.10e %.10e %.10e\n", (double)obs[2], (double)obs[3], (double)obs[4]));

  PetscCall(TSDestroy(&ts));
  PetscCall(MatDestroy(&J));
  PetscCall(MatDestroy(&Jr));
  PetscCall(MatDestroy(&ph.K));
  PetscCall(VecDestroy(&U));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
