"""Quality (code): can a PETSc developer read the program and see what it does?

Judged by an LLM against the rubric evaluators/prompts/readability.v2.txt, with the
problem, the code and the execution evidence from campaign.h5 (hpcbench.judge)."""

from __future__ import annotations

from hpcbench.evaluators.base import register
from hpcbench.evaluators.judged.base import JudgedEvaluator


@register
class Readability(JudgedEvaluator):
    name = "readability"
    category = "code"
    prompt_version = "readability.v2"
    order = 91
