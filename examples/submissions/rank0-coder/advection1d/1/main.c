/*
  Linear advection u_t + a u_x = 0 on the periodic unit interval: cell-centred
  finite volumes on a periodic DMDA, first-order upwind fluxes chosen by the
  sign of a, and SSP Runge-Kutta (third order) with a fixed step at CFL 0.5
  adjusted to land on -tfinal.

  The right-hand side is evaluated on rank 0 alone: every stage gathers the whole
  solution onto rank 0 (VecScatterCreateToZero), rank 0 computes the fluxes of all
  cells while the other ranks wait, and the result is scattered back. The answer is
  the reference's to round-off on any number of ranks; the time does not fall with
  the ranks (a sample of a scaling defect for `hpcbench sweep`).

  Options: -n <cells> -a <velocity> -tfinal <T> (and any -ts_* option).
*/
#include <petscdmda.h>
#include <petscts.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

typedef struct {
  PetscReal  a, h;
  VecScatter gather; /* whole solution onto rank 0 */
  Vec        useq, fseq;
} AppCtx;

static PetscErrorCode RHSFunction(TS ts, PetscReal t, Vec U, Vec F, void *ptr)
{
  AppCtx            *user = (AppCtx *)ptr;
  const PetscScalar *u;
  PetscScalar       *f;
  PetscInt           n;

  PetscFunctionBeginUser;
  PetscCall(VecScatterBegin(user->gather, U, user->useq, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(user->gather, U, user->useq, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetLocalSize(user->useq, &n)); /* n cells on rank 0, none elsewhere */
  PetscCall(VecGetArrayRead(user->useq, &u));
  PetscCall(VecGetArray(user->fseq, &f));
  for (PetscInt i = 0; i < n; i++) {
    if (user->a >= 0) f[i] = -user->a * (u[i] - u[(i + n - 1) % n]) / user->h;
    else f[i] = -user->a * (u[(i + 1) % n] - u[i]) / user->h;
  }
  PetscCall(VecRestoreArray(user->fseq, &f));
  PetscCall(VecRestoreArrayRead(user->useq, &u));
  PetscCall(VecScatterBegin(user->gather, user->fseq, F, INSERT_VALUES, SCATTER_REVERSE));
  PetscCall(VecScatterEnd(user->gather, user->fseq, F, INSERT_VALUES, SCATTER_REVERSE));
  PetscCall(PetscLogFlops(3.0 * n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  AppCtx       user = {1.0, 0.0, NULL, NULL, NULL};
  PetscInt     n = 200, xs, xm, nsteps;
  PetscReal    tfinal = 1.0, dt, mass, l2, umax, tend, local[4] = {0, 0, 0, 0}, global[4];
  PetscScalar *u, sum;
  TSConvergedReason reason;
  DM           da;
  Vec          U;
  TS           ts;

  PetscCall(PetscInitialize(&argc, &argv, NULL, "1D periodic upwind advection"));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Advection options", NULL);
  PetscCall(PetscOptionsInt("-n", "number of cells", NULL, n, &n, NULL));
  PetscCall(PetscOptionsReal("-a", "advection velocity", NULL, user.a, &user.a, NULL));
  PetscCall(PetscOptionsReal("-tfinal", "final time", NULL, tfinal, &tfinal, NULL));
  PetscOptionsEnd();
  PetscCheck(n > 2 && n % 4 == 0 && user.a != 0 && tfinal > 0, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "need n > 2 a multiple of 4, a != 0, tfinal > 0");
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
  PetscCall(VecScatterCreateToZero(U, &user.gather, &user.useq));
  PetscCall(VecDuplicate(user.useq, &user.fseq));

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
  PetscCall(TSGetConvergedReason(ts, &reason));
  PetscCall(TSGetSolveTime(ts, &tend));
  PetscCheck(reason > 0 && PetscAbsReal(tend - tfinal) <= 1e-10 * tfinal, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "TS stopped at t = %g, not at -tfinal %g (%s)", (double)tend, (double)tfinal, TSConvergedReasons[reason]);

  PetscCall(VecSum(U, &sum));
  PetscCall(VecNorm(U, NORM_2, &l2));
  PetscCall(VecMax(U, NULL, &umax));
  mass = PetscRealPart(sum) * user.h;
  l2 *= PetscSqrtReal(user.h);
  /* first moment and the three named cells, each from the rank that owns it */
  PetscCall(DMDAVecGetArrayRead(da, U, &u));
  for (PetscInt i = xs; i < xs + xm; i++) {
    local[0] += user.h * ((PetscReal)i + 0.5) * user.h * PetscRealPart(u[i]);
    for (PetscInt k = 1; k <= 3; k++)
      if (i == k * n / 4) local[k] = PetscRealPart(u[i]);
  }
  PetscCall(DMDAVecRestoreArrayRead(da, U, &u));
  PetscCallMPI(MPI_Allreduce(local, global, 4, MPIU_REAL, MPI_SUM, PETSC_COMM_WORLD));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "mass: %.10e\nl2_norm: %.10e\nmax_value: %.10e\n", (double)mass, (double)l2, (double)umax));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "moment: %.10e\nu_quarters: %.10e %.10e %.10e\n", (double)global[0], (double)global[1], (double)global[2], (double)global[3]));

  PetscCall(VecScatterDestroy(&user.gather));
  PetscCall(VecDestroy(&user.useq));
  PetscCall(VecDestroy(&user.fseq));
  PetscCall(TSDestroy(&ts));
  PetscCall(VecDestroy(&U));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
