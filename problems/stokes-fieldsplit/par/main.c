/* The performance par of stokes-fieldsplit (docs/problems.md): the reference with a star stencil
   for the DMStag (the MAC operator only couples a face or cell to its four neighbours and to the
   faces and cells it touches) instead of a box: DMCreateMatrix fills the stencil's whole pattern
   with explicit zeros, so the box doubled the velocity block's LU factors and their cost, and
   with the upper-triangular Schur factorisation (one velocity solve per iteration, not two: one
   iteration more). About half the reference's time on the performance case. */
static char help[] = "Stokes flow in the unit square with a manufactured solution on a staggered (MAC) DMStag grid,\n"
                     "solved by FGMRES with a Schur-complement block preconditioner (PCFIELDSPLIT).\n"
                     "  -n <int>    : cells per side (even)\n"
                     "  -k <real>   : the pressure's wavenumber in y, p* = cos(pi x) cos(k pi y)\n\n";

/*
  -nu lap u + grad p = f,  -div u = 0  in (0,1)^2,  u = 0 on the boundary, nu = 1,
  with f made from the exact solution u* = curl psi, psi = sin^2(pi x) sin^2(pi y),
  p* = cos(pi x) cos(k pi y) (mean zero for every k; -k, default 1), so
  u* = (pi sin^2(pi x) sin(2 pi y), -pi sin(2 pi x) sin^2(pi y)).

  MAC grid on a DMStag with one dof per face and one per element: x-velocity on vertical faces
  (DMSTAG_LEFT), y-velocity on horizontal faces (DMSTAG_DOWN), pressure in the cells. Five-point
  viscous term; tangential wall velocity through a ghost reflected about the wall (u_ghost =
  -u_inside: the wall value is 0); normal velocity on the boundary faces is a row u = 0. The
  continuity rows are -div (so the operator [A B^T; B 0] is symmetric); the pressure is fixed by
  replacing the continuity row of cell (0,0) with p = 0, and its mean removed before measuring.

  Solver: FGMRES, preconditioned by PCFIELDSPLIT on the DMStag's two fields (faces: velocity,
  elements: pressure) with a full Schur-complement factorisation. The Schur complement
  S = -B A^-1 B^T is preconditioned by -(1/nu) times the pressure mass matrix (PressureMass below),
  so the outer iteration count depends neither on h nor on nu; the velocity block by a direct
  solve (redundant LU: the sizes here are small; a large run would give it multigrid, e.g.
  -fieldsplit_face_ksp_type gmres -fieldsplit_face_ksp_rtol 1e-2 -fieldsplit_face_pc_type gamg),
  the Schur block by that diagonal. Every part can be changed from the command line.

  Output (rank 0): discrete L2 errors of velocity and pressure, the largest cell divergence and
  the number of outer iterations to rtol 1e-10.
*/

#include <petscdmstag.h>
#include <petscksp.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

typedef struct {
  PetscInt  n;
  PetscReal nu, h;
} Flow;

/* the pressure's wavenumber in y (-k): a drawn real, so the answers cannot be tabulated by -n */
static PetscReal pk = 1.0;

static PetscReal Ux(PetscReal x, PetscReal y)
{
  return PETSC_PI * PetscSqr(PetscSinReal(PETSC_PI * x)) * PetscSinReal(2 * PETSC_PI * y);
}
static PetscReal Uy(PetscReal x, PetscReal y)
{
  return -PETSC_PI * PetscSinReal(2 * PETSC_PI * x) * PetscSqr(PetscSinReal(PETSC_PI * y));
}
static PetscReal Pressure(PetscReal x, PetscReal y)
{
  return PetscCosReal(PETSC_PI * x) * PetscCosReal(pk * PETSC_PI * y);
}
/* f = -nu lap u* + grad p* */
static PetscReal Fx(PetscReal nu, PetscReal x, PetscReal y)
{
  const PetscReal pi3 = PETSC_PI * PETSC_PI * PETSC_PI;
  return -nu * 2 * pi3 * PetscSinReal(2 * PETSC_PI * y) * (2 * PetscCosReal(2 * PETSC_PI * x) - 1) - PETSC_PI * PetscSinReal(PETSC_PI * x) * PetscCosReal(pk * PETSC_PI * y);
}
static PetscReal Fy(PetscReal nu, PetscReal x, PetscReal y)
{
  const PetscReal pi3 = PETSC_PI * PETSC_PI * PETSC_PI;
  return nu * 2 * pi3 * PetscSinReal(2 * PETSC_PI * x) * (2 * PetscCosReal(2 * PETSC_PI * y) - 1) - pk * PETSC_PI * PetscCosReal(PETSC_PI * x) * PetscSinReal(pk * PETSC_PI * y);
}

/* one momentum row: the face `dir` (0: LEFT, u; 1: DOWN, v) of element (ex, ey) */
static PetscErrorCode MomentumRow(DM dm, const Flow *fl, Mat A, Vec b, PetscInt ex, PetscInt ey, PetscInt dir)
{
  const PetscInt        N = fl->n;
  const PetscReal       h = fl->h, d = fl->nu / (h * h);
  const DMStagStencilLocation loc = dir == 0 ? DMSTAG_LEFT : DMSTAG_DOWN;
  DMStagStencil         row = {loc, ex, ey, 0, 0}, col[7];
  PetscScalar           val[7], rhs;
  PetscInt              nc = 0, along = dir == 0 ? ex : ey, across = dir == 0 ? ey : ex;

  PetscFunctionBeginUser;
  if (along == 0 || along == N) { /* normal velocity on the boundary */
    val[0] = d;
    PetscCall(DMStagMatSetValuesStencil(dm, A, 1, &row, 1, &row, val, INSERT_VALUES));
    rhs = 0.0;
    PetscCall(DMStagVecSetValuesStencil(dm, b, 1, &row, &rhs, INSERT_VALUES));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  col[nc] = row;
  val[nc++] = 4 * d;
  /* neighbours along the velocity's own direction */
  col[nc] = row;
  if (dir == 0) col[nc].i = ex - 1; else col[nc].j = ey - 1;
  val[nc++] = -d;
  col[nc] = row;
  if (dir == 0) col[nc].i = ex + 1; else col[nc].j = ey + 1;
  val[nc++] = -d;
  /* neighbours across: a wall ghost reflects (-u), adding +d to the diagonal */
  if (across == 0) val[0] += d;
  else {
    col[nc] = row;
    if (dir == 0) col[nc].j = ey - 1; else col[nc].i = ex - 1;
    val[nc++] = -d;
  }
  if (across == N - 1) val[0] += d;
  else {
    col[nc] = row;
    if (dir == 0) col[nc].j = ey + 1; else col[nc].i = ex + 1;
    val[nc++] = -d;
  }
  /* pressure gradient: (p(this element) - p(the one before)) / h */
  col[nc].loc = DMSTAG_ELEMENT;
  col[nc].i   = ex;
  col[nc].j   = ey;
  col[nc].c   = 0;
  val[nc++]   = 1.0 / h;
  col[nc]     = col[nc - 1];
  if (dir == 0) col[nc].i = ex - 1; else col[nc].j = ey - 1;
  val[nc++] = -1.0 / h;
  PetscCall(DMStagMatSetValuesStencil(dm, A, 1, &row, nc, col, val, INSERT_VALUES));
  rhs = dir == 0 ? Fx(fl->nu, ex * h, (ey + 0.5) * h) : Fy(fl->nu, (ex + 0.5) * h, ey * h);
  PetscCall(DMStagVecSetValuesStencil(dm, b, 1, &row, &rhs, INSERT_VALUES));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode Assemble(DM dm, const Flow *fl, Mat A, Vec b)
{
  PetscInt xs, ys, nx, ny, xe, ye;

  PetscFunctionBeginUser;
  PetscCall(DMStagGetCorners(dm, &xs, &ys, NULL, &nx, &ny, NULL, &xe, &ye, NULL));
  for (PetscInt ey = ys; ey < ys + ny + ye; ++ey)
    for (PetscInt ex = xs; ex < xs + nx + xe; ++ex) {
      if (ey < fl->n) PetscCall(MomentumRow(dm, fl, A, b, ex, ey, 0));
      if (ex < fl->n) PetscCall(MomentumRow(dm, fl, A, b, ex, ey, 1));
      if (ex < fl->n && ey < fl->n) { /* -div u, or p = 0 in cell (0,0) */
        DMStagStencil row = {DMSTAG_ELEMENT, ex, ey, 0, 0}, col[4];
        PetscScalar   val[4], zero = 0.0;
        if (ex == 0 && ey == 0) {
          val[0] = 1.0;
          PetscCall(DMStagMatSetValuesStencil(dm, A, 1, &row, 1, &row, val, INSERT_VALUES));
        } else {
          for (PetscInt k = 0; k < 4; ++k) col[k] = row;
          col[0].loc = DMSTAG_LEFT;
          col[1].loc = DMSTAG_LEFT;
          col[1].i   = ex + 1;
          col[2].loc = DMSTAG_DOWN;
          col[3].loc = DMSTAG_DOWN;
          col[3].j   = ey + 1;
          val[0] = val[2] = 1.0 / fl->h;
          val[1] = val[3] = -1.0 / fl->h;
          PetscCall(DMStagMatSetValuesStencil(dm, A, 1, &row, 4, col, val, INSERT_VALUES));
        }
        PetscCall(DMStagVecSetValuesStencil(dm, b, 1, &row, &zero, INSERT_VALUES));
      }
    }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(VecAssemblyBegin(b));
  PetscCall(VecAssemblyEnd(b));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* velocity and pressure L2 errors (pressure mean removed) and the largest cell divergence */
static PetscErrorCode Measure(DM dm, const Flow *fl, Vec x, PetscReal out[3])
{
  Vec                  xl;
  const PetscScalar ***a;
  PetscInt             xs, ys, nx, ny, xe, ye, iu, iv, ip, N = fl->n;
  PetscReal            h = fl->h, loc[4] = {0, 0, 0, 0}, glob[4], mean, dmax, locmax = 0;

  PetscFunctionBeginUser;
  PetscCall(DMStagGetLocationSlot(dm, DMSTAG_LEFT, 0, &iu));
  PetscCall(DMStagGetLocationSlot(dm, DMSTAG_DOWN, 0, &iv));
  PetscCall(DMStagGetLocationSlot(dm, DMSTAG_ELEMENT, 0, &ip));
  PetscCall(DMStagGetCorners(dm, &xs, &ys, NULL, &nx, &ny, NULL, &xe, &ye, NULL));
  PetscCall(DMGetLocalVector(dm, &xl));
  PetscCall(DMGlobalToLocal(dm, x, INSERT_VALUES, xl));
  PetscCall(DMStagVecGetArrayRead(dm, xl, &a));
  for (PetscInt ey = ys; ey < ys + ny + ye; ++ey)
    for (PetscInt ex = xs; ex < xs + nx + xe; ++ex) {
      if (ey < N) loc[0] += h * h * PetscSqr(PetscRealPart(a[ey][ex][iu]) - Ux(ex * h, (ey + 0.5) * h));
      if (ex < N) loc[0] += h * h * PetscSqr(PetscRealPart(a[ey][ex][iv]) - Uy((ex + 0.5) * h, ey * h));
      if (ex < N && ey < N) {
        const PetscReal p = PetscRealPart(a[ey][ex][ip]), c = Pressure((ex + 0.5) * h, (ey + 0.5) * h);
        const PetscReal div = PetscRealPart(a[ey][ex + 1][iu] - a[ey][ex][iu] + a[ey + 1][ex][iv] - a[ey][ex][iv]) / h;
        loc[1] += h * h * p;          /* mean of p_h */
        loc[2] += h * h * (p - c) * (p - c);
        loc[3] += h * h * (p - c);    /* with the mean: sum (p - c - m)^2 = sum (p - c)^2 - m^2 */
        locmax = PetscMax(locmax, PetscAbsReal(div));
      }
    }
  PetscCall(DMStagVecRestoreArrayRead(dm, xl, &a));
  PetscCall(DMRestoreLocalVector(dm, &xl));
  PetscCallMPI(MPIU_Allreduce(loc, glob, 4, MPIU_REAL, MPIU_SUM, PETSC_COMM_WORLD));
  PetscCallMPI(MPIU_Allreduce(&locmax, &dmax, 1, MPIU_REAL, MPIU_MAX, PETSC_COMM_WORLD));
  mean   = glob[3]; /* the mean of p_h - p* over the unit square (p* has mean zero) */
  out[0] = PetscSqrtReal(glob[0]);
  out[1] = PetscSqrtReal(PetscMax(glob[2] - mean * mean, 0.0));
  out[2] = dmax;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The Schur complement S = -D A^-1 D^T of the MAC Stokes operator is spectrally equivalent to
   -(1/nu) times the identity (the pressure mass matrix divided by the cell area): an h- and
   nu-independent preconditioner for it, unlike -D diag(A)^-1 D^T (PCFIELDSPLIT's "selfp"), which
   behaves like h^2/nu times a Laplacian. The pinned cell (0,0) has S = 1. One row per owned
   element, in the order the DM's field decomposition numbers the pressure. */
static PetscErrorCode PressureMass(DM dm, const Flow *fl, Mat *S)
{
  PetscInt xs, ys, nx, ny, rstart;

  PetscFunctionBeginUser;
  PetscCall(DMStagGetCorners(dm, &xs, &ys, NULL, &nx, &ny, NULL, NULL, NULL, NULL));
  PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, nx * ny, nx * ny, PETSC_DETERMINE, PETSC_DETERMINE, 1, NULL, 0, NULL, S));
  PetscCall(MatGetOwnershipRange(*S, &rstart, NULL));
  for (PetscInt k = 0; k < nx * ny; ++k) {
    const PetscInt    row = rstart + k;
    const PetscScalar v   = (xs == 0 && ys == 0 && k == 0) ? 1.0 : -1.0 / fl->nu;
    PetscCall(MatSetValues(*S, 1, &row, 1, &row, &v, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*S, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*S, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* an option's value unless the user gave one: the inner solvers stay configurable */
static PetscErrorCode DefaultOption(const char name[], const char value[])
{
  PetscBool set;

  PetscFunctionBeginUser;
  PetscCall(PetscOptionsHasName(NULL, NULL, name, &set));
  if (!set) PetscCall(PetscOptionsSetValue(NULL, name, value));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  DM                 dm;
  Mat                A, Shat;
  Vec                x, b;
  KSP                ksp;
  PC                 pc;
  Flow               fl = {24, 1.0, 0.0};
  PetscInt           its;
  PetscReal          err[3] = {0, 0, 0};
  KSPConvergedReason reason;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Stokes options", NULL);
  PetscCall(PetscOptionsInt("-n", "cells per side", NULL, fl.n, &fl.n, NULL));
  PetscCall(PetscOptionsReal("-k", "the pressure's wavenumber in y", NULL, pk, &pk, NULL));
  PetscOptionsEnd();
  PetscCheck(fl.n >= 4 && fl.n % 2 == 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be even, at least 4");
  fl.h = 1.0 / fl.n;

  PetscCall(DMStagCreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, fl.n, fl.n, PETSC_DECIDE, PETSC_DECIDE, 0, 1, 1, DMSTAG_STENCIL_STAR, 1, NULL, NULL, &dm));
  PetscCall(DMSetUp(dm));
  PetscCall(DMCreateMatrix(dm, &A));
  PetscCall(DMCreateGlobalVector(dm, &x));
  PetscCall(VecDuplicate(x, &b));
  PetscCall(Assemble(dm, &fl, A, b));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPFGMRES));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 500));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetDM(pc, dm)); /* the DM names the fields: faces (velocity), elements (pressure) */
  PetscCall(PCSetType(pc, PCFIELDSPLIT));
  PetscCall(PCFieldSplitSetType(pc, PC_COMPOSITE_SCHUR));
  PetscCall(PCFieldSplitSetSchurFactType(pc, PC_FIELDSPLIT_SCHUR_FACT_UPPER));
  PetscCall(PressureMass(dm, &fl, &Shat));
  PetscCall(PCFieldSplitSetSchurPre(pc, PC_FIELDSPLIT_SCHUR_PRE_USER, Shat));
  PetscCall(DefaultOption("-fieldsplit_face_ksp_type", "preonly"));
  PetscCall(DefaultOption("-fieldsplit_face_pc_type", "redundant"));
  PetscCall(DefaultOption("-fieldsplit_element_ksp_type", "preonly"));
  PetscCall(DefaultOption("-fieldsplit_element_pc_type", "jacobi"));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCheck(reason > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "the Stokes solve did not converge (reason %s)", KSPConvergedReasons[reason]);
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(Measure(dm, &fl, x, err));

  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "u_err: %.10e\n", (double)err[0]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "p_err: %.10e\n", (double)err[1]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "div_max: %.10e\n", (double)err[2]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "iterations: %" PetscInt_FMT "\n", its));

  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&Shat));
  PetscCall(DMDestroy(&dm));
  PetscCall(PetscFinalize());
  return 0;
}
