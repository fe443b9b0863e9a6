"""Quality (library): does the program use PETSc as PETSc's developers recommend?

Judged by an LLM against the rubric evaluators/prompts/petsc_best_practices.v2.txt, with the
problem, the code and the execution evidence from campaign.h5 (hpcbench.judge)."""

from __future__ import annotations

from hpcbench.evaluators.base import register
from hpcbench.evaluators.judged.base import JudgedEvaluator


@register
class PetscBestPractices(JudgedEvaluator):
    name = "petsc_best_practices"
    category = "library"
    prompt_version = "petsc_best_practices.v2"
    order = 96
