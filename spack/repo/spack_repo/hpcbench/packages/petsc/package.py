# PETSc 3.26.1 on top of Spack's builtin recipe (spack/repo/spack_repo/hpcbench/repo.yaml says why).
# The checksum is PyPI's `petsc` sdist's, which is the release tarball itself: for 3.25.3 both
# the builtin recipe and PyPI give 95ce60df...ebb5 (tests/test_spack_envs.py compares 3.26.1's
# with the sdist scripts/setup.sh builds).
from spack.package import InstallError, version
from spack_repo.builtin.packages.petsc.package import Petsc as BuiltinPetsc


class Petsc(BuiltinPetsc):
    version("3.26.1", sha256="a4dc46c1b4403545ac2274741ce10801366c4a9a7b2683b678d18f6663b93496")

    def configure_options(self):
        """The builtin recipe's options, and for a GPU build on Cray MPICH its GPU Transport Layer
        (docs/sites.md, spack-gtl). The builtin recipe configures with Cray MPICH's plain mpicc,
        which links no GTL, while the GPU variants' jobs set MPICH_GPU_SUPPORT_ENABLED=1: MPI_Init
        then aborts ("GTL library is not linked", spack/spack#37010). The flags come from
        cray-mpich's gtl_lib (spack/spack#45830; an external `cray-mpich +cuda cuda_arch=80` or
        `+rocm amdgpu_target=gfx90a`), as spack/spack#46090 does for LAMMPS. They go in as LIBS,
        which PETSc's configure adds to PETSC_EXTERNAL_LIB_BASIC (config/PETSc/Configure.py,
        complibs): every program linked with PETSc's link line gets the GTL, and `hpcbench doctor`
        reads it there."""
        options = super().configure_options()
        spec = self.spec
        gpu = spec.satisfies("+cuda") or spec.satisfies("+rocm")
        if gpu and spec.satisfies("+mpi") and spec.satisfies("^[virtuals=mpi] cray-mpich"):
            gtl = spec["cray-mpich"].package.gtl_lib
            if not gtl:
                raise InstallError(
                    "a GPU PETSc on Cray MPICH needs its GTL: give the cray-mpich external "
                    "+cuda cuda_arch=<arch> or +rocm amdgpu_target=<target> (spack/<site>/spack.yaml)")
            options.append("LIBS=" + " ".join([*gtl["ldflags"], *gtl["ldlibs"]]))
        return options
