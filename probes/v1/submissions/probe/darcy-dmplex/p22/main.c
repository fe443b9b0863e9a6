/*
  Steady Darcy flow -div(K grad p) = 0 on the unit square with a rectangular
  low- (or high-) permeability inclusion, discretised with continuous bilinear
  (Q1) finite elements on a DMPlex quadrilateral mesh through PetscFE/PetscDS.

  p = 1 on x = 0, p = 0 on x = 1 (essential, through DMAddBoundary), no flow
  on y = 0 and y = 1 (natural). The operator is symmetric positive definite,
  so the linear system is solved with conjugate gradients without a
  preconditioner (CG, PCNONE); any KSP/PC can be chosen from the command line.

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

/* Integrands of the three reported quantities */
static void obj_energy(PetscInt dim, PetscInt Nf, PetscInt NfAux, const PetscInt uOff[], const PetscInt uOff_x[], const PetscScalar u[], const PetscScalar u_t[], const PetscScalar u_x[], const PetscInt aOff[], const PetscInt aOff_x[], const PetscScalar a[], const PetscScalar a_t[], const PetscScalar a_x[], PetscReal t, const PetscReal x[], PetscInt numConstants, const PetscScalar constants[], PetscScalar obj[])
{
  const PetscReal K = Permeability(x, constants);
  obj[0]            = 0.0;
  for (PetscInt d = 0; d < dim; ++d) obj[0] += K * u_x[d] * u_x[d];
}

static void obj_l2(PetscInt dim, PetscInt Nf, PetscInt NfAux, const PetscInt uOff[], const PetscInt uOff_x[], const PetscScalar u[], const PetscScalar u_t[], const PetscScalar u_x[], const PetscInt aOff[], const PetscInt aOff_x[], const PetscScalar a[], const PetscScalar a_t[], const PetscScalar a_x[], PetscReal t, const PetscReal x[], PetscInt numConstants, const PetscScalar constants[], PetscScalar obj[])
{
  obj[0] = u[0] * u[0];
}

static void obj_inclusion(PetscInt dim, PetscInt Nf, PetscInt NfAux, const PetscInt uOff[], const PetscInt uOff_x[], const PetscScalar u[], const PetscScalar u_t[], const PetscScalar u_x[], const PetscInt aOff[], const PetscInt aOff_x[], const PetscScalar a[], const PetscScalar a_t[], const PetscScalar a_x[], PetscReal t, const PetscReal x[], PetscInt numConstants, const PetscScalar constants[], PetscScalar obj[])
{
  const PetscBool inside = (PetscBool)(x[0] > PetscRealPart(constants[C_X0]) && x[0] < PetscRealPart(constants[C_X1]) && x[1] > PetscRealPart(constants[C_Y0]) && x[1] < PetscRealPart(constants[C_Y1]));
  obj[0]                 = inside ? u[0] : 0.0;
}

/* p = 1 - x is right on both Dirichlet sides: 1 at x = 0 and 0 at x = 1 */
static PetscErrorCode InflowOutflow(PetscInt dim, PetscReal time, const PetscReal x[], PetscInt Nc, PetscScalar *u, void *ctx)
{
  u[0] = 1.0 - x[0];
  return PETSC_SUCCESS;
}

static PetscErrorCode CreateMesh(MPI_Comm comm, PetscInt n, DM *dm)
{
  char      faces[64];
  PetscBool set;

  PetscFunctionBeginUser;
  /* Defaults for the box mesh; -dm_plex_* options given by the user win */
  PetscCall(PetscSNPrintf(faces, sizeof(faces), "%" PetscInt_FMT ",%" PetscInt_FMT, n, n));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-dm_plex_simplex", &set));
  if (!set) PetscCall(PetscOptionsSetValue(NULL, "-dm_plex_simplex", "0"));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-dm_plex_box_faces", &set));
  if (!set) PetscCall(PetscOptionsSetValue(NULL, "-dm_plex_box_faces", faces));
  PetscCall(DMCreate(comm, dm));
  PetscCall(DMSetType(*dm, DMPLEX));
  PetscCall(DMSetFromOptions(*dm)); /* builds the box mesh and distributes it */
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
  PetscCall(DMPlexIsSimplex(dm, &simplex)); /* Q1 on the default quads; P1 if -dm_plex_simplex 1 */
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

/* Spelled out: PETSc 3.24 renamed PetscPointFunc to PetscPointFn, and this must build with both */
typedef void (*Integrand)(PetscInt, PetscInt, PetscInt, const PetscInt[], const PetscInt[], const PetscScalar[], const PetscScalar[], const PetscScalar[], const PetscInt[], const PetscInt[], const PetscScalar[], const PetscScalar[], const PetscScalar[], PetscReal, const PetscReal[], PetscInt, const PetscScalar[], PetscScalar[]);

static PetscErrorCode Integrate(DM dm, Vec p, Integrand integrand, PetscReal *value)
{
  PetscDS     ds;
  PetscScalar integral[1];

  PetscFunctionBeginUser;
  PetscCall(DMGetDS(dm, &ds));
  PetscCall(PetscDSSetObjective(ds, 0, integrand));
  PetscCall(DMPlexComputeIntegralFEM(dm, p, integral, NULL));
  *value = PetscRealPart(integral[0]);
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
  PetscCall(DMCreateMatrix(dm, &A));
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
    PetscCall(PCSetType(pc, PCNONE));
  }
  PetscCall(KSPSetTolerances(ksp, 1e-12, 1e-14, PETSC_DEFAULT, 100000));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, r, dp));
  {
    KSPConvergedReason reason;
    PetscCall(KSPGetConvergedReason(ksp, &reason));
    PetscCheck(reason > 0, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "The linear solve did not converge: %s", KSPConvergedReasons[reason]);
  }
  PetscCall(VecAXPY(p, -1.0, dp));
  PetscCall(VecViewFromOptions(p, NULL, "-p_view"));

  PetscCall(Integrate(dm, p, obj_energy, &energy));
  PetscCall(Integrate(dm, p, obj_l2, &l2sq));
  PetscCall(Integrate(dm, p, obj_inclusion, &incl));
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
