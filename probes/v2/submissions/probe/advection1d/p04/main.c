/*
  Linear advection u_t + a u_x = 0 on the periodic unit interval: cell-centred
  finite volumes on a periodic DMDA, first-order upwind fluxes chosen by the
  sign of a, and a strong-stability-preserving Runge-Kutta method (TSSSP,
  third order) with a fixed step at CFL 0.5 adjusted to land on -tfinal.

  Options: -n <cells> -a <velocity> -tfinal <T> (and any -ts_* option).
*/
#include <petscdmda.h>
#include <petscts.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

typedef struct {
  PetscReal a, h;
} Q;

static PetscErrorCode R(TS S, PetscReal t, Vec U, Vec F, void *v)
{
  Q            *c = (Q *)v;
  DM                 d;
  Vec                L;
  const PetscScalar *u;
  PetscScalar       *f;
  PetscInt           s, m;

  PetscFunctionBeginUser;
  PetscCall(TSGetDM(S, &d));
  PetscCall(DMGetLocalVector(d, &L));
  PetscCall(DMGlobalToLocalBegin(d, U, INSERT_VALUES, L));
  PetscCall(DMGlobalToLocalEnd(d, U, INSERT_VALUES, L));
  PetscCall(DMDAVecGetArrayRead(d, L, &u));
  PetscCall(DMDAVecGetArray(d, F, &f));
  PetscCall(DMDAGetCorners(d, &s, NULL, NULL, &m, NULL, NULL));
  for (PetscInt i = s; i < s + m; i++) {
    if (c->a >= 0) f[i] = -c->a * (u[i] - u[i - 1]) / c->h;
    else f[i] = -c->a * (u[i + 1] - u[i]) / c->h;
  }
  PetscCall(DMDAVecRestoreArray(d, F, &f));
  PetscCall(DMDAVecRestoreArrayRead(d, L, &u));
  PetscCall(DMRestoreLocalVector(d, &L));
  PetscCall(PetscLogFlops(3.0 * m));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  Q       c = {1.0, 0.0};
  PetscInt     n = 200, s, m, k;
  PetscReal    T = 1.0, dt, M, e, z;
  PetscScalar *u, w;
  DM           d;
  Vec          U;
  TS           S;

  PetscCall(PetscInitialize(&argc, &argv, NULL, "1D periodic upwind advection"));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Advection options", NULL);
  PetscCall(PetscOptionsInt("-n", "number of cells", NULL, n, &n, NULL));
  PetscCall(PetscOptionsReal("-a", "advection velocity", NULL, c.a, &c.a, NULL));
  PetscCall(PetscOptionsReal("-tfinal", "final time", NULL, T, &T, NULL));
  PetscOptionsEnd();
  PetscCheck(n > 2 && c.a != 0 && T > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "need n > 2, a != 0, tfinal > 0");
  c.h = 1.0 / (PetscReal)n;

  PetscCall(DMDACreate1d(PETSC_COMM_WORLD, DM_BOUNDARY_PERIODIC, n, 1, 1, NULL, &d));
  PetscCall(DMSetFromOptions(d));
  PetscCall(DMSetUp(d));
  PetscCall(DMCreateGlobalVector(d, &U));
  PetscCall(DMDAGetCorners(d, &s, NULL, NULL, &m, NULL, NULL));
  PetscCall(DMDAVecGetArray(d, U, &u));
  for (PetscInt i = s; i < s + m; i++) {
    PetscReal x = ((PetscReal)i + 0.5) * c.h;
    u[i]        = PetscExpReal(-100.0 * (x - 0.3) * (x - 0.3)) + 0.5 * PetscSinReal(4.0 * PETSC_PI * x);
  }
  PetscCall(DMDAVecRestoreArray(d, U, &u));

  k = (PetscInt)PetscCeilReal(T / (0.5 * c.h / PetscAbsReal(c.a)) - 1e-12);
  dt     = T / (PetscReal)k;
  PetscCall(TSCreate(PETSC_COMM_WORLD, &S));
  PetscCall(TSSetDM(S, d));
  PetscCall(TSSetProblemType(S, TS_LINEAR));
  PetscCall(TSSetRHSFunction(S, NULL, R, &c));
  PetscCall(TSSetType(S, TSSSP));
  PetscCall(TSSSPSetType(S, TSSSPRKS3));
  PetscCall(TSSSPSetNumStages(S, 4));
  PetscCall(TSSetTimeStep(S, dt));
  PetscCall(TSSetMaxSteps(S, k));
  PetscCall(TSSetMaxTime(S, T));
  PetscCall(TSSetExactFinalTime(S, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetFromOptions(S));
  PetscCall(TSSolve(S, U));

  PetscCall(VecSum(U, &w));
  PetscCall(VecNorm(U, NORM_2, &e));
  PetscCall(VecMax(U, NULL, &z));
  M = PetscRealPart(w) * c.h;
  e *= PetscSqrtReal(c.h);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "mass: %.10e\nl2_norm: %.10e\nmax_value: %.10e\n", (double)M, (double)e, (double)z));

  PetscCall(TSDestroy(&S));
  PetscCall(VecDestroy(&U));
  PetscCall(DMDestroy(&d));
  PetscCall(PetscFinalize());
  return 0;
}
