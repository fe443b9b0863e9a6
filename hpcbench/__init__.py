"""hpcbench: build, run and score AI-written PETSc programs on HPC clusters."""

__version__ = "0.1.0"
