/* The performance par of robertson (docs/problems.md): the reference with Rang's
   RODASPR Rosenbrock-W method (TSROSWRODASPR: fourth order, stiffly accurate, L-stable) in place
   of TSROSW's default: much larger steps at the same tolerances (RODAS3 is about 1.2x its time). */
/*
  Robertson's stiff chemical kinetics, y(0) = (1, 0, 0), integrated to -tfinal.
  The rate constants span nine orders of magnitude, so the problem is stiff: an
  L-stable implicit integrator (Rosenbrock-W, TSROSW) with the analytic Jacobian
  and adaptive steps at tight tolerances. Any integrator can be chosen with
  -ts_type; tolerances with -ts_rtol/-ts_atol. A run that did not reach
  -tfinal (a fixed-step or explicit method that ran out of steps) is an
  error, never a printed result.
*/
#include <petscts.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

static PetscErrorCode IFunction(TS ts, PetscReal t, Vec Y, Vec Ydot, Vec F, void *ctx)
{
  const PetscScalar *y, *yd;
  PetscScalar       *f;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(Y, &y));
  PetscCall(VecGetArrayRead(Ydot, &yd));
  PetscCall(VecGetArray(F, &f));
  f[0] = yd[0] + 0.04 * y[0] - 1e4 * y[1] * y[2];
  f[1] = yd[1] - 0.04 * y[0] + 1e4 * y[1] * y[2] + 3e7 * y[1] * y[1];
  f[2] = yd[2] - 3e7 * y[1] * y[1];
  PetscCall(VecRestoreArray(F, &f));
  PetscCall(VecRestoreArrayRead(Ydot, &yd));
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode IJacobian(TS ts, PetscReal t, Vec Y, Vec Ydot, PetscReal a, Mat A, Mat B, void *ctx)
{
  const PetscScalar *y;
  PetscInt           rows[3] = {0, 1, 2};
  PetscScalar        J[3][3];

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(Y, &y));
  J[0][0] = a + 0.04;
  J[0][1] = -1e4 * y[2];
  J[0][2] = -1e4 * y[1];
  J[1][0] = -0.04;
  J[1][1] = a + 1e4 * y[2] + 6e7 * y[1];
  J[1][2] = 1e4 * y[1];
  J[2][0] = 0.0;
  J[2][1] = -6e7 * y[1];
  J[2][2] = a;
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscCall(MatSetValues(B, 3, rows, 3, rows, &J[0][0], INSERT_VALUES));
  PetscCall(MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY));
  if (A != B) {
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  TS                 ts;
  Vec                y;
  Mat                J;
  PetscReal          tfinal = 40.0;
  PetscScalar       *ya;
  const PetscScalar *yr;
  PetscMPIInt        size;
  PetscReal          tend;
  TSConvergedReason  reason;

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
  PetscCall(MatCreateSeqDense(PETSC_COMM_SELF, 3, 3, NULL, &J));

  PetscCall(TSCreate(PETSC_COMM_SELF, &ts));
  PetscCall(TSSetProblemType(ts, TS_NONLINEAR));
  PetscCall(TSSetType(ts, TSROSW));
  PetscCall(TSRosWSetType(ts, TSROSWRODASPR)); /* par: Rang's RODASPR, fourth order, stiffly accurate */
  PetscCall(TSSetIFunction(ts, NULL, IFunction, NULL));
  PetscCall(TSSetIJacobian(ts, J, J, IJacobian, NULL));
  PetscCall(TSSetMaxTime(ts, tfinal));
  PetscCall(TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetTimeStep(ts, 1e-6));
  PetscCall(TSSetMaxSteps(ts, 1000000));
  PetscCall(TSSetTolerances(ts, 1e-12, NULL, 1e-8, NULL));
  PetscCall(TSSetFromOptions(ts));
  PetscCall(TSSolve(ts, y));
  PetscCall(TSGetConvergedReason(ts, &reason));
  PetscCall(TSGetSolveTime(ts, &tend));
  PetscCheck(reason > 0 && PetscAbsReal(tend - tfinal) <= 1e-10 * tfinal, PETSC_COMM_WORLD, PETSC_ERR_NOT_CONVERGED, "TS stopped at t = %g, not at -tfinal %g (%s)", (double)tend, (double)tfinal, TSConvergedReasons[reason]);

  PetscCall(VecGetArrayRead(y, &yr));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "y_final: %.10e %.10e %.10e\n", (double)PetscRealPart(yr[0]), (double)PetscRealPart(yr[1]), (double)PetscRealPart(yr[2])));
  PetscCall(VecRestoreArrayRead(y, &yr));
  PetscCall(MatDestroy(&J));
  PetscCall(VecDestroy(&y));
  PetscCall(TSDestroy(&ts));
  PetscCall(PetscFinalize());
  return 0;
}
