"""The evaluator interface. Each evaluator is one class in one module of this
package; it declares its stage and category, and the registry finds it, so
adding an evaluator is adding a file."""

from __future__ import annotations

import importlib
import pkgutil
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from hpcbench.jobs.records import JobResult, RunResult
from hpcbench.problem import Checks, Problem
from hpcbench.submission import Submission

Stage = Literal["gate", "metric", "quality"]
# "refusal" is outside the composite (scoring.WEIGHTS has no weight for it): the refusal set's own column.
Category = Literal["correctness", "performance", "code", "appropriateness", "library", "refusal"]
STAGE_ORDER: dict[str, int] = {"gate": 0, "metric": 1, "quality": 2}


class EvalResult(BaseModel):
    evaluator: str
    stage: Stage
    category: Category
    status: Literal["scored", "unscored"] = "scored"
    score: float | None = None  # in [0, 1]; None when unscored
    passed: bool | None = None  # gates only
    confidence: float = 1.0
    rationale: str = ""
    method: str = "deterministic"
    evidence: dict[str, Any] = {}
    judge_model: str = ""
    prompt_version: str = ""
    prompt_tokens: int = 0  # judged evaluators: what the judge call cost
    completion_tokens: int = 0
    cost_usd: float = 0.0


@dataclass
class EvalContext:
    """Everything an evaluator may look at; built from campaign.h5 alone."""

    problem: Problem
    checks: Checks
    submission: Submission
    sources: dict[str, str]
    record: JobResult | None
    reference: JobResult | None = None  # the reference solution's record in this campaign
    h5_path: str = ""  # HDF5 path of the submission, for evidence pointers
    extra: dict[str, Any] = field(default_factory=dict)

    def runs(self, kind: str) -> list[RunResult]:
        return [r for r in (self.record.runs if self.record else []) if r.kind == kind]

    def c_sources(self) -> dict[str, str]:
        return {n: s for n, s in self.sources.items() if n.endswith((".c", ".h"))}


class Evaluator(ABC):
    name: ClassVar[str]
    stage: ClassVar[Stage]
    category: ClassVar[Category]
    method: ClassVar[str] = "deterministic"
    order: ClassVar[int] = 50  # within a stage: cheaper and more basic first

    @abstractmethod
    def evaluate(self, ctx: EvalContext) -> EvalResult: ...

    def result(self, score: float, rationale: str, confidence: float = 1.0,
               evidence: dict[str, Any] | None = None) -> EvalResult:
        score = min(1.0, max(0.0, float(score)))
        return EvalResult(evaluator=self.name, stage=self.stage, category=self.category, score=score,
                          passed=(score >= 1.0) if self.stage == "gate" else None, confidence=confidence,
                          rationale=rationale, method=self.method, evidence=evidence or {})

    def gate(self, passed: bool, rationale: str, confidence: float = 1.0,
             evidence: dict[str, Any] | None = None) -> EvalResult:
        return self.result(1.0 if passed else 0.0, rationale, confidence, evidence)

    def unscored(self, reason: str, evidence: dict[str, Any] | None = None) -> EvalResult:
        return EvalResult(evaluator=self.name, stage=self.stage, category=self.category, status="unscored",
                          rationale=reason, method=self.method, evidence=evidence or {}, confidence=0.0)


_REGISTRY: dict[str, type[Evaluator]] = {}


def register(cls: type[Evaluator]) -> type[Evaluator]:
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"two evaluators named {cls.name!r}")
    _REGISTRY[cls.name] = cls
    return cls


def all_evaluators() -> list[Evaluator]:
    """Import every module under hpcbench.evaluators and return one instance of
    each registered evaluator, in stage order."""
    import hpcbench.evaluators as pkg

    for mod in pkgutil.walk_packages(pkg.__path__, prefix="hpcbench.evaluators."):
        importlib.import_module(mod.name)
    return sorted((cls() for cls in _REGISTRY.values()), key=lambda e: (STAGE_ORDER[e.stage], e.order, e.name))
