/* Device fill x_i = sin(0.3 i) + i/N of the owned entries of a VECCUDA. */
#include <petscvec.h>

__global__ static void fill_kernel(PetscScalar *x, PetscInt rstart, PetscInt m, PetscInt n)
{
  PetscInt k = blockIdx.x * (PetscInt)blockDim.x + threadIdx.x;
  if (k < m) {
    PetscInt i = rstart + k;
    x[k]       = sin(0.3 * (PetscReal)i) + (PetscReal)i / (PetscReal)n;
  }
}

PETSC_EXTERN PetscErrorCode FillCUDA(Vec x, PetscInt rstart, PetscInt rend, PetscInt n)
{
  PetscScalar *d;
  PetscInt     m = rend - rstart;

  PetscFunctionBegin;
  PetscCall(VecCUDAGetArrayWrite(x, &d));
  if (m > 0) {
    fill_kernel<<<(unsigned)((m + 255) / 256), 256>>>(d, rstart, m, n);
    PetscCallCUDA(cudaGetLastError());
  }
  PetscCall(VecCUDARestoreArrayWrite(x, &d));
  PetscCall(PetscLogGpuFlops(4.0 * m));
  PetscFunctionReturn(PETSC_SUCCESS);
}
