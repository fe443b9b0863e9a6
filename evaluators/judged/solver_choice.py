"""Quality (appropriateness): are the solvers (KSP/PC/SNES/TS/Tao) that actually ran suited to the problem?

Judged by an LLM against the rubric evaluators/prompts/solver_choice.v2.txt, with the
problem, the code and the execution evidence from campaign.h5 (hpcbench.judge)."""

from __future__ import annotations

from hpcbench.evaluators.base import register
from hpcbench.evaluators.judged.base import JudgedEvaluator


@register
class SolverChoice(JudgedEvaluator):
    name = "solver_choice"
    category = "appropriateness"
    prompt_version = "solver_choice.v2"
    order = 95
