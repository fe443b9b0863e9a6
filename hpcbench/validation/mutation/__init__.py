"""Generated mutants of the problems' references for `hpcbench validate-checks`:
operators over the C syntax tree (operators), the PETSc name families they swap
(names), the seeded sample and its submission trees (generate), what became of each
mutant (verdict); validation/report.py puts them in the report."""
