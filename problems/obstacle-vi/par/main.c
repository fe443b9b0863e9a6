/* The performance par of obstacle-vi (docs/problems.md): the reference with inexact Newton steps
   on the reduced space, CG + SOR to rtol 1e-2, in place of GMRES + ILU to PETSc's default 1e-5
   (about 0.4x its time; the answer agrees to the last printed digit). */
static char help[] = "A membrane pressed onto a dome: the obstacle problem in the unit square as a variational\n"
                     "inequality (complementarity problem) solved by SNESVI with the dome as lower bound.\n"
                     "  -n <int>      : grid intervals per side (a multiple of 10)\n"
                     "  -load <real>  : downward load per unit area\n\n";

/*
  Find u >= psi with  -lap u - f >= 0  and  (u - psi)(-lap u - f) = 0  in (0,1)^2,  u = 0 on the
  boundary, where f = -load (a uniform downward load) and psi is the dome
  psi(x,y) = 0.3 - 4 ((x - 0.6)^2 + (y - 0.5)^2), negative on the whole boundary.

  Grid: (n+1)^2 points including the boundary, spacing h = 1/n, five-point Laplacian. The
  boundary rows read u = 0 (scaled like the interior rows). The constraint is posed, not
  imposed by hand: SNESVISetVariableBounds(psi, +infinity) and the reduced-space active-set
  Newton method SNESVINEWTONRSLS, for which this linear complementarity problem is solved
  exactly (up to the linear solves) once the active set stops changing.

  Output (rank 0): u along y = 1/2 at x = 0.1, ..., 0.9, the discrete L2 norm of u, and the
  total contact force h^2 sum(-lap_h u - f) over the interior points (zero off contact).
*/

#include <petscdmda.h>
#include <petscsnes.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

typedef struct {
  PetscReal load; /* f = -load */
  PetscReal h;
} Membrane;

static PetscReal Dome(PetscReal x, PetscReal y)
{
  return 0.3 - 4.0 * ((x - 0.6) * (x - 0.6) + (y - 0.5) * (y - 0.5));
}

/* F(u) = -lap_h u - f on interior points, u on boundary points (each times h^2) */
static PetscErrorCode FormResidual(SNES snes, Vec U, Vec F, void *ptr)
{
  Membrane           *mb = (Membrane *)ptr;
  DM                  da;
  DMDALocalInfo       info;
  Vec                 Ul;
  const PetscScalar **u;
  PetscScalar       **f;
  const PetscReal     h2 = mb->h * mb->h;

  PetscFunctionBeginUser;
  PetscCall(SNESGetDM(snes, &da));
  PetscCall(DMDAGetLocalInfo(da, &info));
  PetscCall(DMGetLocalVector(da, &Ul));
  PetscCall(DMGlobalToLocal(da, U, INSERT_VALUES, Ul));
  PetscCall(DMDAVecGetArrayRead(da, Ul, &u));
  PetscCall(DMDAVecGetArray(da, F, &f));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j) {
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
      if (i == 0 || j == 0 || i == info.mx - 1 || j == info.my - 1) f[j][i] = 4.0 * u[j][i];
      else f[j][i] = 4.0 * u[j][i] - u[j][i - 1] - u[j][i + 1] - u[j - 1][i] - u[j + 1][i] + h2 * mb->load;
    }
  }
  PetscCall(DMDAVecRestoreArrayRead(da, Ul, &u));
  PetscCall(DMDAVecRestoreArray(da, F, &f));
  PetscCall(DMRestoreLocalVector(da, &Ul));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode FormOperator(SNES snes, Vec U, Mat A, Mat P, void *ptr)
{
  DM            da;
  DMDALocalInfo info;

  PetscFunctionBeginUser;
  (void)U;
  (void)A;
  (void)ptr;
  PetscCall(SNESGetDM(snes, &da));
  PetscCall(DMDAGetLocalInfo(da, &info));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j) {
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) {
      MatStencil  row = {0}, col[5];
      PetscScalar v[5] = {4.0, -1.0, -1.0, -1.0, -1.0};
      row.i            = i;
      row.j            = j;
      if (i == 0 || j == 0 || i == info.mx - 1 || j == info.my - 1) {
        PetscCall(MatSetValuesStencil(P, 1, &row, 1, &row, v, INSERT_VALUES));
        continue;
      }
      for (PetscInt k = 0; k < 5; ++k) col[k] = row;
      col[1].i = i - 1;
      col[2].i = i + 1;
      col[3].j = j - 1;
      col[4].j = j + 1;
      PetscCall(MatSetValuesStencil(P, 1, &row, 5, col, v, INSERT_VALUES));
    }
  }
  PetscCall(MatAssemblyBegin(P, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(P, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* the dome at the grid points as lower bound (also on the boundary, where it is below 0) */
static PetscErrorCode FormBounds(DM da, PetscReal h, Vec lo, Vec hi)
{
  DMDALocalInfo info;
  PetscScalar **l;

  PetscFunctionBeginUser;
  PetscCall(DMDAGetLocalInfo(da, &info));
  PetscCall(DMDAVecGetArray(da, lo, &l));
  for (PetscInt j = info.ys; j < info.ys + info.ym; ++j)
    for (PetscInt i = info.xs; i < info.xs + info.xm; ++i) l[j][i] = Dome(i * h, j * h);
  PetscCall(DMDAVecRestoreArray(da, lo, &l));
  PetscCall(VecSet(hi, PETSC_INFINITY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* u(0.1k, 1/2), k = 1..9, gathered from whichever rank owns each point */
static PetscErrorCode SampleLine(DM da, Vec U, PetscInt n, PetscReal line[9])
{
  DMDALocalInfo       info;
  const PetscScalar **u;
  PetscReal           mine[9] = {0};

  PetscFunctionBeginUser;
  PetscCall(DMDAGetLocalInfo(da, &info));
  PetscCall(DMDAVecGetArrayRead(da, U, &u));
  for (PetscInt k = 0; k < 9; ++k) {
    const PetscInt i = (k + 1) * n / 10, j = n / 2;
    if (i >= info.xs && i < info.xs + info.xm && j >= info.ys && j < info.ys + info.ym) mine[k] = PetscRealPart(u[j][i]);
  }
  PetscCall(DMDAVecRestoreArrayRead(da, U, &u));
  PetscCallMPI(MPIU_Allreduce(mine, line, 9, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)da)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  DM                  da;
  SNES                snes;
  Vec                 U, R, lo, hi;
  Membrane            mb = {4.0, 0.0};
  PetscInt            n  = 50;
  PetscReal           line[9], unorm, force;
  SNESConvergedReason reason;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Obstacle problem options", NULL);
  PetscCall(PetscOptionsInt("-n", "grid intervals per side", NULL, n, &n, NULL));
  PetscCall(PetscOptionsReal("-load", "downward load per unit area", NULL, mb.load, &mb.load, NULL));
  PetscOptionsEnd();
  PetscCheck(n >= 10 && n % 10 == 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be a positive multiple of 10");
  mb.h = 1.0 / n;

  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, n + 1, n + 1, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateGlobalVector(da, &U));
  PetscCall(VecDuplicate(U, &R));
  PetscCall(VecDuplicate(U, &lo));
  PetscCall(VecDuplicate(U, &hi));
  PetscCall(FormBounds(da, mb.h, lo, hi));

  PetscCall(SNESCreate(PETSC_COMM_WORLD, &snes));
  PetscCall(SNESSetDM(snes, da));
  PetscCall(SNESSetFunction(snes, R, FormResidual, &mb));
  PetscCall(SNESSetJacobian(snes, NULL, NULL, FormOperator, &mb));
  PetscCall(SNESSetType(snes, SNESVINEWTONRSLS));
  PetscCall(SNESVISetVariableBounds(snes, lo, hi));
  PetscCall(SNESSetTolerances(snes, 1e-12, 1e-12, PETSC_DEFAULT, 100, PETSC_DEFAULT));
  {
    /* par: inexact Newton on the reduced (active-set-free) system, which stays symmetric positive
       definite: CG with SOR to a relative residual of 1e-2 per step; the outer tolerances, not
       the inner ones, decide the answer */
    KSP ksp;
    PC  pc;
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPSetType(ksp, KSPCG));
    PetscCall(KSPSetTolerances(ksp, 1e-2, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCSOR));
  }
  PetscCall(SNESSetFromOptions(snes));

  PetscCall(VecZeroEntries(U));
  PetscCall(VecPointwiseMax(U, U, lo)); /* a feasible start */
  PetscCall(SNESSolve(snes, NULL, U));
  PetscCall(SNESGetConvergedReason(snes, &reason));
  PetscCheck(reason > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "the complementarity problem was not solved (reason %s)", SNESConvergedReasons[reason]);

  /* contact force: the residual without the bounds, summed; zero wherever u > psi */
  PetscCall(FormResidual(snes, U, R, &mb));
  PetscCall(VecSum(R, &force));
  PetscCall(SampleLine(da, U, n, line));
  PetscCall(VecNorm(U, NORM_2, &unorm));
  unorm *= mb.h;

  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "u_line:"));
  for (PetscInt k = 0; k < 9; ++k) PetscCall(PetscPrintf(PETSC_COMM_WORLD, " %.10e", (double)line[k]));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "\nu_l2: %.10e\n", (double)unorm));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "contact_force: %.10e\n", (double)force));

  PetscCall(VecDestroy(&U));
  PetscCall(VecDestroy(&R));
  PetscCall(VecDestroy(&lo));
  PetscCall(VecDestroy(&hi));
  PetscCall(SNESDestroy(&snes));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
