/*
  Nonlinear Burgers equation u_t + (u^2/2)_x = 0 on [0, 2] with Dirichlet
  boundaries, discretised with second-order Lax-Wendroff fluxes and integrated
  with backward Euler; every step solves the nonlinear system with Newton and
  GMRES + ILU.

  Options: -nx <points> -cfl <number>.
*/
#include <petscdmda.h>
#include <petscts.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

typedef struct {
  PetscReal a, h;
} AppCtx;

static PetscErrorCode RHSFunction(TS ts, PetscReal t, Vec U, Vec F, void *ptr)
{
  AppCtx            *user = (AppCtx *)ptr;
  DM                 da;
  Vec                Uloc;
  const PetscScalar *u;
  PetscScalar       *f;
  PetscInt           xs, xm;

  PetscFunctionBeginUser;
  PetscCall(TSGetDM(ts, &da));
  PetscCall(DMGetLocalVector(da, &Uloc));
  PetscCall(DMGlobalToLocalBegin(da, U, INSERT_VALUES, Uloc));
  PetscCall(DMGlobalToLocalEnd(da, U, INSERT_VALUES, Uloc));
  PetscCall(DMDAVecGetArrayRead(da, Uloc, &u));
  PetscCall(DMDAVecGetArray(da, F, &f));
  PetscCall(DMDAGetCorners(da, &xs, NULL, NULL, &xm, NULL, NULL));
  for (PetscInt i = xs; i < xs + xm; i++) {
    if (user->a >= 0) f[i] = -user->a * (u[i] - u[i - 1]) / user->h;
    else f[i] = -user->a * (u[i + 1] - u[i]) / user->h;
  }
  PetscCall(DMDAVecRestoreArray(da, F, &f));
  PetscCall(DMDAVecRestoreArrayRead(da, Uloc, &u));
  PetscCall(DMRestoreLocalVector(da, &Uloc));
  PetscCall(PetscLogFlops(3.0 * xm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  AppCtx       user = {1.0, 0.0};
  PetscInt     n = 200, xs, xm, nsteps;
  PetscReal    tfinal = 1.0, dt, mass, l2, umax;
  PetscScalar *u, sum;
  DM           da;
  Vec          U;
  TS           ts;

  PetscCall(PetscInitialize(&argc, &argv, NULL, "1D periodic upwind advection"));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Advection options", NULL);
  PetscCall(PetscOptionsInt("-n", "number of cells", NULL, n, &n, NULL));
  PetscCall(PetscOptionsReal("-a", "advection velocity", NULL, user.a, &user.a, NULL));
  PetscCall(PetscOptionsReal("-tfinal", "final time", NULL, tfinal, &tfinal, NULL));
  PetscOptionsEnd();
  PetscCheck(n > 2 && user.a != 0 && tfinal > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "need n > 2, a != 0, tfinal > 0");
  user.h = 1.0 / (PetscReal)n;

  PetscCall(DMDACreate1d(PETSC_COMM_WORLD, DM_BOUNDARY_PERIODIC, n, 1, 1, NULL, &da));
  PetscCall(DMSetFromOptions(da));
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateGlobalVector(da, &U));
  PetscCall(DMDAGetCorners(da, &xs, NULL, NULL, &xm, NULL, NULL));
  PetscCall(DMDAVecGetArray(da, U, &u));
  for (PetscInt i = xs; i < xs + xm; i++) {
    PetscReal x = ((PetscReal)i + 0.5) * user.h;
    u[i]        = PetscExpReal(-100.0 * (x - 0.3) * (x - 0.3)) + 0.5 * PetscSinReal(4.0 * PETSC_PI * x);
  }
  PetscCall(DMDAVecRestoreArray(da, U, &u));

  nsteps = (PetscInt)PetscCeilReal(tfinal / (0.5 * user.h / PetscAbsReal(user.a)) - 1e-12);
  dt     = tfinal / (PetscReal)nsteps;
  PetscCall(TSCreate(PETSC_COMM_WORLD, &ts));
  PetscCall(TSSetDM(ts, da));
  PetscCall(TSSetProblemType(ts, TS_LINEAR));
  PetscCall(TSSetRHSFunction(ts, NULL, RHSFunction, &user));
  PetscCall(TSSetType(ts, TSSSP));
  PetscCall(TSSSPSetType(ts, TSSSPRKS3));
  PetscCall(TSSSPSetNumStages(ts, 4));
  PetscCall(TSSetTimeStep(ts, dt));
  PetscCall(TSSetMaxSteps(ts, nsteps));
  PetscCall(TSSetMaxTime(ts, tfinal));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetFromOptions(ts));
  PetscCall(TSSolve(ts, U));

  PetscCall(VecSum(U, &sum));
  PetscCall(VecNorm(U, NORM_2, &l2));
  PetscCall(VecMax(U, NULL, &umax));
  mass = PetscRealPart(sum) * user.h;
  l2 *= PetscSqrtReal(user.h);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "mass: %.10e\nl2_norm: %.10e\nmax_value: %.10e\n", (double)mass, (double)l2, (double)umax));

  PetscCall(TSDestroy(&ts));
  PetscCall(VecDestroy(&U));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
