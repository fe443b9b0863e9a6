"""The evaluator interface. Each evaluator is one class in one module of this
package; it declares its stage and category, and the registry finds it, so
adding an evaluator is adding a file (or an installed package with an entry
point in the `hpcbench.evaluators` group, see hpcbench/registry.py)."""

from __future__ import annotations

import importlib
import pkgutil
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, Field

from hpcbench.errors import HpcbenchError
from hpcbench.evaluators.categories import Category
from hpcbench.jobs.records import JobResult, RunResult
from hpcbench.judge.task import JudgeTask
from hpcbench.problem import Checks, Problem, language_of
from hpcbench.registry import Registry
from hpcbench.submission import C_SUFFIXES, Submission

if TYPE_CHECKING:  # only for the context's field types: the judge package imports this module
    from hpcbench.judge.config import JudgeConfig
    from hpcbench.petsc_headers import PetscApi

Stage = Literal["gate", "metric", "quality"]
STAGE_ORDER: dict[str, int] = {"gate": 0, "metric": 1, "quality": 2}


class EvalResult(BaseModel):
    """What every evaluator returns. A judged evaluator returns its prompt in `pending`
    (unscored until answered): scoring asks the judge for every submission at once, then puts
    the evaluator's result for the answer in its place (evaluators/judged/base.py)."""

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
    pending: JudgeTask | None = Field(default=None, exclude=True)  # the judge call to make; never stored


@dataclass(frozen=True)
class ScalingPoint:
    """One point of a sweep of this submission (hpcbench/sweep/analysis.py's PointRow, as the
    scoring stage hands it over: the evaluators never read a sweep themselves)."""

    sweep: str  # the campaign.h5 holding the sweep
    path: str  # /sweep/points/... : the row, for evidence pointers and `hpcbench explain`
    mode: str  # strong | weak
    size: int
    ranks: int
    base_ranks: int
    status: str  # ok | crashed | timeout | wrong answer | not run
    oversubscribed: bool
    rel_clean: bool  # every time behind rel_efficiency clean (this point, the reference's, both bases)
    efficiency: float
    ref_efficiency: float
    rel_efficiency: float


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
    petsc_api: PetscApi | None = None  # the PETSc API scanned at planning (campaign.h5 snapshot)
    judge: JudgeConfig | None = None  # None: the judged evaluators are unscored
    scaling: list[ScalingPoint] = field(default_factory=list)  # this program's sweep points, if swept
    # run index -> why, for the record's runs that shared a core with another build or run of the
    # campaign while they ran (hpcbench/score/contention.py): not clean timings
    contended: dict[int, str] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)  # scoring options (`hpcbench score --time-metric`)
    # Results of the evaluators that ran before this one (scoring fills it in stage order):
    # the judges show them as evidence.
    results: dict[str, EvalResult] = field(default_factory=dict)
    # case -> its arguments (published and drawn at planning; store/read.read_case_args): checks
    # whose tolerance scales with a case's option read them
    case_args: dict[str, list[str]] = field(default_factory=dict)

    def runs(self, kind: str) -> list[RunResult]:
        return [r for r in (self.record.runs if self.record else []) if r.kind == kind]

    def c_sources(self) -> dict[str, str]:
        """Every C-family source file the submission holds, whatever its suffix (.c, .h, .cu, .cxx,
        .hpp, .cuh): main.c can #include any of them, so the scans read them all."""
        return {n: s for n, s in self.sources.items() if n.endswith(C_SUFFIXES)}

    def py_sources(self) -> dict[str, str]:
        """Every Python file of a petsc4py submission."""
        return {n: s for n, s in self.sources.items() if n.endswith(".py")}

    @property
    def language(self) -> str:
        """"python" for a petsc4py submission, else "c" (problem.language_of)."""
        return language_of(self.submission.entry)


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


def _import_tree() -> None:
    import hpcbench.evaluators as pkg

    for mod in pkgutil.walk_packages(pkg.__path__, prefix="hpcbench.evaluators."):
        importlib.import_module(mod.name)


EVALUATORS: Registry[type[Evaluator]] = Registry("evaluator", "hpcbench.evaluators", _import_tree)


def register(cls: type[Evaluator]) -> type[Evaluator]:
    """Class decorator: an evaluator of this package, registered under its `name`."""
    EVALUATORS.add(cls.name, cls)
    return cls


def all_evaluators() -> list[Evaluator]:
    """One instance of every evaluator (this package's modules, then installed plugins), in stage order."""
    found = EVALUATORS.all()
    categories = get_args(Category)
    for key, cls in found.items():
        if not (isinstance(cls, type) and issubclass(cls, Evaluator)) or cls.name != key \
                or cls.stage not in STAGE_ORDER or cls.category not in categories:
            raise HpcbenchError(f"evaluator {key!r} ({cls!r}): must be an Evaluator subclass whose `name` is "
                                f"{key!r}, `stage` one of {', '.join(STAGE_ORDER)} and `category` one of "
                                f"{', '.join(categories)}")
    return sorted((cls() for cls in found.values()), key=lambda e: (STAGE_ORDER[e.stage], e.order, e.name))
