"""The score categories and their weights in the composite, declared once: the evaluator
interface (evaluators/base.py), scoring and the report read them from here."""

from __future__ import annotations

from typing import Literal, get_args

# "refusal" is outside the composite (it has no weight): the refusal set's own column. So is
# "integrity" (the prompt-injection scan): its verdict acts on the judged dimensions instead.
Category = Literal["correctness", "performance", "code", "appropriateness", "library", "refusal", "integrity"]

WEIGHTS: dict[str, float] = {"correctness": 0.35, "performance": 0.15, "code": 0.15,
                             "appropriateness": 0.15, "library": 0.20}

# The composite's categories, in the order reports show them.
CATEGORIES: list[str] = list(WEIGHTS)

if not set(WEIGHTS) < set(get_args(Category)):  # a weight for a category no evaluator can declare
    raise ValueError(f"evaluators/categories.py: WEIGHTS names {sorted(set(WEIGHTS) - set(get_args(Category)))}, "
                     "which Category does not list")
