# PETSc 3.26.1 on top of Spack's builtin recipe (spack/repo/spack_repo/hpcbench/repo.yaml says why).
# The checksum is PyPI's `petsc` sdist's, which is the release tarball itself: for 3.25.3 both
# the builtin recipe and PyPI give 95ce60df...ebb5 (tests/test_spack_envs.py compares 3.26.1's
# with the sdist scripts/setup.sh builds).
from spack.package import version
from spack_repo.builtin.packages.petsc.package import Petsc as BuiltinPetsc


class Petsc(BuiltinPetsc):
    version("3.26.1", sha256="a4dc46c1b4403545ac2274741ce10801366c4a9a7b2683b678d18f6663b93496")
