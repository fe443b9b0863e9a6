"""Quality evaluators that need no judge: deterministic PETSc-convention checks."""
