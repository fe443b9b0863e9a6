/* Device fill x_i = sin(0.3 i) + i/N of the owned entries of a VECKOKKOS. */
#include <petscvec_kokkos.hpp>
#include <Kokkos_Core.hpp>

PETSC_EXTERN PetscErrorCode FillKokkos(Vec x, PetscInt rstart, PetscInt rend, PetscInt n)
{
  PetscScalarKokkosView v;

  PetscFunctionBegin;
  PetscCall(VecGetKokkosViewWrite(x, &v));
  Kokkos::parallel_for(
    "fill", Kokkos::RangePolicy<>(0, rend - rstart), KOKKOS_LAMBDA(const PetscInt k) {
      const PetscInt i = rstart + k;
      v(k)             = Kokkos::sin(0.3 * (PetscReal)i) + (PetscReal)i / (PetscReal)n;
    });
  PetscCall(VecRestoreKokkosViewWrite(x, &v));
  PetscFunctionReturn(PETSC_SUCCESS);
}
