"""Problem folders: the public `problem.json`, the hidden `checks.json`, the reference.

A problem folder is `problems/<id>/` with
- `problem.json`: everything an agent may see (validated by `Problem`),
- `checks.json`: hidden checks applied at scoring time (validated by `Checks`),
- `reference/`: an expert solution with its own `submission.json`.
- `par/` (optional, hidden): the performance par, the fastest valid program known for the
  performance case, with its own `submission.json`; execution_time scores against its time.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hpcbench.errors import ConfigError, format_validation_error
from hpcbench.strict import FrozenStrict

ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

# Features a problem may require of the PETSc build or site; checked against the
# variant's capabilities when planning (see hpcbench.petsc_env.capabilities).
Requirement = Literal["tao", "ts", "dmplex", "dmstag", "petscfe", "cuda", "kokkos", "hip", "sycl"]


class OutputQuantity(FrozenStrict):
    """One line of the output contract: rank 0 prints `name: v1 v2 ...`."""

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")]
    description: str


# Cases drawn at planning (hpcbench/plan/held_out.py) are named HELD_OUT_PREFIX + k; a check
# naming HELD_OUT_CASES in its `cases` applies to every one of them, one naming ALL_CASES to
# every published case and every held-out one (a requirement the task states for every input,
# an iteration bound: issue 35).
HELD_OUT_PREFIX = "held-out-"
HELD_OUT_CASES = "@held_out"
ALL_CASES = "@all"


def is_held_out(case: str) -> bool:
    return case.startswith(HELD_OUT_PREFIX)


def _each_once(ranks: list[int]) -> list[int]:
    # a job times a case's rank counts as one group keyed by rank count (jobs/job.py by_case)
    if len(ranks) != len(set(ranks)):
        raise ValueError(f"a rank count appears twice ({ranks})")
    return ranks


# The rank counts a case (or the held-out cases) runs at, each once.
CaseRanks = Annotated[list[Annotated[int, Field(ge=1, le=4096)]], Field(min_length=1), AfterValidator(_each_once)]


class TestCase(FrozenStrict):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")]
    args: list[str] = []
    ranks: CaseRanks = [1]
    time_limit_s: Annotated[float, Field(gt=0, le=86400)] = 60.0
    description: str = ""
    # The nodes its runs span on a batch site (a sweep point's `--nodes`); 0: the fewest that hold them.
    nodes: Annotated[int, Field(ge=0, le=65536)] = 0


class Scaling(FrozenStrict):
    """How `hpcbench sweep` scales the problem (docs/sweeps.md): the size option it varies,
    the sizes and rank counts it tries by default, what it may not go beyond, how the size
    grows with the ranks for weak scaling, and which outputs must stay right at every point."""

    option: str
    values: Annotated[list[str], Field(min_length=1)]
    ranks: list[Annotated[int, Field(ge=1, le=65536)]] = []
    args: list[str] = []  # other options of every sweep run (e.g. a fixed final time)
    # weak scaling: size = base * ranks**weak_exponent, rounded to a multiple of `multiple_of`
    # (1/d keeps the work per rank for a d-dimensional grid and a fixed number of steps;
    # 1/(d+1) where the step count grows with the grid, as under a CFL limit)
    weak_exponent: Annotated[float, Field(gt=0, le=1)] = 1.0
    multiple_of: Annotated[int, Field(ge=1)] = 1
    min_value: Annotated[int, Field(ge=1)] = 1  # sizes the program accepts
    max_value: Annotated[int, Field(ge=1)] = 1 << 30
    dims: Annotated[int, Field(ge=1, le=3)] = 1  # the grid has size**dims cells
    min_per_rank: Annotated[float, Field(gt=0)] = 1.0  # fewer cells per rank (size**dims/ranks) is refused
    max_ranks: Annotated[int, Field(ge=1, le=1 << 20)] = 65536
    outputs: list[str] = []  # quantities that must agree with the reference's run at the same point
    rtol: Annotated[float, Field(gt=0)] = 1e-6  # that agreement, where no compare check names the quantity
    time_limit_s: Annotated[float, Field(gt=0, le=86400)] = 120.0

    @model_validator(mode="after")
    def _sizes(self) -> Scaling:
        for v in self.values:
            if not v.isdigit() or not self.min_value <= int(v) <= self.max_value or int(v) % self.multiple_of:
                raise ValueError(f"values: {v!r} is not an integer in [{self.min_value}, {self.max_value}] "
                                 f"and a multiple of {self.multiple_of}")
        if any(r > self.max_ranks for r in self.ranks):
            raise ValueError(f"ranks: above max_ranks ({self.max_ranks})")
        return self


OPTION = r"^-[a-z][a-z0-9_]*$"


class HeldOutParam(FrozenStrict):
    """One option of a held-out case, drawn at planning from [min, max]: an integer (a multiple of
    `multiple_of`) or a real rounded to `digits` significant digits; `log`: log-uniform;
    `either_sign`: a magnitude in [min, max] with a random sign; `default`: the value the task
    states a program uses where the option is not given (a case that leaves it unset is at it);
    `edge`: the width of the low and high bands a stratified held-out draw takes a value from
    (hpcbench/plan/param_draw.py), as a fraction of the range on the scale it is drawn on."""

    option: Annotated[str, Field(pattern=OPTION)]
    kind: Literal["int", "real"]
    min: float
    max: float
    multiple_of: Annotated[int, Field(ge=1)] = 1
    log: bool = False
    either_sign: bool = False
    digits: Annotated[int, Field(ge=1, le=12)] = 4
    default: float | None = None
    edge: Annotated[float, Field(gt=0, lt=0.5)] = 0.1

    @model_validator(mode="after")
    def _range(self) -> HeldOutParam:
        if self.min > self.max:
            raise ValueError(f"{self.option}: min ({self.min:g}) is above max ({self.max:g})")
        if (self.log or self.either_sign) and self.min <= 0:
            raise ValueError(f"{self.option}: log and either_sign need min > 0")
        if self.kind == "int":
            if self.either_sign or not (self.min.is_integer() and self.max.is_integer()):
                raise ValueError(f"{self.option}: an int range needs integer min and max and no either_sign")
            if math.floor(self.max / self.multiple_of) < math.ceil(self.min / self.multiple_of):
                raise ValueError(f"{self.option}: no multiple of {self.multiple_of} in [{self.min:g}, {self.max:g}]")
        elif self.multiple_of != 1:
            raise ValueError(f"{self.option}: multiple_of is for int options")
        return self


# From this many held-out cases on, the draw is stratified (hpcbench/plan/held_out.py): every
# param's low band, high band and interior each appear, and each case runs at one of `ranks`.
STRATIFIED_FROM = 3


class HeldOut(FrozenStrict):
    """Held-out cases: `cases` of them are drawn per campaign at planning (seeded, recorded in the
    campaign's snapshot, never in problem.json), each with `args` and one value per param, run by
    every submission and the reference. The ranges are public: the task says the program must
    accept these options, and the ranges say for which values.

    With `cases` >= STRATIFIED_FROM the draw is stratified: each param takes its low band, its
    high band and its interior in one case each (the further cases interior), and each case runs
    at one rank count of `ranks`, every one of them used. With fewer, each case is drawn uniformly
    and runs at every rank count of `ranks` (the draws before issue 35)."""

    cases: Annotated[int, Field(ge=1, le=8)] = 1
    ranks: CaseRanks = [1]
    time_limit_s: Annotated[float, Field(gt=0, le=86400)] = 60.0
    args: list[str] = []
    params: Annotated[list[HeldOutParam], Field(min_length=1)]

    @model_validator(mode="after")
    def _distinct(self) -> HeldOut:
        names = [p.option for p in self.params]
        if len(set(names)) != len(names):
            raise ValueError(f"params: an option appears twice ({names})")
        fixed = [o for o in names if o in self.args]
        if fixed:
            raise ValueError(f"params: {', '.join(fixed)} also in args")
        if self.stratified and self.cases < len(self.ranks):
            raise ValueError(f"cases: {self.cases} stratified cases cannot each run at one of {len(self.ranks)} "
                             f"rank counts {self.ranks} and use them all")
        return self

    @property
    def stratified(self) -> bool:
        return self.cases >= STRATIFIED_FROM


Ratios = tuple[float, float, float, float]


class Performance(FrozenStrict):
    """The case execution_time and peak_memory are measured on (docs/problems.md): big enough
    that the reference's run takes about 0.5 to 2 s on one core of a workstation, run `repeats`
    times by the submission and the reference alternately on the same cores. Where the problem
    has a par (ProblemBundle.par_dir) it is timed in the same rotation and the score is against
    it (evaluators/metrics/execution_time.py par_score; `max_repeats` rounds at most while the
    repeats are too noisy to decide); without one, `thresholds` are time ratios (submission /
    reference) scored 1.0, 0.8, 0.6 and 0.2, and beyond the last the score falls as
    0.2 x t4 / ratio. A site runs a bigger case through its `performance_args`.

    `params`: options of `args` (the nominal case) whose values are drawn at planning from the
    campaign's held-out seed (hpcbench/plan/perf_draw.py), replacing theirs in `args` (or in a
    site's `performance_args`, appended where it lacks them): the case timed is never a
    published one, so its answers cannot be printed from known ones (docs/security.md).
    Ranges that change the answer but not the cost (a coefficient rather than a size).

    `tolerance_factor`: how many times the compare checks' tolerances the timed answers may
    differ from the reference's at the drawn arguments (evaluators/metrics/execution_time.py
    answers_differ). The case lies outside the range the checks were set for, so valid programs
    differ there by more; set per problem from bench/perf_tolerance.py: above what valid
    programs need, below what the nominal case's answer (or another draw's) is off by. Below 1
    where the case lies where valid programs agree far more closely than at the checks' cases
    (advection1d's -n 200000: an answer that barely moves over the drawn range must still be
    the drawn value's, not a neighbouring one's from a table)."""

    args: list[str]
    params: list[HeldOutParam] = []
    ranks: Annotated[list[Annotated[int, Field(ge=1, le=4096)]], Field(min_length=1)] = [1]
    repeats: Annotated[int, Field(ge=3, le=50)] = 5
    # with a par: rounds at most, where the repeats spread too much to decide (jobs/perf.py)
    max_repeats: Annotated[int, Field(ge=3, le=50)] = 9
    # the reference is the fastest valid program known (no par/ needed): execution_time scores
    # against its time on par's scale rather than on `thresholds`
    reference_is_par: bool = False
    time_limit_s: Annotated[float, Field(gt=0, le=86400)] = 60.0
    # 100 where a problem has not measured its own; below 1 only where bench/perf_tolerance.py
    # shows valid programs need far less there (the docstring)
    tolerance_factor: Annotated[float, Field(ge=1e-6, le=1e6, allow_inf_nan=False)] = 100.0
    thresholds: Ratios = (1.25, 2.0, 4.0, 8.0)
    memory_thresholds: Ratios = (1.5, 3.0, 6.0, 12.0)

    @field_validator("thresholds", "memory_thresholds")
    @classmethod
    def _increasing(cls, v: Ratios) -> Ratios:
        if not (1.0 <= v[0] and all(a < b for a, b in zip(v, v[1:], strict=False))):
            raise ValueError("must be four increasing ratios, the first at least 1")
        return v

    @model_validator(mode="after")
    def _drawn_in_args(self) -> Performance:
        names = [p.option for p in self.params]
        if len(set(names)) != len(names):
            raise ValueError(f"params: an option appears twice ({names})")
        # args is the nominal case, published: each drawn option's nominal value is there, so a
        # draw that would repeat it can be told (plan/perf_draw.py published_as)
        missing = [o for o in names if o not in self.args]
        if missing:
            raise ValueError(f"params: {', '.join(missing)} not in args (give each drawn option its nominal "
                             "value there; the draw replaces it)")
        return self


def language_of(entry: str) -> str:
    """"python" for a petsc4py program (a `.py` entry), else "c" (C, CUDA or Kokkos sources)."""
    return "python" if entry.endswith(".py") else "c"


class Problem(FrozenStrict):
    id: str
    title: str
    modules: Annotated[list[str], Field(min_length=1)]
    difficulty: Literal["easy", "medium", "hard"]
    language: Literal["c", "cuda", "kokkos"] = "c"
    # What a submission may be written in: "c" is the problem's own `language` above (C, CUDA or
    # Kokkos sources), "python" a petsc4py program (hpcbench/submission.py language_of,
    # docs/python.md). The task text given to a generating agent names them (task_for).
    languages: Annotated[list[Literal["c", "python"]], Field(min_length=1)] = ["c"]
    task: Annotated[str, Field(min_length=20)]
    output: list[OutputQuantity] = []
    requires: list[Requirement] = []
    min_petsc_version: str = "3.18"
    cases: Annotated[list[TestCase], Field(min_length=1)]
    # The paper's absolute thresholds (seconds), kept for comparison with published figures:
    # `hpcbench score --time-metric absolute` scores every case's time against them.
    runtime_thresholds_s: tuple[float, float, float, float] = (0.5, 1.0, 2.0, 4.0)
    performance: Performance | None = None
    scaling: Scaling | None = None
    # What a submission may ask (hpcbench/agent_options.py): option names or prefixes ("-tao_ls_*")
    # for its `args`, and the rank counts for its `ranks` ("any"; empty: those of the cases).
    agent_options: list[str] = []
    allowed_ranks: list[Annotated[int, Field(ge=1, le=65536)]] | Literal["any"] = []
    held_out: HeldOut | None = None

    @field_validator("languages")
    @classmethod
    def _languages(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"a language appears twice ({v})")
        return v

    def task_for(self, language: str) -> str:
        """The task text as an agent writing in `language` is given it: the C task's own words
        where it says "in C", petsc4py's where Python is asked."""
        if language == "python":
            return re.sub(r"\bprogram in C\b", "program in Python with petsc4py", self.task, count=1)
        return self.task

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not ID_RE.match(v):
            raise ValueError("must be lowercase letters, digits, '-' or '_' (at most 64)")
        return v

    @field_validator("min_petsc_version")
    @classmethod
    def _version(cls, v: str) -> str:
        if not re.fullmatch(r"\d+\.\d+(\.\d+)?", v):
            raise ValueError("must look like 3.20 or 3.20.1")
        return v

    @field_validator("runtime_thresholds_s")
    @classmethod
    def _thresholds(cls, v: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
        if not all(0 < a < b for a, b in zip(v, v[1:], strict=False)) or v[0] <= 0:
            raise ValueError("must be four increasing positive seconds t1 < t2 < t3 < t4")
        return v

    @field_validator("agent_options")
    @classmethod
    def _agent_options(cls, v: list[str]) -> list[str]:
        from hpcbench.agent_options import check_pattern

        for i, pattern in enumerate(v):
            why = check_pattern(pattern)
            if why:
                raise ValueError(f"entry {i}: {why}")
        return v

    @model_validator(mode="after")
    def _python_task(self) -> Problem:
        if "python" in self.languages and self.task_for("python") == self.task:
            raise ValueError("languages: 'python' needs a task that says 'program in C' (the words a Python "
                             "agent is given instead: task_for)")
        return self

    @model_validator(mode="after")
    def _unique_cases(self) -> Problem:
        names = [c.name for c in self.cases]
        if len(names) != len(set(names)):
            raise ValueError(f"case names must be unique, got {names}")
        if any(is_held_out(n) for n in names):
            raise ValueError(f"case names starting with {HELD_OUT_PREFIX!r} are for the held-out cases drawn "
                             "at planning")
        unknown = [q for q in (self.scaling.outputs if self.scaling else []) if q not in {o.name for o in self.output}]
        if unknown:
            raise ValueError(f"scaling.outputs: {', '.join(unknown)} not in the problem's output")
        return self

    def public_view(self) -> dict:
        """What may be sent to an agent: problem.json as validated, nothing hidden."""
        return self.model_dump(mode="json")

    def ranks_allowed(self) -> list[int] | None:
        """The rank counts a submission may ask for (None: any)."""
        if self.allowed_ranks == "any":
            return None
        if self.allowed_ranks:
            return sorted(self.allowed_ranks)
        held = self.held_out.ranks if self.held_out else []
        return sorted({r for c in self.cases for r in c.ranks} | set(held))

    def case_options(self) -> list[str]:
        """The options the problem's own cases set (`-n`, `-tfinal` ...): never a submission's."""
        from hpcbench.agent_options import is_option_name

        perf = self.performance
        args = ([a for c in self.cases for a in c.args] + (self.held_out.args if self.held_out else [])
                + (perf.args if perf else []))
        drawn = ([p.option for p in self.held_out.params] if self.held_out else []) + (
            [p.option for p in perf.params] if perf else [])
        return sorted({a for a in args if is_option_name(a)} | set(drawn))

    def case(self, name: str) -> TestCase:
        for c in self.cases:
            if c.name == name:
                return c
        raise KeyError(name)


# ----------------------------------------------------------------------------- hidden checks


class LiteralReference(FrozenStrict):
    source: Literal["literal"]
    value: list[float]
    citation: str


class ReferenceRun(FrozenStrict):
    """The reference solution's own output in the same campaign and environment."""

    source: Literal["reference_run"]


class ToleranceScale(FrozenStrict):
    """A tolerance that shrinks as a case's option grows: rtol and atol times
    min(1, (at / value) ** power), `value` the option's value in the case's arguments (the
    stated tolerance where the case does not give the option). Valid methods' spread falls with
    the grid (measured per problem: advection1d's BDF2 about as 1/n, not h^2), while a wrong
    program's error stays or grows: one tolerance set at the coarsest grid hides it on the fine
    ones (issue 35)."""

    option: Annotated[str, Field(pattern=r"^-[A-Za-z_][A-Za-z0-9_]*$")]
    at: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    power: Annotated[float, Field(gt=0, le=4, allow_inf_nan=False)]

    def factor(self, args: list[str] | None) -> float:
        """The tolerance's multiplier at a case with these arguments, or a run's whole command line
        (1.0: unknown or unscaled)."""
        given = args or []
        at = [i for i, a in enumerate(given[:-1]) if a == self.option]
        if not at:
            return 1.0
        try:  # the last one given, as PETSc's options database keeps; a signed option by its size
            value = abs(float(given[at[-1] + 1]))
        except ValueError:
            return 1.0
        if not math.isfinite(value) or value == 0:
            return 1.0
        return min(1.0, (self.at / value) ** self.power)


class CompareCheck(FrozenStrict):
    """Quantity against a reference value, full marks inside tolerance, linear decay to
    zero at `fail_factor` times the tolerance (`scale`: a tolerance that depends on the case)."""

    kind: Literal["compare"]
    quantity: str
    cases: list[str] = []  # empty: every case
    reference: Annotated[LiteralReference | ReferenceRun, Field(discriminator="source")]
    rtol: Annotated[float, Field(ge=0)] = 0.0
    atol: Annotated[float, Field(ge=0)] = 0.0
    fail_factor: Annotated[float, Field(gt=1.0)] = 10.0
    weight: Annotated[float, Field(gt=0)] = 1.0
    scale: ToleranceScale | None = None

    @model_validator(mode="after")
    def _tol(self) -> CompareCheck:
        if self.rtol <= 0 and self.atol <= 0:
            raise ValueError("a compare check needs rtol > 0 or atol > 0")
        return self


class SanityCheck(FrozenStrict):
    """A physics sanity check on a quantity the program printed."""

    kind: Literal["sanity"]
    name: str
    quantity: str
    cases: list[str] = []
    test: Literal["sum_equals", "max_abs_below", "all_within", "all_positive", "nonnegative"]
    target: float = 0.0
    lo: float | None = None  # all_within bounds; None: unbounded on that side
    hi: float | None = None
    atol: Annotated[float, Field(ge=0)] = 0.0
    weight: Annotated[float, Field(gt=0)] = 1.0

    @model_validator(mode="after")
    def _bounds(self) -> SanityCheck:
        if self.lo is not None and self.hi is not None and self.lo > self.hi:
            raise ValueError(f"lo ({self.lo}) is above hi ({self.hi})")
        return self


class RefinementCheck(FrozenStrict):
    """A quantity printed at successively finer cases must converge: successive
    differences shrink by at least `min_ratio`."""

    kind: Literal["refinement"]
    name: str
    quantity: str
    cases: Annotated[list[str], Field(min_length=3)]
    min_ratio: Annotated[float, Field(gt=1.0)] = 1.5
    weight: Annotated[float, Field(gt=0)] = 1.0


class ResidualCheck(FrozenStrict):
    """A residual reduction the task states ("solve to a relative residual of 1e-10 or below"),
    judged from what PETSc's unprefixed KSP reports in every run of a case (jobs/ksp_monitor.py):
    each solve's last residual over its first, in the norm the solver tests, at most `bound`.
    The answers of a solve stopped short can agree with the reference inside what valid solvers
    spread (darcy-dmplex at rtol 1e-8: 0.4 of its tolerance): only the solver's record shows it.
    Passed or broken, no partial marks: a broken stated requirement fails the program. Where a
    solve started from a nonzero initial guess its first residual is not the norm PETSc
    measures against (||b||, KSPConvergedDefault): the tolerance it was given decides there."""

    kind: Literal["residual"]
    name: str
    cases: list[str] = []
    bound: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]
    weight: Annotated[float, Field(gt=0)] = 1.0


AnyCheck = CompareCheck | SanityCheck | RefinementCheck | ResidualCheck
Check = Annotated[AnyCheck, Field(discriminator="kind")]


class RefusalSpec(FrozenStrict):
    """Why declining is the right answer to a refusal-set problem (hidden, like every check)."""

    why: Annotated[str, Field(min_length=10)]
    # A good refusal names the obstacle; words any of which should appear in the reason.
    keywords: list[str] = []


def names_held_out(chk: AnyCheck) -> bool:
    """Whether `chk` names the held-out cases (HELD_OUT_CASES or ALL_CASES in its `cases`)."""
    return HELD_OUT_CASES in chk.cases or ALL_CASES in chk.cases


def applies_to(chk: AnyCheck, case: str) -> bool:
    """Whether `chk` judges `case`: the cases it names, every public case when it names none or
    ALL_CASES. A held-out case only where it names HELD_OUT_CASES or ALL_CASES, and never by a
    literal value (that belongs to fixed arguments; held-out ones are drawn at planning)."""
    if is_held_out(case):
        literal = isinstance(chk, CompareCheck) and chk.reference.source == "literal"
        return names_held_out(chk) and not literal
    return not chk.cases or ALL_CASES in chk.cases or case in chk.cases


class Checks(FrozenStrict):
    checks: list[Check] = []
    notes: str = ""
    # The held-out cases' part of the accuracy score (the public cases have the rest): above one
    # half, so a program right only at the published arguments stays below 0.5.
    held_out_share: Annotated[float, Field(gt=0, lt=1)] = 0.6
    # "refuse": the refusal set. The right answer is to decline or ask; scored by the refusal
    # evaluator, outside the composite. Kept here, not in problem.json, so no agent sees it.
    expect: Literal["solve", "refuse"] = "solve"
    refusal: RefusalSpec | None = None

    @model_validator(mode="after")
    def _shape(self) -> Checks:
        if self.expect == "solve" and not self.checks:
            raise ValueError("a solvable problem needs at least one check")
        if self.expect == "refuse" and self.refusal is None:
            raise ValueError("a refusal-set problem (expect: refuse) needs 'refusal' saying why")
        return self


# ----------------------------------------------------------------------------- loading


class ProblemBundle(BaseModel):
    """A loaded problem folder. `checks` and `reference_dir` are hidden from agents."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    problem: Problem
    checks: Checks
    folder: Path

    @property
    def id(self) -> str:
        return self.problem.id

    @property
    def reference_dir(self) -> Path:
        return self.folder / "reference"

    @property
    def par_dir(self) -> Path:
        """The problem's performance par (docs/problems.md): the fastest valid program known for
        its performance case, with its own submission.json like the reference's."""
        return self.folder / "par"

    @property
    def has_par(self) -> bool:
        return (self.par_dir / "submission.json").is_file()


def load_json_model(path: Path, model: type[BaseModel]) -> BaseModel:
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(path, None, "file not found") from None
    except UnicodeDecodeError as e:
        raise ConfigError(path, None, f"not UTF-8 text (byte {e.start}: {e.reason})") from None
    except json.JSONDecodeError as e:
        raise ConfigError(path, None, f"malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(path, *format_validation_error(e)) from None


def load_problem(folder: Path) -> ProblemBundle:
    folder = Path(folder)
    problem = load_json_model(folder / "problem.json", Problem)
    assert isinstance(problem, Problem)
    if problem.id != folder.name:
        raise ConfigError(folder / "problem.json", "id", f"is {problem.id!r} but the folder is {folder.name!r}")
    checks = load_json_model(folder / "checks.json", Checks)
    assert isinstance(checks, Checks)
    declared = {q.name for q in problem.output}
    cases = {c.name for c in problem.cases}
    for i, chk in enumerate(checks.checks):
        if not isinstance(chk, ResidualCheck) and chk.quantity not in declared:
            raise ConfigError(
                folder / "checks.json", f"checks[{i}].quantity",
                f"{chk.quantity!r} is not in problem.json's output contract {sorted(declared)}",
            )
        unknown = set(chk.cases) - cases - {HELD_OUT_CASES, ALL_CASES}
        if unknown:
            raise ConfigError(folder / "checks.json", f"checks[{i}].cases", f"unknown cases {sorted(unknown)}")
        why = held_out_misuse(chk, problem)
        if why:
            raise ConfigError(folder / "checks.json", f"checks[{i}].cases", why)
        why = scale_misuse(chk, problem)
        if why:
            raise ConfigError(folder / "checks.json", f"checks[{i}].scale", why)
    return ProblemBundle(problem=problem, checks=checks, folder=folder)


def scale_misuse(chk: AnyCheck, problem: Problem) -> str | None:
    """Why a check's tolerance cannot scale with its option: every case it judges must give
    the option (a drawn parameter of the held-out cases, or an argument of each published case),
    or the check would judge some cases at the stated tolerance without saying so."""
    if not isinstance(chk, CompareCheck) or chk.scale is None:
        return None
    opt = chk.scale.option
    if names_held_out(chk) and not any(p.option == opt for p in (problem.held_out.params if problem.held_out else [])):
        return f"{opt!r} is not a drawn parameter of the held-out cases"
    published = [c for c in problem.cases if applies_to(chk, c.name)]
    lacking = [c.name for c in published if opt not in c.args[:-1]]
    if lacking:
        return f"{opt!r} is not among the arguments of cases {lacking}"
    return None


def held_out_misuse(chk: AnyCheck, problem: Problem) -> str | None:
    """Why a check cannot name the held-out cases: their arguments are drawn at planning, so
    only the reference's run in the same campaign or a physical law can judge them."""
    named = next((n for n in (HELD_OUT_CASES, ALL_CASES) if n in chk.cases), None)
    if named is None:
        return None
    if named == HELD_OUT_CASES and problem.held_out is None:
        return f"{HELD_OUT_CASES!r}: problem.json declares no held_out cases"
    if isinstance(chk, RefinementCheck):
        return f"{named!r}: a refinement check needs fixed cases in order"
    if isinstance(chk, CompareCheck) and chk.reference.source == "literal":
        return f"{named!r}: a literal value belongs to fixed arguments (use reference_run)"
    if named == ALL_CASES and len(chk.cases) > 1:
        return f"{ALL_CASES!r} names every case already: name no other"
    return None


def default_problems_dir() -> Path:
    from hpcbench.resources import data_path

    return data_path("problems")


def known_problem_ids(root: Path | None = None) -> set[str]:
    """Ids of the problem folders under `root` (the bundled set by default), without loading them."""
    root = Path(root) if root else default_problems_dir()
    return {p.name for p in root.iterdir() if (p / "problem.json").is_file()}


def parse_ids(spec: str | None) -> list[str] | None:
    """`--problems a,b` -> ["a", "b"]; None (all) when not given. Given but naming nothing
    (`--problems ""`) is an error: it once meant every problem."""
    if spec is None:
        return None
    ids = [p.strip() for p in spec.split(",") if p.strip()]
    if not ids:
        raise ConfigError("--problems", None, f"{spec!r} names no problem; give comma-separated problem ids "
                                              "(hpcbench problems lists them), or leave the option out for all")
    return ids


def load_problems(root: Path | None = None, ids: list[str] | None = None) -> dict[str, ProblemBundle]:
    """Load every problem folder under `root` (the bundled set by default).

    A malformed folder raises ConfigError naming the file and field: a problem set
    is curated, so a broken one is an error for its author, not a skip."""
    root = Path(root) if root else default_problems_dir()
    found = {p.name: p for p in sorted(root.iterdir()) if (p / "problem.json").is_file()}
    if ids:
        unknown = [i for i in ids if i not in found]
        if unknown:
            raise ConfigError(root, "--problems", f"unknown problem ids {unknown}; known: {sorted(found)}")
        found = {i: found[i] for i in ids}
    return {name: load_problem(path) for name, path in found.items()}
