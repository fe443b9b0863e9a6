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

/* constants[0] = permeability inside the inclusion; constants[1..4] = its box */
enum {
  C_KIN,
  C_X0,
  C_X1,
  C_Y0,
  C_Y1,
  NUM_CONSTANTS
};

static inline PetscReal P(const PetscReal x[], const PetscScalar c[])
{
  const PetscBool inside = (PetscBool)(x[0] > PetscRealPart(c[C_X0]) && x[0] < PetscRealPart(c[C_X1]) && x[1] > PetscRealPart(c[C_Y0]) && x[1] < PetscRealPart(c[C_Y1]));
  return inside ? PetscRealPart(c[C_KIN]) : 1.0;
}

static void r1(PetscInt dim, PetscInt Nf, PetscInt NfAux, const PetscInt uOff[], const PetscInt uOff_x[], const PetscScalar u[], const PetscScalar u_t[], const PetscScalar u_x[], const PetscInt aOff[], const PetscInt aOff_x[], const PetscScalar a[], const PetscScalar a_t[], const PetscScalar a_x[], PetscReal t, const PetscReal x[], PetscInt numConstants, const PetscScalar constants[], PetscScalar f1[])
{
  const PetscReal K = P(x, constants);
  for (PetscInt d = 0; d < dim; ++d) f1[d] = K * u_x[d];
}

static void r2(PetscInt dim, PetscInt Nf, PetscInt NfAux, const PetscInt uOff[], const PetscInt uOff_x[], const PetscScalar u[], const PetscScalar u_t[], const PetscScalar u_x[], const PetscInt aOff[], const PetscInt aOff_x[], const PetscScalar a[], const PetscScalar a_t[], const PetscScalar a_x[], PetscReal t, PetscReal u_tShift, const PetscReal x[], PetscInt numConstants, const PetscScalar constants[], PetscScalar g3[])
{
  const PetscReal K = P(x, constants);
  for (PetscInt d = 0; d < dim; ++d) g3[d * dim + d] = K;
}

/* Integrands of the three reported quantities */
static void o1(PetscInt dim, PetscInt Nf, PetscInt NfAux, const PetscInt uOff[], const PetscInt uOff_x[], const PetscScalar u[], const PetscScalar u_t[], const PetscScalar u_x[], const PetscInt aOff[], const PetscInt aOff_x[], const PetscScalar a[], const PetscScalar a_t[], const PetscScalar a_x[], PetscReal t, const PetscReal x[], PetscInt numConstants, const PetscScalar constants[], PetscScalar obj[])
{
  const PetscReal K = P(x, constants);
  obj[0]            = 0.0;
  for (PetscInt d = 0; d < dim; ++d) obj[0] += K * u_x[d] * u_x[d];
}

static void o2(PetscInt dim, PetscInt Nf, PetscInt NfAux, const PetscInt uOff[], const PetscInt uOff_x[], const PetscScalar u[], const PetscScalar u_t[], const PetscScalar u_x[], const PetscInt aOff[], const PetscInt aOff_x[], const PetscScalar a[], const PetscScalar a_t[], const PetscScalar a_x[], PetscReal t, const PetscReal x[], PetscInt numConstants, const PetscScalar constants[], PetscScalar obj[])
{
  obj[0] = u[0] * u[0];
}

static void o3(PetscInt dim, PetscInt Nf, PetscInt NfAux, const PetscInt uOff[], const PetscInt uOff_x[], const PetscScalar u[], const PetscScalar u_t[], const PetscScalar u_x[], const PetscInt aOff[], const PetscInt aOff_x[], const PetscScalar a[], const PetscScalar a_t[], const PetscScalar a_x[], PetscReal t, const PetscReal x[], PetscInt numConstants, const PetscScalar constants[], PetscScalar obj[])
{
  const PetscBool inside = (PetscBool)(x[0] > PetscRealPart(constants[C_X0]) && x[0] < PetscRealPart(constants[C_X1]) && x[1] > PetscRealPart(constants[C_Y0]) && x[1] < PetscRealPart(constants[C_Y1]));
  obj[0]                 = inside ? u[0] : 0.0;
}

/* p = 1 - x is right on both Dirichlet sides: 1 at x = 0 and 0 at x = 1 */
static PetscErrorCode bc(PetscInt dim, PetscReal time, const PetscReal x[], PetscInt Nc, PetscScalar *u, void *ctx)
{
  u[0] = 1.0 - x[0];
  return PETSC_SUCCESS;
}

static PetscErrorCode M1(MPI_Comm comm, PetscInt n, DM *d)
{
  char      s1[64];
  PetscBool s2;

  PetscFunctionBeginUser;
  /* Defaults for the box mesh; -dm_plex_* options given by the user win */
  PetscCall(PetscSNPrintf(s1, sizeof(s1), "%" PetscInt_FMT ",%" PetscInt_FMT, n, n));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-dm_plex_simplex", &s2));
  if (!s2) PetscCall(PetscOptionsSetValue(NULL, "-dm_plex_simplex", "0"));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-dm_plex_box_faces", &s2));
  if (!s2) PetscCall(PetscOptionsSetValue(NULL, "-dm_plex_box_faces", s1));
  PetscCall(DMCreate(comm, d));
  PetscCall(DMSetType(*d, DMPLEX));
  PetscCall(DMSetFromOptions(*d)); /* builds the box mesh and distributes it */
  PetscCall(DMViewFromOptions(*d, NULL, "-dm_view"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode M2(DM d, const PetscScalar constants[])
{
  PetscFE        fe;
  PetscDS        ds;
  DMLabel        l;
  PetscBool      s4;
  const PetscInt s3[] = {2, 4}; /* box "Face Sets": 1 bottom, 2 right, 3 top, 4 left */

  PetscFunctionBeginUser;
  PetscCall(DMPlexIsSimplex(d, &s4)); /* Q1 on the default quads; P1 if -dm_plex_simplex 1 */
  PetscCall(PetscFECreateLagrange(PetscObjectComm((PetscObject)d), 2, 1, s4, 1, PETSC_DETERMINE, &fe));
  PetscCall(PetscObjectSetName((PetscObject)fe, "pressure"));
  PetscCall(DMSetField(d, 0, NULL, (PetscObject)fe));
  PetscCall(PetscFEDestroy(&fe));
  PetscCall(DMCreateDS(d));
  PetscCall(DMGetDS(d, &ds));
  PetscCall(PetscDSSetResidual(ds, 0, NULL, r1));
  PetscCall(PetscDSSetJacobian(ds, 0, 0, NULL, NULL, NULL, r2));
  PetscCall(PetscDSSetConstants(ds, NUM_CONSTANTS, (PetscScalar *)constants));
  PetscCall(DMGetLabel(d, "Face Sets", &l));
  PetscCheck(l, PetscObjectComm((PetscObject)d), PETSC_ERR_ARG_WRONG, "The mesh has no \"Face Sets\" label");
  PetscCall(DMAddBoundary(d, DM_BC_ESSENTIAL, "inflow_outflow", l, 2, s3, 0, 0, NULL, (void (*)(void))bc, NULL, NULL, NULL));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Spelled out: PETSc 3.24 renamed PetscPointFunc to PetscPointFn, and this must build with both */
typedef void (*Integrand)(PetscInt, PetscInt, PetscInt, const PetscInt[], const PetscInt[], const PetscScalar[], const PetscScalar[], const PetscScalar[], const PetscInt[], const PetscInt[], const PetscScalar[], const PetscScalar[], const PetscScalar[], PetscReal, const PetscReal[], PetscInt, const PetscScalar[], PetscScalar[]);

static PetscErrorCode M3(DM d, Vec y, Integrand g, PetscReal *z)
{
  PetscDS     ds;
  PetscScalar w[1];

  PetscFunctionBeginUser;
  PetscCall(DMGetDS(d, &ds));
  PetscCall(PetscDSSetObjective(ds, 0, g));
  PetscCall(DMPlexComputeIntegralFEM(d, y, w, NULL));
  *z = PetscRealPart(w[0]);
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  DM          d;
  Vec         y, b, e;
  Mat         A;
  KSP         k;
  PetscInt    n   = 16;
  PetscReal   q = 0.01, e1, e2, e3;
  PetscScalar constants[NUM_CONSTANTS];

  PetscCall(PetscInitialize(&argc, &argv, NULL, "Darcy flow with a permeability inclusion, Q1 FEM on DMPlex\n"));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Darcy problem options", NULL);
  PetscCall(PetscOptionsInt("-n", "cells per side (a multiple of 4)", NULL, n, &n, NULL));
  PetscCall(PetscOptionsReal("-kin", "permeability inside the inclusion", NULL, q, &q, NULL));
  PetscOptionsEnd();
  PetscCheck(n >= 4 && n % 4 == 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be a positive multiple of 4, got %" PetscInt_FMT, n);
  PetscCheck(q > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-kin must be positive");
  constants[C_KIN] = q;
  constants[C_X0]  = 0.25;
  constants[C_X1]  = 0.5;
  constants[C_Y0]  = 0.5;
  constants[C_Y1]  = 0.75;

  PetscCall(M1(PETSC_COMM_WORLD, n, &d));
  PetscCall(M2(d, constants));

  /* Linear problem: r = F(0) carries the Dirichlet lift, A = dF/dp, so p = -A^{-1} r.
     The DMPlex FEM residual/Jacobian routines work on local vectors (the ones SNES
     hands them), with the essential values inserted first. */
  PetscCall(DMCreateGlobalVector(d, &y));
  PetscCall(PetscObjectSetName((PetscObject)y, "pressure"));
  PetscCall(VecDuplicate(y, &b));
  PetscCall(VecDuplicate(y, &e));
  PetscCall(DMCreateMatrix(d, &A));
  {
    Vec v1, v2;

    PetscCall(DMGetLocalVector(d, &v1));
    PetscCall(DMGetLocalVector(d, &v2));
    PetscCall(VecSet(v1, 0.0));
    PetscCall(VecSet(v2, 0.0));
    PetscCall(DMPlexSNESComputeBoundaryFEM(d, v1, NULL));
    PetscCall(DMPlexSNESComputeResidualFEM(d, v1, v2, NULL));
    PetscCall(DMPlexSNESComputeJacobianFEM(d, v1, A, A, NULL));
    PetscCall(VecSet(b, 0.0));
    PetscCall(DMLocalToGlobal(d, v2, ADD_VALUES, b));
    PetscCall(DMRestoreLocalVector(d, &v2));
    PetscCall(DMRestoreLocalVector(d, &v1));
  }
  PetscCall(MatSetOption(A, MAT_SPD, PETSC_TRUE));
  PetscCall(VecSet(y, 0.0));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &k));
  PetscCall(KSPSetOperators(k, A, A));
  PetscCall(KSPSetType(k, KSPCG));
  {
    PC pc;
    PetscCall(KSPGetPC(k, &pc));
    PetscCall(PCSetType(pc, PCGAMG));
  }
  PetscCall(KSPSetTolerances(k, 1e-12, 1e-14, PETSC_DEFAULT, 1000));
  PetscCall(KSPSetFromOptions(k));
  PetscCall(KSPSolve(k, b, e));
  {
    KSPConvergedReason reason;
    PetscCall(KSPGetConvergedReason(k, &reason));
    PetscCheck(reason > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "The linear solve did not converge: %s", KSPConvergedReasons[reason]);
  }
  PetscCall(VecAXPY(y, -1.0, e));
  PetscCall(VecViewFromOptions(y, NULL, "-p_view"));

  PetscCall(M3(d, y, o1, &e1));
  PetscCall(M3(d, y, o2, &e2));
  PetscCall(M3(d, y, o3, &e3));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "energy: %.12e\n", (double)e1));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "p_l2: %.12e\n", (double)PetscSqrtReal(e2)));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "inclusion_mean: %.12e\n", (double)(e3 / ((constants[C_X1] - constants[C_X0]) * (constants[C_Y1] - constants[C_Y0])))));

  PetscCall(KSPDestroy(&k));
  PetscCall(MatDestroy(&A));
  PetscCall(VecDestroy(&e));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&y));
  PetscCall(DMDestroy(&d));
  PetscCall(PetscFinalize());
  return 0;
}
