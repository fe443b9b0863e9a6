/*
  Robertson's stiff chemical kinetics, y(0) = (1, 0, 0), integrated to -tfinal.
  The rate constants span nine orders of magnitude, so the problem is stiff: an
  L-stable implicit integrator (Rosenbrock-W, TSROSW) with the analytic Jacobian
  and adaptive steps at tight tolerances. Any integrator can be chosen with
  -ts_type; tolerances with -ts_rtol/-ts_atol.
*/
#include <petscts.h>

/* PETSc < 3.19 has no PETSC_SUCCESS; 0 is what it stands for */
#if PETSC_VERSION_LT(3, 19, 0)
  #define PETSC_SUCCESS 0
#endif

static PetscErrorCode G(TS s, PetscReal t, Vec Y, Vec Ydot, Vec F, void *c)
{
  const PetscScalar *y, *d;
  PetscScalar       *f;

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(Y, &y));
  PetscCall(VecGetArrayRead(Ydot, &d));
  PetscCall(VecGetArray(F, &f));
  f[0] = d[0] + 0.04 * y[0] - 1e4 * y[1] * y[2];
  f[1] = d[1] - 0.04 * y[0] + 1e4 * y[1] * y[2] + 3e7 * y[1] * y[1];
  f[2] = d[2] - 3e7 * y[1] * y[1];
  PetscCall(VecRestoreArray(F, &f));
  PetscCall(VecRestoreArrayRead(Ydot, &d));
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode H(TS s, PetscReal t, Vec Y, Vec Ydot, PetscReal a, Mat A, Mat B, void *c)
{
  const PetscScalar *y;
  PetscInt           r[3] = {0, 1, 2};
  PetscScalar        K[3][3];

  PetscFunctionBeginUser;
  PetscCall(VecGetArrayRead(Y, &y));
  K[0][0] = a + 0.04;
  K[0][1] = -1e4 * y[2];
  K[0][2] = -1e4 * y[1];
  K[1][0] = -0.04;
  K[1][1] = a + 1e4 * y[2] + 6e7 * y[1];
  K[1][2] = 1e4 * y[1];
  K[2][0] = 0.0;
  K[2][1] = -6e7 * y[1];
  K[2][2] = a;
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscCall(MatSetValues(B, 3, r, 3, r, &K[0][0], INSERT_VALUES));
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
  TS                 s;
  Vec                y;
  Mat                K;
  PetscReal          T = 40.0;
  PetscScalar       *v;
  const PetscScalar *w;
  PetscMPIInt        m;

  PetscCall(PetscInitialize(&argc, &argv, NULL, "Robertson stiff kinetics"));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &m));
  PetscCheck(m == 1, PETSC_COMM_WORLD, PETSC_ERR_WRONG_MPI_SIZE, "Three unknowns: run on one rank");
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Robertson options", NULL);
  PetscCall(PetscOptionsReal("-tfinal", "final time", NULL, T, &T, NULL));
  PetscOptionsEnd();

  PetscCall(VecCreateSeq(PETSC_COMM_SELF, 3, &y));
  PetscCall(VecGetArray(y, &v));
  v[0] = 1.0;
  v[1] = 0.0;
  v[2] = 0.0;
  PetscCall(VecRestoreArray(y, &v));
  PetscCall(MatCreateSeqDense(PETSC_COMM_SELF, 3, 3, NULL, &K));

  PetscCall(TSCreate(PETSC_COMM_SELF, &s));
  PetscCall(TSSetProblemType(s, TS_NONLINEAR));
  PetscCall(TSSetType(s, TSROSW));
  PetscCall(TSSetIFunction(s, NULL, G, NULL));
  PetscCall(TSSetIJacobian(s, K, K, H, NULL));
  PetscCall(TSSetMaxTime(s, T));
  PetscCall(TSSetExactFinalTime(s, TS_EXACTFINALTIME_MATCHSTEP));
  PetscCall(TSSetTimeStep(s, 1e-6));
  PetscCall(TSSetMaxSteps(s, 1000000));
  PetscCall(TSSetTolerances(s, 1e-12, NULL, 1e-8, NULL));
  PetscCall(TSSetFromOptions(s));
  PetscCall(TSSolve(s, y));

  PetscCall(VecGetArrayRead(y, &w));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "y_final: %.10e %.10e %.10e\n", (double)PetscRealPart(w[0]), (double)PetscRealPart(w[1]), (double)PetscRealPart(w[2])));
  PetscCall(VecRestoreArrayRead(y, &w));
  PetscCall(MatDestroy(&K));
  PetscCall(VecDestroy(&y));
  PetscCall(TSDestroy(&s));
  PetscCall(PetscFinalize());
  return 0;
}
