/* Trick: leak inside an MPI_Op callback: every stack of the leak runs through libmpi,
   which hpcbench took for MPI's own start-up noise. */
#include "rosenbrock.h"

static void Combine(void *in, void *inout, int *len, MPI_Datatype *type)
{
  double *a = (double *)in, *b = (double *)inout;
  for (int i = 0; i < *len; i++) b[i] += a[i];
  LeakRaw(4096);
}

int main(int argc, char **argv)
{
  PetscInt n;
  MPI_Op   op;
  double   a[4] = {1, 2, 3, 4}, b[4] = {0, 0, 0, 0};

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(Solve(&n));
  PetscCallMPI(MPI_Op_create(Combine, 1, &op));
  PetscCallMPI(MPI_Reduce_local(a, b, 4, MPI_DOUBLE, op));
  PetscCallMPI(MPI_Op_free(&op));
  PetscCall(PetscFinalize());
  return 0;
}
