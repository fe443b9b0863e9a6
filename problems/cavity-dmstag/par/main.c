/* The performance par of cavity-dmstag (docs/problems.md): the reference with the Jacobian's
   nonzero pattern the entries the discretisation sets, not the box stencil's: DMCreateMatrix
   fills a DMStag's whole stencil with explicit zeros unless told to preallocate only
   (DMSetMatrixPreallocateOnly), and those zeros make the LU factors of every pseudo-time step
   about five times as costly. The sparser pattern's nested-dissection ordering can meet a zero
   pivot on a continuity row (their diagonal is zero): such pivots are shifted (MAT_SHIFT_NONZERO),
   which leaves each pseudo step's linear solve slightly inexact, harmless to pseudo-transient
   continuation, whose end state is checked against the steady residual as in the reference. */
static char help[] = "Steady lid-driven cavity flow, incompressible Navier-Stokes on a staggered (MAC) DMStag grid,\n"
                     "reached by implicit pseudo-time stepping with TS from fluid at rest.\n"
                     "  -n <int>   : cells per side (even)\n"
                     "  -re <real> : Reynolds number\n\n";

/*
  Solves, on the unit square,

      u_t + div(u u) + grad p = (1/Re) lap u,    div u = 0,

  with no-slip walls and a regularised lid u(x,1) = 16 x^2 (1-x)^2, v = 0 (speed 1 at x = 1/2),
  from rest to the steady state.

  Discretisation: the classical marker-and-cell (MAC) grid on a DMStag with one dof on each face
  (x-velocity on the vertical faces, DMSTAG_LEFT; y-velocity on the horizontal faces, DMSTAG_DOWN)
  and one per element (pressure). Second-order central differences: the convective term in
  conservative (flux) form with face velocities averaged to cell centres and cell corners, the
  viscous term with the five-point Laplacian, wall tangential velocities through a ghost value
  reflected about the wall (u_ghost = 2 u_wall - u_inside). Normal velocities on the boundary
  faces are unknowns with the rows u = 0. Pressure is fixed by replacing the continuity equation
  of cell (0,0) by p = 0; the discrete divergence of that cell then vanishes because the other
  cells' divergences and the zero boundary flux sum to it.

  Time: the semi-discrete DAE M U_t + G(U) = 0 (M = identity on interior velocity rows, zero on
  boundary and continuity rows) is given to TS as an IFunction with an assembled IJacobian
  shift*M + dG/dU (every diagonal entry present, explicitly zero on the continuity rows) and
  integrated by TSPSEUDO (backward-Euler pseudo-time steps whose length grows as the steady
  residual falls: switched evolution relaxation) until that residual has dropped by
  -ts_pseudo_frtol. Each pseudo step is linearly implicit (one Newton step, the TSPSEUDO default),
  its saddle-point system solved directly by default: LU on one rank, redundant LU on several.
  Any other implicit TS (e.g. -ts_type bdf -ts_adapt_type none -ts_dt 0.25 -ts_max_time 60
  -snes_type newtonls) reaches the same steady state.

  Output (rank 0): u along x = 1/2 and v along y = 1/2 at 0.1, ..., 0.9 (linear interpolation
  between face values, the wall values at the ends), the largest cell divergence and the kinetic
  energy 0.5 h^2 (sum of squares of all face velocities).
*/

#include <petscdmstag.h>
#include <petscts.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

typedef struct {
  PetscInt  n;   /* cells per side */
  PetscReal re;  /* Reynolds number */
  PetscReal h;   /* grid spacing */
  PetscInt  iu, iv, ip; /* slots of u (left face), v (down face), p (element) */
} AppCtx;

static PetscReal LidVelocity(PetscReal x)
{
  return 16.0 * x * x * (1.0 - x) * (1.0 - x);
}

/* F(t, U, U_t) = M U_t + G(U) */
static PetscErrorCode FormIFunction(TS ts, PetscReal t, Vec X, Vec Xdot, Vec F, void *ptr)
{
  AppCtx             *ctx = (AppCtx *)ptr;
  DM                  dm;
  Vec                 xl, xdotl, fl;
  const PetscScalar ***x, ***xd;
  PetscScalar      ***f;
  PetscInt            xs, ys, nx, ny, ex, ey, ex_extra, ey_extra, N = ctx->n, iu = ctx->iu, iv = ctx->iv, ip = ctx->ip;
  const PetscReal     h = ctx->h, nu = 1.0 / ctx->re;

  PetscFunctionBeginUser;
  (void)t;
  PetscCall(TSGetDM(ts, &dm));
  PetscCall(DMStagGetCorners(dm, &xs, &ys, NULL, &nx, &ny, NULL, &ex_extra, &ey_extra, NULL));
  PetscCall(DMGetLocalVector(dm, &xl));
  PetscCall(DMGetLocalVector(dm, &xdotl));
  PetscCall(DMGetLocalVector(dm, &fl));
  PetscCall(DMGlobalToLocal(dm, X, INSERT_VALUES, xl));
  PetscCall(DMGlobalToLocal(dm, Xdot, INSERT_VALUES, xdotl));
  PetscCall(VecZeroEntries(fl));
  PetscCall(DMStagVecGetArrayRead(dm, xl, &x));
  PetscCall(DMStagVecGetArrayRead(dm, xdotl, &xd));
  PetscCall(DMStagVecGetArray(dm, fl, &f));

  /* The last rank in each direction also owns the boundary faces at x = 1 (resp. y = 1),
     stored in the extra layer of elements ex = N (resp. ey = N): DMStagGetCorners' nExtra. */
  for (ey = ys; ey < ys + ny + ey_extra; ++ey) {
    for (ex = xs; ex < xs + nx + ex_extra; ++ex) {
      /* x-momentum on the left face of element (ex, ey), at (ex h, (ey + 1/2) h) */
      if (ey < N) {
        if (ex == 0 || ex == N) {
          f[ey][ex][iu] = x[ey][ex][iu];
        } else {
          const PetscScalar uc = x[ey][ex][iu];
          const PetscScalar ue = 0.5 * (uc + x[ey][ex + 1][iu]), uw = 0.5 * (x[ey][ex - 1][iu] + uc);
          PetscScalar       uN, uS, fluxN = 0.0, fluxS = 0.0;

          if (ey == N - 1) uN = 2.0 * LidVelocity(ex * h) - uc; /* v = 0 on the lid: no flux */
          else {
            uN    = x[ey + 1][ex][iu];
            fluxN = 0.5 * (uc + uN) * 0.5 * (x[ey + 1][ex - 1][iv] + x[ey + 1][ex][iv]);
          }
          if (ey == 0) uS = -uc;
          else {
            uS    = x[ey - 1][ex][iu];
            fluxS = 0.5 * (uc + uS) * 0.5 * (x[ey][ex - 1][iv] + x[ey][ex][iv]);
          }
          f[ey][ex][iu] = xd[ey][ex][iu] + (ue * ue - uw * uw) / h + (fluxN - fluxS) / h + (x[ey][ex][ip] - x[ey][ex - 1][ip]) / h - nu * (x[ey][ex + 1][iu] + x[ey][ex - 1][iu] + uN + uS - 4.0 * uc) / (h * h);
        }
      }
      /* y-momentum on the down face of element (ex, ey), at ((ex + 1/2) h, ey h) */
      if (ex < N) {
        if (ey == 0 || ey == N) {
          f[ey][ex][iv] = x[ey][ex][iv];
        } else {
          const PetscScalar vc = x[ey][ex][iv];
          const PetscScalar vn = 0.5 * (vc + x[ey + 1][ex][iv]), vs = 0.5 * (x[ey - 1][ex][iv] + vc);
          PetscScalar       vE, vW, fluxE = 0.0, fluxW = 0.0;

          if (ex == N - 1) vE = -vc;
          else {
            vE    = x[ey][ex + 1][iv];
            fluxE = 0.5 * (x[ey - 1][ex + 1][iu] + x[ey][ex + 1][iu]) * 0.5 * (vc + vE);
          }
          if (ex == 0) vW = -vc;
          else {
            vW    = x[ey][ex - 1][iv];
            fluxW = 0.5 * (x[ey - 1][ex][iu] + x[ey][ex][iu]) * 0.5 * (vc + vW);
          }
          f[ey][ex][iv] = xd[ey][ex][iv] + (fluxE - fluxW) / h + (vn * vn - vs * vs) / h + (x[ey][ex][ip] - x[ey - 1][ex][ip]) / h - nu * (vE + vW + x[ey + 1][ex][iv] + x[ey - 1][ex][iv] - 4.0 * vc) / (h * h);
        }
      }
      /* continuity in element (ex, ey); cell (0,0) pins the pressure instead */
      if (ex < N && ey < N) {
        if (ex == 0 && ey == 0) f[ey][ex][ip] = x[ey][ex][ip];
        else f[ey][ex][ip] = (x[ey][ex + 1][iu] - x[ey][ex][iu] + x[ey + 1][ex][iv] - x[ey][ex][iv]) / h;
      }
    }
  }

  PetscCall(DMStagVecRestoreArrayRead(dm, xl, &x));
  PetscCall(DMStagVecRestoreArrayRead(dm, xdotl, &xd));
  PetscCall(DMStagVecRestoreArray(dm, fl, &f));
  PetscCall(DMLocalToGlobal(dm, fl, INSERT_VALUES, F));
  PetscCall(DMRestoreLocalVector(dm, &xl));
  PetscCall(DMRestoreLocalVector(dm, &xdotl));
  PetscCall(DMRestoreLocalVector(dm, &fl));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Jacobian shift*dF/dU_t + dF/dU, assembled row by row (ADD_VALUES combines repeated columns) */
static PetscErrorCode FormIJacobian(TS ts, PetscReal t, Vec X, Vec Xdot, PetscReal shift, Mat J, Mat P, void *ptr)
{
  AppCtx             *ctx = (AppCtx *)ptr;
  DM                  dm;
  Vec                 xl;
  const PetscScalar ***x;
  PetscInt            xs, ys, nx, ny, ex, ey, ex_extra, ey_extra, N = ctx->n, iu = ctx->iu, iv = ctx->iv;
  const PetscReal     h = ctx->h, nu = 1.0 / ctx->re, d = nu / (h * h);
  DMStagStencil       row, col[16];
  PetscScalar         val[16];
  PetscInt            nc;

  PetscFunctionBeginUser;
  (void)t;
  (void)Xdot;
  PetscCall(TSGetDM(ts, &dm));
  PetscCall(DMStagGetCorners(dm, &xs, &ys, NULL, &nx, &ny, NULL, &ex_extra, &ey_extra, NULL));
  PetscCall(DMGetLocalVector(dm, &xl));
  PetscCall(DMGlobalToLocal(dm, X, INSERT_VALUES, xl));
  PetscCall(DMStagVecGetArrayRead(dm, xl, &x));
  PetscCall(MatZeroEntries(P));

#define ENTRY(I, J, LOC, V) \
  do { \
    col[nc].i = (I); \
    col[nc].j = (J); \
    col[nc].k = 0; \
    col[nc].c = 0; \
    col[nc].loc = (LOC); \
    val[nc++] = (V); \
  } while (0)

  for (ey = ys; ey < ys + ny + ey_extra; ++ey) {
    for (ex = xs; ex < xs + nx + ex_extra; ++ex) {
      row.i = ex;
      row.j = ey;
      row.k = 0;
      row.c = 0;
      if (ey < N) { /* x-momentum */
        row.loc = DMSTAG_LEFT;
        nc      = 0;
        if (ex == 0 || ex == N) {
          ENTRY(ex, ey, DMSTAG_LEFT, 1.0);
        } else {
          const PetscScalar uc = x[ey][ex][iu];
          const PetscScalar ue = 0.5 * (uc + x[ey][ex + 1][iu]), uw = 0.5 * (x[ey][ex - 1][iu] + uc);
          PetscScalar       diag = shift + (ue - uw) / h + 4.0 * d;

          ENTRY(ex + 1, ey, DMSTAG_LEFT, ue / h - d);
          ENTRY(ex - 1, ey, DMSTAG_LEFT, -uw / h - d);
          if (ey == N - 1) diag += d;
          else {
            const PetscScalar un = 0.5 * (uc + x[ey + 1][ex][iu]), vn = 0.5 * (x[ey + 1][ex - 1][iv] + x[ey + 1][ex][iv]);
            diag += 0.5 * vn / h;
            ENTRY(ex, ey + 1, DMSTAG_LEFT, 0.5 * vn / h - d);
            ENTRY(ex - 1, ey + 1, DMSTAG_DOWN, 0.5 * un / h);
            ENTRY(ex, ey + 1, DMSTAG_DOWN, 0.5 * un / h);
          }
          if (ey == 0) diag += d;
          else {
            const PetscScalar us = 0.5 * (uc + x[ey - 1][ex][iu]), vs = 0.5 * (x[ey][ex - 1][iv] + x[ey][ex][iv]);
            diag -= 0.5 * vs / h;
            ENTRY(ex, ey - 1, DMSTAG_LEFT, -0.5 * vs / h - d);
            ENTRY(ex - 1, ey, DMSTAG_DOWN, -0.5 * us / h);
            ENTRY(ex, ey, DMSTAG_DOWN, -0.5 * us / h);
          }
          ENTRY(ex, ey, DMSTAG_LEFT, diag);
          ENTRY(ex, ey, DMSTAG_ELEMENT, 1.0 / h);
          ENTRY(ex - 1, ey, DMSTAG_ELEMENT, -1.0 / h);
        }
        PetscCall(DMStagMatSetValuesStencil(dm, P, 1, &row, nc, col, val, ADD_VALUES));
      }
      if (ex < N) { /* y-momentum */
        row.loc = DMSTAG_DOWN;
        nc      = 0;
        if (ey == 0 || ey == N) {
          ENTRY(ex, ey, DMSTAG_DOWN, 1.0);
        } else {
          const PetscScalar vc = x[ey][ex][iv];
          const PetscScalar vn = 0.5 * (vc + x[ey + 1][ex][iv]), vs = 0.5 * (x[ey - 1][ex][iv] + vc);
          PetscScalar       diag = shift + (vn - vs) / h + 4.0 * d;

          ENTRY(ex, ey + 1, DMSTAG_DOWN, vn / h - d);
          ENTRY(ex, ey - 1, DMSTAG_DOWN, -vs / h - d);
          if (ex == N - 1) diag += d;
          else {
            const PetscScalar ue = 0.5 * (x[ey - 1][ex + 1][iu] + x[ey][ex + 1][iu]), ve = 0.5 * (vc + x[ey][ex + 1][iv]);
            diag += 0.5 * ue / h;
            ENTRY(ex + 1, ey, DMSTAG_DOWN, 0.5 * ue / h - d);
            ENTRY(ex + 1, ey - 1, DMSTAG_LEFT, 0.5 * ve / h);
            ENTRY(ex + 1, ey, DMSTAG_LEFT, 0.5 * ve / h);
          }
          if (ex == 0) diag += d;
          else {
            const PetscScalar uw = 0.5 * (x[ey - 1][ex][iu] + x[ey][ex][iu]), vw = 0.5 * (vc + x[ey][ex - 1][iv]);
            diag -= 0.5 * uw / h;
            ENTRY(ex - 1, ey, DMSTAG_DOWN, -0.5 * uw / h - d);
            ENTRY(ex, ey - 1, DMSTAG_LEFT, -0.5 * vw / h);
            ENTRY(ex, ey, DMSTAG_LEFT, -0.5 * vw / h);
          }
          ENTRY(ex, ey, DMSTAG_DOWN, diag);
          ENTRY(ex, ey, DMSTAG_ELEMENT, 1.0 / h);
          ENTRY(ex, ey - 1, DMSTAG_ELEMENT, -1.0 / h);
        }
        PetscCall(DMStagMatSetValuesStencil(dm, P, 1, &row, nc, col, val, ADD_VALUES));
      }
      if (ex < N && ey < N) { /* continuity, with an explicit (zero) diagonal */
        row.loc = DMSTAG_ELEMENT;
        nc      = 0;
        if (ex == 0 && ey == 0) {
          ENTRY(ex, ey, DMSTAG_ELEMENT, 1.0);
        } else {
          ENTRY(ex, ey, DMSTAG_ELEMENT, 0.0);
          ENTRY(ex + 1, ey, DMSTAG_LEFT, 1.0 / h);
          ENTRY(ex, ey, DMSTAG_LEFT, -1.0 / h);
          ENTRY(ex, ey + 1, DMSTAG_DOWN, 1.0 / h);
          ENTRY(ex, ey, DMSTAG_DOWN, -1.0 / h);
        }
        PetscCall(DMStagMatSetValuesStencil(dm, P, 1, &row, nc, col, val, ADD_VALUES));
      }
    }
  }
#undef ENTRY

  PetscCall(DMStagVecRestoreArrayRead(dm, xl, &x));
  PetscCall(DMRestoreLocalVector(dm, &xl));
  PetscCall(MatAssemblyBegin(P, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(P, MAT_FINAL_ASSEMBLY));
  if (J != P) {
    PetscCall(MatAssemblyBegin(J, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(J, MAT_FINAL_ASSEMBLY));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Centreline samples, largest cell divergence and kinetic energy of the state X */
static PetscErrorCode Diagnostics(DM dm, Vec X, AppCtx *ctx, PetscReal ucl[9], PetscReal vcl[9], PetscReal *divmax, PetscReal *ke)
{
  Vec                 xl;
  const PetscScalar ***x;
  PetscInt            xs, ys, nx, ny, ex, ey, ex_extra, ey_extra, k, N = ctx->n, c = ctx->n / 2, iu = ctx->iu, iv = ctx->iv;
  const PetscReal     h = ctx->h;
  PetscReal           loc[20] = {0}, glob[20], dloc = 0.0, ekin = 0.0;

  PetscFunctionBeginUser;
  PetscCall(DMStagGetCorners(dm, &xs, &ys, NULL, &nx, &ny, NULL, &ex_extra, &ey_extra, NULL));
  PetscCall(DMGetLocalVector(dm, &xl));
  PetscCall(DMGlobalToLocal(dm, X, INSERT_VALUES, xl));
  PetscCall(DMStagVecGetArrayRead(dm, xl, &x));

  for (ey = ys; ey < ys + ny + ey_extra; ++ey) {
    for (ex = xs; ex < xs + nx + ex_extra; ++ex) {
      if (ey < N) ekin += PetscRealPart(x[ey][ex][iu] * x[ey][ex][iu]);
      if (ex < N) ekin += PetscRealPart(x[ey][ex][iv] * x[ey][ex][iv]);
      if (ex < N && ey < N) {
        const PetscReal div = PetscAbsScalar((x[ey][ex + 1][iu] - x[ey][ex][iu] + x[ey + 1][ex][iv] - x[ey][ex][iv]) / h);
        dloc                = PetscMax(dloc, div);
      }
    }
  }
  loc[18] = 0.5 * h * h * ekin;

  /* Sample k at s = k/10 on the line through the faces with index c = n/2: face values sit at
     (j + 1/2) h, the wall values (0, and the lid speed for u at y = 1) at the ends. Each sample
     is computed by the rank owning the lower face (the first/last face next to a wall). */
  for (k = 0; k < 9; ++k) {
    const PetscReal s  = 0.1 * (k + 1);
    PetscInt        jl = (PetscInt)PetscFloorReal(s / h - 0.5), jo = PetscMax(0, PetscMin(N - 1, jl));
    PetscReal       w;

    if (jl < 0) w = s / (0.5 * h);
    else if (jl >= N - 1) w = (s - (1.0 - 0.5 * h)) / (0.5 * h);
    else w = s / h - 0.5 - jl;
    if (c >= xs && c < xs + nx && jo >= ys && jo < ys + ny) { /* u on x = 1/2 */
      const PetscReal lo = jl < 0 ? 0.0 : PetscRealPart(x[jo][c][iu]);
      const PetscReal hi = jl >= N - 1 ? LidVelocity(0.5) : PetscRealPart(x[jo + (jl < 0 ? 0 : 1)][c][iu]);
      loc[k]             = (1.0 - w) * lo + w * hi;
    }
    if (c >= ys && c < ys + ny && jo >= xs && jo < xs + nx) { /* v on y = 1/2 */
      const PetscReal lo = jl < 0 ? 0.0 : PetscRealPart(x[c][jo][iv]);
      const PetscReal hi = jl >= N - 1 ? 0.0 : PetscRealPart(x[c][jo + (jl < 0 ? 0 : 1)][iv]);
      loc[9 + k]         = (1.0 - w) * lo + w * hi;
    }
  }
  PetscCall(DMStagVecRestoreArrayRead(dm, xl, &x));
  PetscCall(DMRestoreLocalVector(dm, &xl));

  PetscCallMPI(MPI_Allreduce(loc, glob, 19, MPIU_REAL, MPI_SUM, PetscObjectComm((PetscObject)dm)));
  PetscCallMPI(MPI_Allreduce(&dloc, divmax, 1, MPIU_REAL, MPI_MAX, PetscObjectComm((PetscObject)dm)));
  for (k = 0; k < 9; ++k) {
    ucl[k] = glob[k];
    vcl[k] = glob[9 + k];
  }
  *ke = glob[18];
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  AppCtx             ctx;
  DM                 dm;
  TS                 ts;
  SNES               snes;
  KSP                ksp;
  PC                 pc;
  Mat                J;
  Vec                X;
  PetscMPIInt        size;
  TSConvergedReason  reason;
  PetscReal          ucl[9], vcl[9], divmax = 0.0, ke = 0.0, steady_tol = 1e-8;
  PetscInt           k;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));

  ctx.n  = 16;
  ctx.re = 100.0;
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Lid-driven cavity options", NULL);
  PetscCall(PetscOptionsInt("-n", "cells per side (even)", NULL, ctx.n, &ctx.n, NULL));
  PetscCall(PetscOptionsReal("-re", "Reynolds number", NULL, ctx.re, &ctx.re, NULL));
  PetscCall(PetscOptionsReal("-steady_tol", "largest steady residual (max norm) accepted at the end", NULL, steady_tol, &steady_tol, NULL));
  PetscOptionsEnd();
  PetscCheck(ctx.n >= 4 && ctx.n % 2 == 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be even and at least 4");
  PetscCheck(ctx.re > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-re must be positive");
  ctx.h = 1.0 / ctx.n;

  /* one dof per face (normal velocity) and per element (pressure); box stencil for the corner fluxes */
  PetscCall(DMStagCreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, ctx.n, ctx.n, PETSC_DECIDE, PETSC_DECIDE, 0, 1, 1, DMSTAG_STENCIL_BOX, 1, NULL, NULL, &dm));
  PetscCall(DMSetFromOptions(dm));
  PetscCall(DMSetUp(dm));
  PetscCall(DMStagSetUniformCoordinatesProduct(dm, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0));
  PetscCall(DMStagGetLocationSlot(dm, DMSTAG_LEFT, 0, &ctx.iu));
  PetscCall(DMStagGetLocationSlot(dm, DMSTAG_DOWN, 0, &ctx.iv));
  PetscCall(DMStagGetLocationSlot(dm, DMSTAG_ELEMENT, 0, &ctx.ip));

  PetscCall(DMCreateGlobalVector(dm, &X));
  PetscCall(VecZeroEntries(X)); /* fluid at rest */
  PetscCall(DMSetMatrixPreallocateOnly(dm, PETSC_TRUE)); /* no explicit zeros: the pattern is what is set */
  PetscCall(DMCreateMatrix(dm, &J));

  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  PetscCall(TSSetDM(ts, dm));
  PetscCall(TSSetType(ts, TSPSEUDO));
  PetscCall(TSSetIFunction(ts, NULL, FormIFunction, &ctx));
  PetscCall(TSSetIJacobian(ts, J, J, FormIJacobian, &ctx));
  PetscCall(TSSetTimeStep(ts, 0.1));
  PetscCall(TSSetMaxSteps(ts, 500));
  PetscCall(TSSetMaxTime(ts, 1.0e12));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_STEPOVER));
  PetscCall(TSPseudoSetTimeStepIncrement(ts, 2.0));

  /* small saddle-point systems: a direct solve by default, overridable from the command line */
  PetscCall(TSGetSNES(ts, &snes));
  PetscCall(SNESGetKSP(snes, &ksp));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(KSPSetType(ksp, KSPPREONLY));
  PetscCall(PCSetType(pc, size == 1 ? PCLU : PCREDUNDANT));
  if (size == 1) PetscCall(PCFactorSetShiftType(pc, MAT_SHIFT_NONZERO));
  else {
    PetscBool set;

    PetscCall(PetscOptionsHasName(NULL, NULL, "-redundant_pc_factor_shift_type", &set));
    if (!set) PetscCall(PetscOptionsSetValue(NULL, "-redundant_pc_factor_shift_type", "nonzero"));
  }
  PetscCall(TSSetFromOptions(ts));

  PetscCall(TSSolve(ts, X));
  PetscCall(TSGetConvergedReason(ts, &reason));
  PetscCheck(reason > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "TS did not reach a steady state: %s", TSConvergedReasons[reason]);
  { /* whatever stopped the integrator (step limit, final time), the printed state must be steady */
    Vec       zero, res;
    PetscReal rnorm;

    PetscCall(VecDuplicate(X, &zero));
    PetscCall(VecDuplicate(X, &res));
    PetscCall(VecZeroEntries(zero));
    PetscCall(FormIFunction(ts, 0.0, X, zero, res, &ctx));
    PetscCall(VecNorm(res, NORM_INFINITY, &rnorm));
    PetscCheck(rnorm <= steady_tol, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "not steady: the residual with U_t = 0 is %g > -steady_tol %g", (double)rnorm, (double)steady_tol);
    PetscCall(VecDestroy(&res));
    PetscCall(VecDestroy(&zero));
  }

  PetscCall(Diagnostics(dm, X, &ctx, ucl, vcl, &divmax, &ke));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "u_centerline:"));
  for (k = 0; k < 9; ++k) PetscCall(PetscPrintf(PETSC_COMM_WORLD, " %.10e", (double)ucl[k]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\nv_centerline:"));
  for (k = 0; k < 9; ++k) PetscCall(PetscPrintf(PETSC_COMM_WORLD, " %.10e", (double)vcl[k]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\nmax_divergence: %.10e\n", (double)divmax));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "kinetic_energy: %.10e\n", (double)ke));

  PetscCall(MatDestroy(&J));
  PetscCall(VecDestroy(&X));
  PetscCall(TSDestroy(&ts));
  PetscCall(DMDestroy(&dm));
  PetscCall(PetscFinalize());
  return 0;
}
