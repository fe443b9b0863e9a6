# petsc4py 3.26.1 on top of Spack's builtin recipe (PyPI's sdist checksum; for 3.25.3 the builtin
# recipe and PyPI agree: 4bed8d50...9963).
from spack.package import version
from spack_repo.builtin.packages.py_petsc4py.package import PyPetsc4py as BuiltinPyPetsc4py


class PyPetsc4py(BuiltinPyPetsc4py):
    version("3.26.1", sha256="66a5c31de33293faefa72d6edc5abad5586f438c28842804de0044d8763087a2")
