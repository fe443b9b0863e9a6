"""Quality (code): do comments say what is solved, how, and why the choices were made?

Judged by an LLM against the rubric evaluators/prompts/documentation.v2.txt, with the
problem, the code and the execution evidence from campaign.h5 (hpcbench.judge)."""

from __future__ import annotations

from hpcbench.evaluators.base import register
from hpcbench.evaluators.judged.base import JudgedEvaluator


@register
class Documentation(JudgedEvaluator):
    name = "documentation"
    category = "code"
    prompt_version = "documentation.v2"
    order = 93
