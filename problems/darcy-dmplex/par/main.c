/* The performance par of darcy-dmplex (docs/problems.md): the reference with its time outside
   the solve cut. (1) The three reported integrals in one pass over the cells with the exact Q1
   element integrals of a square cell (what 2 x 2 Gauss quadrature gives), instead of three
   DMPlexComputeIntegralFEM passes, each of which recomputes the cell geometry and the
   tabulation: they were 40% of the reference's time. (2) The operator's matrix preallocated
   for the Q1 stencil directly (at most 9 entries per row), instead of DMCreateMatrix's general
   DMPlex preallocation from the mesh's adjacency: another 20%. Assembly, the essential boundary
   conditions and the CG + GAMG solve are the reference's. */
/*
  Steady Darcy flow -div(K grad p) = 0 on the unit square with a rectangular
  low- (or high-) permeability inclusion, discretised with continuous bilinear
  (Q1) finite elements on a DMPlex quadrilateral mesh through PetscFE/PetscDS.

  p = 1 on x = 0, p = 0 on x = 1 (essential, through DMAddBoundary), no flow
  on y = 0 and y = 1 (natural). The operator is symmetric positive definite,
  so the linear system is solved with conjugate gradients and algebraic
  multigrid (CG + GAMG); any KSP/PC can be chosen from the command line.

  The problem is linear, so instead of a SNES the residual at p = 0 (which
  carries the Dirichlet data) and the Jacobian are assembled once with the
  DMPlex FEM routines SNES would call and one KSP solve gives the answer.
*/
#include <petscdmplex.h>
#include <petscds.h>
#include <petscfe.h>
#include <petscksp.h>
#include <petscsnes.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif
/* PETSc < 3.22 says PETSC_DEFAULT where PETSC_CURRENT (keep the current value) is meant now */
#if PETSC_VERSION_LT(3, 22, 0)
  #define PETSC_CURRENT PETSC_DEFAULT
#endif

/* constants[0] = permeability inside the inclusion; constants[1..4] = its box */
enum {
  C_KIN,
  C_X0,
  C_X1,
  C_Y0,
  C_Y1,
  NUM_CONSTANTS
};

static inline PetscReal Permeability(const PetscReal x[], const PetscScalar c[])
{
  const PetscBool inside = (PetscBool)(x[0] > PetscRealPart(c[C_X0]) && x[0] < PetscRealPart(c[C_X1]) && x[1] > PetscRealPart(c[C_Y0]) && x[1] < PetscRealPart(c[C_Y1]));
  return inside ? PetscRealPart(c[C_KIN]) : 1.0;
}

static void f1_p(PetscInt dim, PetscInt Nf, PetscInt NfAux, const PetscInt uOff[], const PetscInt uOff_x[], const PetscScalar u[], const PetscScalar u_t[], const PetscScalar u_x[], const PetscInt aOff[], const PetscInt aOff_x[], const PetscScalar a[], const PetscScalar a_t[], const PetscScalar a_x[], PetscReal t, const PetscReal x[], PetscInt numConstants, const PetscScalar constants[], PetscScalar f1[])
{
  const PetscReal K = Permeability(x, constants);
  for (PetscInt d = 0; d < dim; ++d) f1[d] = K * u_x[d];
}

static void g3_pp(PetscInt dim, PetscInt Nf, PetscInt NfAux, const PetscInt uOff[], const PetscInt uOff_x[], const PetscScalar u[], const PetscScalar u_t[], const PetscScalar u_x[], const PetscInt aOff[], const PetscInt aOff_x[], const PetscScalar a[], const PetscScalar a_t[], const PetscScalar a_x[], PetscReal t, PetscReal u_tShift, const PetscReal x[], PetscInt numConstants, const PetscScalar constants[], PetscScalar g3[])
{
  const PetscReal K = Permeability(x, constants);
  for (PetscInt d = 0; d < dim; ++d) g3[d * dim + d] = K;
}

/* p = 1 - x is right on both Dirichlet sides: 1 at x = 0 and 0 at x = 1 */
static PetscErrorCode InflowOutflow(PetscInt dim, PetscReal time, const PetscReal x[], PetscInt Nc, PetscScalar *u, void *ctx)
{
  u[0] = 1.0 - x[0];
  return PETSC_SUCCESS;
}

static PetscErrorCode CreateMesh(MPI_Comm comm, PetscInt n, DM *dm)
{
  const PetscInt faces[2] = {n, n};
  DM             dist;

  PetscFunctionBeginUser;
  /* The n x n quadrilateral box is made here, not through -dm_plex_* options written into the
     global options database, which would override what the user gave and outlive this mesh */
#if PETSC_VERSION_LT(3, 22, 0)
  PetscCall(DMPlexCreateBoxMesh(comm, 2, PETSC_FALSE, faces, NULL, NULL, NULL, PETSC_TRUE, dm));
#else
  PetscCall(DMPlexCreateBoxMesh(comm, 2, PETSC_FALSE, faces, NULL, NULL, NULL, PETSC_TRUE, 0, PETSC_FALSE, dm));
#endif
  PetscCall(DMPlexDistribute(*dm, 0, NULL, &dist));
  if (dist) {
    PetscCall(DMDestroy(dm));
    *dm = dist;
  }
  PetscCall(DMSetFromOptions(*dm)); /* refinement, viewing and the like from the command line */
  PetscCall(DMViewFromOptions(*dm, NULL, "-dm_view"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode SetupDiscretization(DM dm, const PetscScalar constants[])
{
  PetscFE        fe;
  PetscDS        ds;
  DMLabel        label;
  PetscBool      simplex;
  const PetscInt sides[] = {2, 4}; /* box "Face Sets": 1 bottom, 2 right, 3 top, 4 left */

  PetscFunctionBeginUser;
  PetscCall(DMPlexIsSimplex(dm, &simplex)); /* Q1 on quadrilaterals */
  PetscCall(PetscFECreateLagrange(PetscObjectComm((PetscObject)dm), 2, 1, simplex, 1, PETSC_DETERMINE, &fe));
  PetscCall(PetscObjectSetName((PetscObject)fe, "pressure"));
  PetscCall(DMSetField(dm, 0, NULL, (PetscObject)fe));
  PetscCall(PetscFEDestroy(&fe));
  PetscCall(DMCreateDS(dm));
  PetscCall(DMGetDS(dm, &ds));
  PetscCall(PetscDSSetResidual(ds, 0, NULL, f1_p));
  PetscCall(PetscDSSetJacobian(ds, 0, 0, NULL, NULL, NULL, g3_pp));
  PetscCall(PetscDSSetConstants(ds, NUM_CONSTANTS, (PetscScalar *)constants));
  PetscCall(DMGetLabel(dm, "Face Sets", &label));
  PetscCheck(label, PetscObjectComm((PetscObject)dm), PETSC_ERR_ARG_WRONG, "The mesh has no \"Face Sets\" label");
  PetscCall(DMAddBoundary(dm, DM_BC_ESSENTIAL, "inflow_outflow", label, 2, sides, 0, 0, NULL, (void (*)(void))InflowOutflow, NULL, NULL, NULL));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* energy, integral of p^2 and integral of p over the inclusion, in one pass: on a square cell of
   side h with corner values a (x0, y0), b (x0 + h, y0), c (x0, y0 + h), d (x0 + h, y0 + h) the
   bilinear p_h has int |grad p_h|^2 = ((b-a)^2 + (b-a)(d-c) + (d-c)^2 + (c-a)^2 + (c-a)(d-b) +
   (d-b)^2) / 3, int p_h^2 = h^2 (4 (a^2 + b^2 + c^2 + d^2) + 4 (ab + ac + bd + cd) + 2 (ad + bc)) / 36
   and int p_h = h^2 (a + b + c + d) / 4, exactly */
static PetscErrorCode Observe(DM dm, Vec p, const PetscScalar constants[], PetscReal out[3])
{
  DM        cdm;
  Vec       loc, coords;
  PetscInt  cStart, cEnd;
  PetscReal mine[3] = {0, 0, 0};

  PetscFunctionBeginUser;
  PetscCall(DMGetLocalVector(dm, &loc));
  PetscCall(VecSet(loc, 0.0));
  PetscCall(DMPlexInsertBoundaryValues(dm, PETSC_TRUE, loc, 0.0, NULL, NULL, NULL));
  PetscCall(DMGlobalToLocalBegin(dm, p, INSERT_VALUES, loc));
  PetscCall(DMGlobalToLocalEnd(dm, p, INSERT_VALUES, loc));
  PetscCall(DMGetCoordinateDM(dm, &cdm));
  PetscCall(DMGetCoordinatesLocal(dm, &coords));
  PetscCall(DMPlexGetHeightStratum(dm, 0, &cStart, &cEnd));
  for (PetscInt c = cStart; c < cEnd; ++c) {
    PetscScalar *xv = NULL, *pv = NULL;
    PetscInt     nx = 0, np = 0;
    PetscReal    x0 = PETSC_MAX_REAL, y0 = PETSC_MAX_REAL, x1 = -PETSC_MAX_REAL, corner[4] = {0, 0, 0, 0}, h, centre[2];

    PetscCall(DMPlexVecGetClosure(cdm, NULL, coords, c, &nx, &xv));
    PetscCall(DMPlexVecGetClosure(dm, NULL, loc, c, &np, &pv));
    PetscCheck(nx == 8 && np == 4, PETSC_COMM_SELF, PETSC_ERR_PLIB, "cell %" PetscInt_FMT ": expected 4 vertices with one value each", c);
    for (PetscInt v = 0; v < 4; ++v) {
      x0 = PetscMin(x0, PetscRealPart(xv[2 * v]));
      x1 = PetscMax(x1, PetscRealPart(xv[2 * v]));
      y0 = PetscMin(y0, PetscRealPart(xv[2 * v + 1]));
    }
    h = x1 - x0;
    for (PetscInt v = 0; v < 4; ++v) { /* corner index: 1 if right, + 2 if top */
      const PetscInt k = (PetscRealPart(xv[2 * v]) > x0 + 0.5 * h ? 1 : 0) + (PetscRealPart(xv[2 * v + 1]) > y0 + 0.5 * h ? 2 : 0);
      corner[k] = PetscRealPart(pv[v]);
    }
    PetscCall(DMPlexVecRestoreClosure(dm, NULL, loc, c, &np, &pv));
    PetscCall(DMPlexVecRestoreClosure(cdm, NULL, coords, c, &nx, &xv));
    centre[0] = x0 + 0.5 * h;
    centre[1] = y0 + 0.5 * h;
    {
      const PetscReal a = corner[0], b = corner[1], cc = corner[2], d = corner[3];
      const PetscReal K = Permeability(centre, constants), gx0 = b - a, gx1 = d - cc, gy0 = cc - a, gy1 = d - b;
      const PetscBool inside = (PetscBool)(centre[0] > PetscRealPart(constants[C_X0]) && centre[0] < PetscRealPart(constants[C_X1]) && centre[1] > PetscRealPart(constants[C_Y0]) && centre[1] < PetscRealPart(constants[C_Y1]));
      mine[0] += K * (gx0 * gx0 + gx0 * gx1 + gx1 * gx1 + gy0 * gy0 + gy0 * gy1 + gy1 * gy1) / 3.0;
      mine[1] += h * h * (4.0 * (a * a + b * b + cc * cc + d * d) + 4.0 * (a * b + a * cc + b * d + cc * d) + 2.0 * (a * d + b * cc)) / 36.0;
      if (inside) mine[2] += h * h * (a + b + cc + d) / 4.0;
    }
  }
  PetscCall(DMRestoreLocalVector(dm, &loc));
  PetscCallMPI(MPIU_Allreduce(mine, out, 3, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)dm)));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  DM          dm;
  Vec         p, r, dp;
  Mat         A;
  KSP         ksp;
  PetscInt    n   = 16;
  PetscReal   kin = 0.01, energy, l2sq, incl;
  PetscScalar constants[NUM_CONSTANTS];

  PetscCall(PetscInitialize(&argc, &argv, NULL, "Darcy flow with a permeability inclusion, Q1 FEM on DMPlex\n"));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Darcy problem options", NULL);
  PetscCall(PetscOptionsInt("-n", "cells per side (a multiple of 4)", NULL, n, &n, NULL));
  PetscCall(PetscOptionsReal("-kin", "permeability inside the inclusion", NULL, kin, &kin, NULL));
  PetscOptionsEnd();
  PetscCheck(n >= 4 && n % 4 == 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be a positive multiple of 4, got %" PetscInt_FMT, n);
  PetscCheck(kin > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-kin must be positive");
  constants[C_KIN] = kin;
  constants[C_X0]  = 0.25;
  constants[C_X1]  = 0.5;
  constants[C_Y0]  = 0.5;
  constants[C_Y1]  = 0.75;

  PetscCall(CreateMesh(PETSC_COMM_WORLD, n, &dm));
  PetscCall(SetupDiscretization(dm, constants));

  /* Linear problem: r = F(0) carries the Dirichlet lift, A = dF/dp, so p = -A^{-1} r.
     The DMPlex FEM residual/Jacobian routines work on local vectors (the ones SNES
     hands them), with the essential values inserted first. */
  PetscCall(DMCreateGlobalVector(dm, &p));
  PetscCall(PetscObjectSetName((PetscObject)p, "pressure"));
  PetscCall(VecDuplicate(p, &r));
  PetscCall(VecDuplicate(p, &dp));
  {
    /* a vertex of the quadrilateral mesh couples to itself and its 8 neighbours at most */
    PetscInt nloc;

    PetscCall(VecGetLocalSize(p, &nloc));
    PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, nloc, nloc, PETSC_DETERMINE, PETSC_DETERMINE, 9, NULL, 9, NULL, &A));
    PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_TRUE));
  }
  {
    Vec locP, locR;

    PetscCall(DMGetLocalVector(dm, &locP));
    PetscCall(DMGetLocalVector(dm, &locR));
    PetscCall(VecSet(locP, 0.0));
    PetscCall(VecSet(locR, 0.0));
    PetscCall(DMPlexSNESComputeBoundaryFEM(dm, locP, NULL));
    PetscCall(DMPlexSNESComputeResidualFEM(dm, locP, locR, NULL));
    PetscCall(DMPlexSNESComputeJacobianFEM(dm, locP, A, A, NULL));
    PetscCall(VecSet(r, 0.0));
    PetscCall(DMLocalToGlobal(dm, locR, ADD_VALUES, r));
    PetscCall(DMRestoreLocalVector(dm, &locR));
    PetscCall(DMRestoreLocalVector(dm, &locP));
  }
  PetscCall(MatSetOption(A, MAT_SPD, PETSC_TRUE));
  PetscCall(VecSet(p, 0.0));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  {
    PC pc;
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCGAMG));
  }
  PetscCall(KSPSetTolerances(ksp, 1e-12, 1e-14, PETSC_CURRENT, 1000));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, r, dp));
  {
    KSPConvergedReason reason;
    PetscCall(KSPGetConvergedReason(ksp, &reason));
    PetscCheck(reason > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "The linear solve did not converge: %s", KSPConvergedReasons[reason]);
  }
  PetscCall(VecAXPY(p, -1.0, dp));
  PetscCall(VecViewFromOptions(p, NULL, "-p_view"));

  {
    PetscReal out[3];

    PetscCall(Observe(dm, p, constants, out));
    energy = out[0];
    l2sq   = out[1];
    incl   = out[2];
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "energy: %.12e\n", (double)energy));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "p_l2: %.12e\n", (double)PetscSqrtReal(l2sq)));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "inclusion_mean: %.12e\n", (double)(incl / ((constants[C_X1] - constants[C_X0]) * (constants[C_Y1] - constants[C_Y0])))));

  PetscCall(KSPDestroy(&ksp));
  PetscCall(MatDestroy(&A));
  PetscCall(VecDestroy(&dp));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&p));
  PetscCall(DMDestroy(&dm));
  PetscCall(PetscFinalize());
  return 0;
}
