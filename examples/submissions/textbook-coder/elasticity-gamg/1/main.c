static char help[] = "Cantilever beam under gravity: 3D linear elasticity, Q1 elements on a DMDA, CG + GAMG.\n"
                     "  -n <int>    : elements per unit length (even; the mesh has 4n x n x n elements)\n"
                     "  -nu <real>  : Poisson's ratio\n\n";

/*
  Find u with -div sigma(u) = f in (0,4) x (0,1) x (0,1), sigma = lambda tr(eps) I + 2 mu eps,
  u = 0 on the clamped face x = 0, traction-free elsewhere, under the uniform body force
  f = (0, 0, -1). Young's modulus E = 1000, Poisson's ratio from -nu.

  Q1 elements on the uniform mesh of 4n x n x n cubes of side h = 1/n, stiffness by 2x2x2 Gauss
  quadrature (exact for Q1), assembled element by element: each rank assembles the elements whose
  lowest corner node it owns, adding into rows other ranks own where needed. The clamped rows and
  columns are removed symmetrically (MatZeroRowsColumns), so the operator stays symmetric positive
  definite.

  Solver: the system is symmetric positive definite, so we use CG with algebraic multigrid
  (GAMG), which is scalable for elliptic problems.

  Output (rank 0): the vertical displacement at the centre of the free end (4, 1/2, 1/2), the
  compliance f.u (twice the elastic energy) and the number of CG iterations to rtol 1e-10.
*/

#include <petscdmda.h>
#include <petscksp.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

#define YOUNG 1000.0

/* Element stiffness of the cube [0,h]^3; node a = ix + 2 iy + 4 iz, dof 3a + c. */
static void ElementStiffness(PetscReal nu, PetscReal h, PetscReal K[24][24])
{
  const PetscReal lam = YOUNG * nu / ((1 + nu) * (1 - 2 * nu)), mu = YOUNG / (2 * (1 + nu));
  const PetscReal gp[2] = {0.5 - 0.5 / PetscSqrtReal(3.0), 0.5 + 0.5 / PetscSqrtReal(3.0)};

  for (PetscInt r = 0; r < 24; ++r)
    for (PetscInt c = 0; c < 24; ++c) K[r][c] = 0.0;
  for (PetscInt q = 0; q < 8; ++q) {
    const PetscReal xi[3] = {gp[q & 1], gp[(q >> 1) & 1], gp[(q >> 2) & 1]};
    PetscReal       g[8][3]; /* gradients of the shape functions, physical coordinates */

    for (PetscInt a = 0; a < 8; ++a) {
      PetscReal f[3], df[3];
      for (PetscInt d = 0; d < 3; ++d) {
        const PetscInt s = (a >> d) & 1;
        f[d]             = s ? xi[d] : 1.0 - xi[d];
        df[d]            = s ? 1.0 : -1.0;
      }
      g[a][0] = df[0] * f[1] * f[2] / h;
      g[a][1] = f[0] * df[1] * f[2] / h;
      g[a][2] = f[0] * f[1] * df[2] / h;
    }
    /* K_(ai)(bj) += (lam g_a,i g_b,j + mu g_a,j g_b,i + mu delta_ij g_a.g_b) |cell| / 8 */
    for (PetscInt a = 0; a < 8; ++a)
      for (PetscInt b = 0; b < 8; ++b) {
        const PetscReal dot = g[a][0] * g[b][0] + g[a][1] * g[b][1] + g[a][2] * g[b][2];
        for (PetscInt i = 0; i < 3; ++i)
          for (PetscInt j = 0; j < 3; ++j) K[3 * a + i][3 * b + j] += (lam * g[a][i] * g[b][j] + mu * g[a][j] * g[b][i] + (i == j ? mu * dot : 0.0)) * h * h * h / 8.0;
      }
  }
}

static PetscErrorCode Assemble(DM da, PetscReal nu, PetscReal h, Mat A, Vec b)
{
  PetscReal      K[24][24];
  PetscInt       xs, ys, zs, xm, ym, zm, M, N, P;
  Vec            bl;
  PetscScalar ****bb;

  PetscFunctionBeginUser;
  ElementStiffness(nu, h, K);
  PetscCall(DMDAGetInfo(da, NULL, &M, &N, &P, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
  PetscCall(DMGetLocalVector(da, &bl));
  PetscCall(VecZeroEntries(bl));
  PetscCall(DMDAVecGetArrayDOF(da, bl, &bb));
  for (PetscInt k = zs; k < PetscMin(zs + zm, P - 1); ++k)
    for (PetscInt j = ys; j < PetscMin(ys + ym, N - 1); ++j)
      for (PetscInt i = xs; i < PetscMin(xs + xm, M - 1); ++i) {
        MatStencil  idx[24];
        PetscScalar v[24 * 24];
        for (PetscInt a = 0; a < 8; ++a)
          for (PetscInt c = 0; c < 3; ++c) {
            idx[3 * a + c].i = i + (a & 1);
            idx[3 * a + c].j = j + ((a >> 1) & 1);
            idx[3 * a + c].k = k + ((a >> 2) & 1);
            idx[3 * a + c].c = c;
          }
        for (PetscInt r = 0; r < 24; ++r)
          for (PetscInt c = 0; c < 24; ++c) v[24 * r + c] = K[r][c];
        PetscCall(MatSetValuesStencil(A, 24, idx, 24, idx, v, ADD_VALUES));
        /* body force (0, 0, -1): each node gets -|cell|/8 in z */
        for (PetscInt a = 0; a < 8; ++a) bb[k + ((a >> 2) & 1)][j + ((a >> 1) & 1)][i + (a & 1)][2] -= h * h * h / 8.0;
      }
  PetscCall(DMDAVecRestoreArrayDOF(da, bl, &bb));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(VecZeroEntries(b));
  PetscCall(DMLocalToGlobal(da, bl, ADD_VALUES, b));
  PetscCall(DMRestoreLocalVector(da, &bl));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* u = 0 on x = 0: rows and columns removed, diagonal kept at the element stiffness' scale */
static PetscErrorCode Clamp(DM da, PetscReal scale, Mat A, Vec b)
{
  PetscInt    xs, ys, zs, xm, ym, zm, nrows = 0;
  MatStencil *rows;
  Vec         zero;

  PetscFunctionBeginUser;
  PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
  PetscCall(PetscMalloc1(xs == 0 ? 3 * ym * zm : 1, &rows));
  if (xs == 0)
    for (PetscInt k = zs; k < zs + zm; ++k)
      for (PetscInt j = ys; j < ys + ym; ++j)
        for (PetscInt c = 0; c < 3; ++c) {
          rows[nrows].i   = 0;
          rows[nrows].j   = j;
          rows[nrows].k   = k;
          rows[nrows++].c = c;
        }
  PetscCall(VecDuplicate(b, &zero));
  PetscCall(VecZeroEntries(zero));
  PetscCall(MatZeroRowsColumnsStencil(A, nrows, rows, scale, zero, b));
  PetscCall(VecDestroy(&zero));
  PetscCall(PetscFree(rows));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  DM                 da;
  Mat                A;
  Vec                u, b;
  KSP                ksp;
  PC                 pc;
  PetscInt           n = 6, its;
  PetscReal          nu = 0.3, h, tip = 0.0, compliance, K[24][24];
  KSPConvergedReason reason;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Cantilever options", NULL);
  PetscCall(PetscOptionsInt("-n", "elements per unit length", NULL, n, &n, NULL));
  PetscCall(PetscOptionsReal("-nu", "Poisson's ratio", NULL, nu, &nu, NULL));
  PetscOptionsEnd();
  PetscCheck(n >= 2 && n % 2 == 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be even and at least 2");
  PetscCheck(nu > -1.0 && nu < 0.5, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-nu must lie in (-1, 1/2)");
  h = 1.0 / n;

  PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, 4 * n + 1, n + 1, n + 1, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, 3, 1, NULL, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(DMDASetUniformCoordinates(da, 0.0, 4.0, 0.0, 1.0, 0.0, 1.0));
  PetscCall(DMCreateMatrix(da, &A)); /* block size 3: the dof per node */
  PetscCall(DMCreateGlobalVector(da, &b));
  PetscCall(VecDuplicate(b, &u));
  PetscCall(Assemble(da, nu, h, A, b));
  ElementStiffness(nu, h, K);
  PetscCall(Clamp(da, K[0][0], A, b));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCGAMG));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 1000));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, b, u));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCheck(reason > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "the linear solve did not converge (reason %s)", KSPConvergedReasons[reason]);
  PetscCall(KSPGetIterationNumber(ksp, &its));

  PetscCall(VecDot(b, u, &compliance));
  {
    PetscInt            xs, ys, zs, xm, ym, zm;
    const PetscScalar ****uu;
    PetscReal           mine = 0.0;
    PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
    PetscCall(DMDAVecGetArrayDOFRead(da, u, &uu));
    if (xs + xm == 4 * n + 1 && n / 2 >= ys && n / 2 < ys + ym && n / 2 >= zs && n / 2 < zs + zm) mine = PetscRealPart(uu[n / 2][n / 2][4 * n][2]);
    PetscCall(DMDAVecRestoreArrayDOFRead(da, u, &uu));
    PetscCallMPI(MPIU_Allreduce(&mine, &tip, 1, MPIU_REAL, MPIU_SUM, PETSC_COMM_WORLD));
  }

  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "tip_uz: %.10e\n", (double)tip));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "compliance: %.10e\n", (double)compliance));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "iterations: %" PetscInt_FMT "\n", its));

  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&u));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
