"""Quality (code): does the program follow PETSc's own conventions of C style?

Judged by an LLM against the rubric evaluators/prompts/code_style.v2.txt, with the
problem, the code and the execution evidence from campaign.h5 (hpcbench.judge)."""

from __future__ import annotations

from hpcbench.evaluators.base import register
from hpcbench.evaluators.judged.base import JudgedEvaluator


@register
class CodeStyle(JudgedEvaluator):
    name = "code_style"
    category = "code"
    prompt_version = "code_style.v2"
    order = 92
