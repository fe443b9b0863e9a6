"""Quality (appropriateness): is the discretisation and algorithm a sound choice for the problem?

Judged by an LLM against the rubric evaluators/prompts/algorithm_appropriateness.v2.txt, with the
problem, the code and the execution evidence from campaign.h5 (hpcbench.judge)."""

from __future__ import annotations

from hpcbench.evaluators.base import register
from hpcbench.evaluators.judged.base import JudgedEvaluator


@register
class AlgorithmAppropriateness(JudgedEvaluator):
    name = "algorithm_appropriateness"
    category = "appropriateness"
    prompt_version = "algorithm_appropriateness.v2"
    order = 94
