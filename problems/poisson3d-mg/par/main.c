/* The performance par of poisson3d-mg (docs/problems.md): the reference with one symmetric
   SOR sweep (Richardson, one iteration, PCSOR's local symmetric sweep) as the smoother on every
   level instead of Chebyshev/Jacobi: fewer CG iterations, each cheaper. */
static char help[] = "Variable-coefficient Poisson equation in the unit cube with a manufactured solution:\n"
                     "seven-point finite differences on a DMDA, CG preconditioned by geometric multigrid whose\n"
                     "coarse operators are rediscretised on each coarser DMDA.\n"
                     "  -n <int>   : grid intervals per side (a multiple of 8)\n"
                     "  -a <real>  : strength of the coefficient's variation, k = 1 + a (x + 2 y z)\n\n";

/*
  -div(k grad u) = f in (0,1)^3, u = g on the boundary, with k = 1 + a (x + 2 y z) and f, g taken
  from the exact solution u* = exp(x + y) sin(pi z).

  Grid: (n+1)^3 points, boundary included, spacing h = 1/n. Interior rows are the conservative
  seven-point difference (k at the midpoints between neighbours) times h (h^3 / h^2); boundary rows
  are the identity (scaled by the interior diagonal's size), and the known boundary values are
  moved to the right-hand side, so the operator stays symmetric positive definite and CG applies.

  Solver: CG with PCMG on the DMDA hierarchy. The operators of every level come from the same
  ComputeOperator callback on that level's DMDA (rediscretisation: the coefficient is sampled at
  that level's midpoints), chosen with KSPSetComputeOperators; the number of levels makes the
  coarsest grid 4 intervals per side. Chebyshev/Jacobi smoothing (PETSc's default) keeps the
  iteration count flat as h shrinks, which is what the problem measures. Everything can be
  changed from the command line (-pc_type gamg, -pc_mg_galerkin, ...).

  Output (rank 0): the largest and the discrete L2 (h^{3/2} ||.||_2) error at the grid points, u at
  the cube's centre, and the number of CG iterations to the relative residual 1e-12.
*/

#include <petscdmda.h>
#include <petscksp.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

typedef struct {
  PetscReal a; /* variation of the coefficient */
} Problem;

static PetscReal Coef(const Problem *p, PetscReal x, PetscReal y, PetscReal z)
{
  return 1.0 + p->a * (x + 2.0 * y * z);
}

static PetscReal Exact(PetscReal x, PetscReal y, PetscReal z)
{
  return PetscExpReal(x + y) * PetscSinReal(PETSC_PI * z);
}

/* f = -div(k grad u*) = -(k_x u_x + k_y u_y + k_z u_z + k lap u*) */
static PetscReal Source(const Problem *p, PetscReal x, PetscReal y, PetscReal z)
{
  const PetscReal e = PetscExpReal(x + y), s = PetscSinReal(PETSC_PI * z), c = PetscCosReal(PETSC_PI * z);
  const PetscReal u = e * s, uz = PETSC_PI * e * c;
  return -(p->a * u + 2.0 * p->a * z * u + 2.0 * p->a * y * uz + Coef(p, x, y, z) * (2.0 - PETSC_PI * PETSC_PI) * u);
}

static PetscBool OnBoundary(PetscInt i, PetscInt j, PetscInt k, PetscInt m)
{
  return (i == 0 || j == 0 || k == 0 || i == m - 1 || j == m - 1 || k == m - 1) ? PETSC_TRUE : PETSC_FALSE;
}

/* The 7 coefficients of row (i,j,k): centre, then -x, +x, -y, +y, -z, +z. Rows are the difference
   quotient times the cell volume h^3 (as a finite-element or finite-volume operator is scaled):
   then the restriction P^T maps a fine residual to the right size for the operator rediscretised
   at 2h; with rows divided by h^2 instead, every coarse correction would be 8 times too large. */
static void Stencil(const Problem *p, PetscInt i, PetscInt j, PetscInt k, PetscReal h, PetscReal v[7])
{
  const PetscReal x = i * h, y = j * h, z = k * h;
  v[1] = -h * Coef(p, x - 0.5 * h, y, z);
  v[2] = -h * Coef(p, x + 0.5 * h, y, z);
  v[3] = -h * Coef(p, x, y - 0.5 * h, z);
  v[4] = -h * Coef(p, x, y + 0.5 * h, z);
  v[5] = -h * Coef(p, x, y, z - 0.5 * h);
  v[6] = -h * Coef(p, x, y, z + 0.5 * h);
  v[0] = -(v[1] + v[2] + v[3] + v[4] + v[5] + v[6]);
}

static PetscErrorCode ComputeOperator(KSP ksp, Mat A, Mat P, void *ptr)
{
  const Problem *p = (const Problem *)ptr;
  DM             da;
  PetscInt       m, xs, ys, zs, xm, ym, zm;
  PetscReal      h;

  PetscFunctionBeginUser;
  (void)A;
  PetscCall(KSPGetDM(ksp, &da));
  PetscCall(DMDAGetInfo(da, NULL, &m, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
  h = 1.0 / (m - 1);
  for (PetscInt k = zs; k < zs + zm; ++k) {
    for (PetscInt j = ys; j < ys + ym; ++j) {
      for (PetscInt i = xs; i < xs + xm; ++i) {
        const PetscInt off[7][3] = {
          {0,  0,  0 },
          {-1, 0,  0 },
          {1,  0,  0 },
          {0,  -1, 0 },
          {0,  1,  0 },
          {0,  0,  -1},
          {0,  0,  1 }
        };
        MatStencil  row = {0}, col[7];
        PetscScalar val[7];
        PetscReal   v[7];
        PetscInt    nc = 0;

        row.i = i;
        row.j = j;
        row.k = k;
        Stencil(p, i, j, k, h, v);
        if (OnBoundary(i, j, k, m)) {
          val[0] = v[0];
          PetscCall(MatSetValuesStencil(P, 1, &row, 1, &row, val, INSERT_VALUES));
          continue;
        }
        for (PetscInt s = 0; s < 7; ++s) {
          MatStencil c = row;
          c.i += off[s][0];
          c.j += off[s][1];
          c.k += off[s][2];
          if (s > 0 && OnBoundary(c.i, c.j, c.k, m)) continue; /* known value: in the right-hand side */
          col[nc]   = c;
          val[nc++] = v[s];
        }
        PetscCall(MatSetValuesStencil(P, 1, &row, nc, col, val, INSERT_VALUES));
      }
    }
  }
  PetscCall(MatAssemblyBegin(P, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(P, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode ComputeRHS(KSP ksp, Vec b, void *ptr)
{
  const Problem  *p = (const Problem *)ptr;
  DM              da;
  PetscScalar  ***rhs;
  PetscInt        m, xs, ys, zs, xm, ym, zm;
  PetscReal       h;

  PetscFunctionBeginUser;
  PetscCall(KSPGetDM(ksp, &da));
  PetscCall(DMDAGetInfo(da, NULL, &m, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
  h = 1.0 / (m - 1);
  PetscCall(DMDAVecGetArray(da, b, &rhs));
  for (PetscInt k = zs; k < zs + zm; ++k) {
    for (PetscInt j = ys; j < ys + ym; ++j) {
      for (PetscInt i = xs; i < xs + xm; ++i) {
        PetscReal v[7];

        Stencil(p, i, j, k, h, v);
        if (OnBoundary(i, j, k, m)) {
          rhs[k][j][i] = v[0] * Exact(i * h, j * h, k * h);
          continue;
        }
        rhs[k][j][i] = h * h * h * Source(p, i * h, j * h, k * h);
        if (i == 1) rhs[k][j][i] -= v[1] * Exact(0.0, j * h, k * h);
        if (i == m - 2) rhs[k][j][i] -= v[2] * Exact(1.0, j * h, k * h);
        if (j == 1) rhs[k][j][i] -= v[3] * Exact(i * h, 0.0, k * h);
        if (j == m - 2) rhs[k][j][i] -= v[4] * Exact(i * h, 1.0, k * h);
        if (k == 1) rhs[k][j][i] -= v[5] * Exact(i * h, j * h, 0.0);
        if (k == m - 2) rhs[k][j][i] -= v[6] * Exact(i * h, j * h, 1.0);
      }
    }
  }
  PetscCall(DMDAVecRestoreArray(da, b, &rhs));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* max and discrete L2 error at the grid points, and u at the centre (a grid point: n is even) */
static PetscErrorCode Measure(DM da, Vec u, PetscReal *emax, PetscReal *el2, PetscReal *centre)
{
  PetscScalar ***x;
  PetscInt       m, xs, ys, zs, xm, ym, zm;
  PetscReal      h, loc[3] = {0.0, 0.0, 0.0}, glob[3];

  PetscFunctionBeginUser;
  PetscCall(DMDAGetInfo(da, NULL, &m, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
  h = 1.0 / (m - 1);
  PetscCall(DMDAVecGetArrayRead(da, u, &x));
  for (PetscInt k = zs; k < zs + zm; ++k) {
    for (PetscInt j = ys; j < ys + ym; ++j) {
      for (PetscInt i = xs; i < xs + xm; ++i) {
        const PetscReal e = PetscAbsReal(PetscRealPart(x[k][j][i]) - Exact(i * h, j * h, k * h));
        loc[0] = PetscMax(loc[0], e);
        loc[1] += e * e;
        if (2 * i == m - 1 && 2 * j == m - 1 && 2 * k == m - 1) loc[2] = PetscRealPart(x[k][j][i]);
      }
    }
  }
  PetscCall(DMDAVecRestoreArrayRead(da, u, &x));
  PetscCallMPI(MPIU_Allreduce(&loc[0], &glob[0], 1, MPIU_REAL, MPIU_MAX, PetscObjectComm((PetscObject)da)));
  PetscCallMPI(MPIU_Allreduce(&loc[1], &glob[1], 2, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)da)));
  *emax   = glob[0];
  *el2    = PetscSqrtReal(glob[1] * h * h * h);
  *centre = glob[2];
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  DM                 da;
  KSP                ksp;
  PC                 pc;
  Vec                u;
  Problem            prob = {1.0};
  PetscInt           n = 24, levels = 1, its;
  PetscReal          emax = 0.0, el2 = 0.0, centre = 0.0;
  KSPConvergedReason reason;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Poisson 3D multigrid options", NULL);
  PetscCall(PetscOptionsInt("-n", "grid intervals per side", NULL, n, &n, NULL));
  PetscCall(PetscOptionsReal("-a", "variation of the coefficient", NULL, prob.a, &prob.a, NULL));
  PetscOptionsEnd();
  PetscCheck(n >= 8 && n % 8 == 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be a positive multiple of 8");
  PetscCheck(prob.a >= 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-a must be non-negative (k must stay positive)");
  for (PetscInt c = n; c > 4; c /= 2) ++levels;

  PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, n + 1, n + 1, n + 1, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, NULL, &da));
  PetscCall(DMSetUp(da));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetDM(ksp, da));
  PetscCall(KSPSetComputeRHS(ksp, ComputeRHS, &prob));
  PetscCall(KSPSetComputeOperators(ksp, ComputeOperator, &prob));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPSetTolerances(ksp, 1e-12, PETSC_DEFAULT, PETSC_DEFAULT, 500));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCMG));
  PetscCall(PCMGSetLevels(pc, levels, NULL));
  /* par: one symmetric SOR sweep per level instead of Chebyshev/Jacobi's two-plus-estimate */
  for (PetscInt l = 1; l < levels; l++) {
    KSP smoother;
    PC  spc;
    PetscCall(PCMGGetSmoother(pc, l, &smoother));
    PetscCall(KSPSetType(smoother, KSPRICHARDSON));
    PetscCall(KSPSetTolerances(smoother, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT, 1));
    PetscCall(KSPGetPC(smoother, &spc));
    PetscCall(PCSetType(spc, PCSOR));
  }
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, NULL, NULL));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCheck(reason > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "the linear solve did not converge (reason %s)", KSPConvergedReasons[reason]);
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetSolution(ksp, &u));
  PetscCall(Measure(da, u, &emax, &el2, &centre));

  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "err_max: %.10e\n", (double)emax));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "err_l2: %.10e\n", (double)el2));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "u_centre: %.10e\n", (double)centre));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "iterations: %" PetscInt_FMT "\n", its));

  PetscCall(KSPDestroy(&ksp));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
