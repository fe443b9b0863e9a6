/*
  Robertson's stiff chemical kinetics, y(0) = (1, 0, 0), integrated to -tfinal.
  The rate constants span nine orders of magnitude. Integrated with the explicit
  fifth-order Dormand-Prince Runge-Kutta method (TSRK 5dp) with adaptive
  steps, at most 20000 of them. Any integrator can be chosen with
  -ts_type; tolerances with -ts_rtol/-ts_atol.
*/
#include <petscts.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

static PetscErrorCode RHSFunction(TS ts, PetscReal t, Vec Y, Vec F, void *ctx)
{
  const PetscScalar *y;
  PetscScalar       *f;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(Y, &y));
  PetscCall(VecGetArray(F, &f));
  f[0] = -0.04 * y[0] + 1e4 * y[1] * y[2];
  f[1] = 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] * y[1];
  f[2] = 3e7 * y[1] * y[1];
  PetscCall(VecRestoreArray(F, &f));
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  TS                 ts;
  Vec                y;
  PetscReal          tfinal = 40.0;
  PetscScalar       *ya;
  const PetscScalar *yr;
  PetscMPIInt        size;

  PetscCall(PetscInitialize(&argc, &argv, NULL, "Robertson stiff kinetics"));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCheck(size == 1, PETSC_COMM_WORLD, PETSC_ERR_WRONG_MPI_SIZE, "Three unknowns: run on one rank");
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Robertson options", NULL);
  PetscCall(PetscOptionsReal("-tfinal", "final time", NULL, tfinal, &tfinal, NULL));
  PetscOptionsEnd();

  PetscCall(VecCreateSeq(PETSC_COMM_SELF, 3, &y));
  PetscCall(VecGetArray(y, &ya));
  ya[0] = 1.0;
  ya[1] = 0.0;
  ya[2] = 0.0;
  PetscCall(VecRestoreArray(y, &ya));

  PetscCall(TSCreate(PETSC_COMM_SELF, &ts));
  PetscCall(TSSetProblemType(ts, TS_NONLINEAR));
  PetscCall(TSSetType(ts, TSRK));
  PetscCall(TSRKSetType(ts, TSRK5DP));
  PetscCall(TSSetRHSFunction(ts, NULL, RHSFunction, NULL));
  PetscCall(TSSetMaxTime(ts, tfinal));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetTimeStep(ts, 1e-6));
  PetscCall(TSSetMaxSteps(ts, 20000));
  PetscCall(TSSetTolerances(ts, 1e-12, NULL, 1e-8, NULL));
  PetscCall(TSSetFromOptions(ts));
  PetscCall(TSSolve(ts, y));

  PetscCall(VecGetArrayRead(y, &yr));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "y_final: %.10e %.10e %.10e\n", (double)PetscRealPart(yr[0]), (double)PetscRealPart(yr[1]), (double)PetscRealPart(yr[2])));
  PetscCall(VecRestoreArrayRead(y, &yr));
  PetscCall(VecDestroy(&y));
  PetscCall(TSDestroy(&ts));
  PetscCall(PetscFinalize());
  return 0;
}
