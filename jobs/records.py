"""The data contract between planning, the job on a compute node, and collection.

`JobSpec` is what the driver hands an executor (one submission: build plus every
case at every rank count); `JobResult` is the one record the job writes back,
atomically, into the campaign's `records/` folder."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

RECORD_SCHEMA = 1


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ----------------------------------------------------------------------------- specs


class Limits(Model):
    """Per-run limits applied to the launcher and everything it starts. Zero or negative
    values are refused: rlimits would fail in preexec_fn or stop every run, silently."""

    cpu_s: int = Field(600, ge=1, le=7 * 86400)
    # per step (build, or run with all its ranks) in its cgroup, else per process; below ~64 MB
    # mpiexec cannot start
    memory_mb: int = Field(4096, ge=64)
    file_size_mb: int = Field(256, ge=1)
    # what a step holds in its folders: files, folders, links together; a tmpfs of this size where
    # the kernel holds it (jobs/disk_cap.py), its pages inside memory_mb
    disk_mb: int = Field(512, ge=1)
    inodes: int = Field(20000, ge=16)  # files, folders and links created in them
    processes: int = Field(256, ge=8)  # mpiexec and its helpers need several
    output_bytes: int = Field(1 << 20, ge=1)  # kept per stream; the rest is counted and dropped
    flood_bytes: int = Field(64 << 20, ge=1)  # a run printing more than this is stopped

    @model_validator(mode="after")
    def _flood_above_cap(self) -> Limits:
        if self.flood_bytes < self.output_bytes:
            raise ValueError(f"flood_bytes ({self.flood_bytes}) must be at least output_bytes ({self.output_bytes})")
        return self


# Environment names that never reach an untrusted step (jobs/sandbox.step_env), whoever sets them:
# they name credentials, or (PETSC_OPTIONS) would change every program's options.
SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|COOKIE|AUTH", re.I)
DENIED_ENV = frozenset({"PETSC_OPTIONS", "PETSC_OPTIONS_YAML"})
TEMPLATE_FIELDS = {"ranks": 2, "ppn": 2, "depth": 1, "python": "python3"}


class Launcher(Model):
    """How ranks are started. `template` is split into argv after formatting with
    {ranks}, {ppn}, {depth}; the program and its args are appended."""

    template: str = Field("mpiexec -n {ranks}", min_length=1)
    oversubscribe_flag: str = "--oversubscribe"  # added when ranks exceed the cores
    env: dict[str, str] = {}
    # The launcher (jobs/launchers.py): how a run's ranks go to its hosts and are bound to the cores
    # (and GPUs) it holds (jobs/binding.py). `auto` is srun for srun, and for mpiexec/mpirun Open MPI
    # or MPICH (Hydra) as `mpiexec --version` says; `pals` is Cray PALS' mpiexec (--cpu-bind list:);
    # `none` starts the launcher on those cores and its ranks inherit them (a launcher that binds by
    # itself then escapes them: the record shows it); a package may add more (checked by the site loader).
    binding: str = Field("auto", pattern=r"^[a-z][a-z0-9_-]*$")

    @field_validator("template")
    @classmethod
    def _template(cls, v: str) -> str:
        fields = ", ".join("{" + k + "}" for k in TEMPLATE_FIELDS)
        try:
            text = v.format(**TEMPLATE_FIELDS)
        except KeyError as e:
            raise ValueError(f"unknown field {{{e.args[0]}}} in {v!r}: a template may use {fields}") from None
        except (IndexError, ValueError) as e:
            raise ValueError(f"{v!r} does not format ({e}): a template may use {fields}, and writes a "
                             "literal brace twice") from None
        try:
            argv = shlex.split(text)
        except ValueError as e:
            raise ValueError(f"{v!r} does not split into words like a shell line ({e}: an unbalanced quote?)"
                             ) from None
        if not argv:
            raise ValueError("the template names no command")
        if "{ranks}" not in v:
            raise ValueError(f"{v!r} never says how many ranks to start: it must use {{ranks}} "
                             "(every run would start the launcher's default)")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for k, val in v.items():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) or "\x00" in val:
                raise ValueError(f"{k!r}: not an environment variable name (letters, digits, '_'), or a NUL in "
                                 "its value")
            if SECRET_ENV.search(k) or k in DENIED_ENV:
                raise ValueError(f"{k!r}: a name like this never reaches the sandbox of a build or run "
                                 "(credentials, PETSC_OPTIONS: docs/security.md); it would be dropped, so it "
                                 "is refused here")
        return v

    # The value of {depth}: CPUs per rank in the launcher's own unit, for one physical core per
    # rank (srun -c counts hardware threads where threads_per_core is 2: Perlmutter 2; PALS
    # --depth 1 already spreads ranks over physical cores first; docs/sites.md).
    depth: int = Field(1, ge=1)

    def argv(self, ranks: int, ppn: int) -> list[str]:
        """The launcher's words for `ranks` ranks, `ppn` per node; {python} is this interpreter
        (a per-rank helper such as hpcbench.jobs.gpu_bind runs with it)."""
        return shlex.split(self.template.format(ranks=ranks, ppn=ppn, depth=self.depth, python=sys.executable))


IsolationLevel = Literal["bwrap", "apptainer", "none"]


class Isolation(Model):
    """The sandbox around every build and run (jobs/sandbox.py)."""

    level: IsolationLevel = "bwrap"
    per_rank: bool = False  # batch schedulers: the launcher (srun, PALS mpiexec) outside, each rank inside
    binds: list[str] = []  # extra read-only paths the toolchain needs (a site's compilers, MPI, modules)
    image: str = ""  # apptainer: the container image


class Variant(Model):
    """A PETSc build a site offers (cpu, cuda, kokkos ...)."""

    name: str = "cpu"
    petsc_dir: str
    petsc_arch: str = ""
    runtime_options: list[str] = []
    features: list[str] = []


class CaseRun(Model):
    case: str
    args: list[str]
    ranks: int = Field(ge=1)
    time_limit_s: float = Field(gt=0)
    # Timed runs of this case; None: the job's timing_repeats. Held-out cases (drawn at planning)
    # are checked, not timed: 0.
    repeats: int | None = Field(None, ge=0, le=100)
    # The nodes its ranks are spread over in a packed allocation (a sweep point's); 0: the fewest
    # that hold them. "32 ranks on 8 nodes" ran on one node, labelled N8, before this was carried.
    nodes: int = Field(0, ge=0)


class PerfPlan(Model):
    """The performance case of a job's problem (problem.json `performance`; jobs/perf.py): for
    each rank count, `repeats` runs of the submission and as many of the problem's reference,
    alternating, on the same cores. The reference is built once per campaign and variant in
    `reference_dir` (planning put its sources in `src/` there) and runs there, outside this
    job's folder: the submission's sandbox never shows it, its files or its outputs, and the
    spec names no path of the reference's own job or staged copy."""

    runs: list[CaseRun]  # case "perf", one per rank count (the submission's args first, as for the cases)
    reference_runs: list[CaseRun]  # the same without the submission's args
    repeats: int = Field(5, ge=1, le=50)
    reference_files: list[str]
    reference_entry: str
    reference_dir: str  # <campaign>/work/_perf_ref/<problem>-<variant>-<sources sha>
    # The program is the reference (the same staged files, entry and arguments, found by
    # planning): its ratio to the reference is 1 by definition, so its runs are timed once and
    # stand for both sides (evaluators/performance_case.py) instead of the same binary twice.
    same_program: bool = False
    # The problem's performance par (problems/<id>/par/, docs/problems.md): the fastest valid
    # program known for it, built and run like the reference (in `par_dir`), timed in the same
    # alternation (S R P, R P S, ...): execution_time scores the submission against it. Empty
    # `par_files`: the problem has none, the reference sets the speed.
    par_runs: list[CaseRun] = []
    par_files: list[str] = []
    par_entry: str = ""
    par_dir: str = ""
    # where the submission's and par's repeats spread by more than the noise cap (execution_time
    # NOISE_CAP), more rounds up to this many before the score is given at lower confidence
    max_repeats: int = Field(10, ge=1, le=50)


# JobResult.extra key written by jobs/perf.py where PerfPlan.same_program: the program's perf runs
# stand for both sides of the performance case (evaluators/performance_case.py)
SAME_PROGRAM = "perf_same_program"
# the most a performance case's repeats may spread (half their relative range) before the ratio to
# par counts as undecided (jobs/perf.py runs more rounds; evaluators/metrics/execution_time.py):
# also the cap of the noise allowance. Here because both sides read it.
NOISE_CAP = 0.1


class JobSpec(Model):
    schema_version: int = RECORD_SCHEMA
    job_id: str
    agent: str
    problem: str
    attempt: str
    source_dir: str  # staged submission: only its own files
    entry: str
    files: list[str]
    runs: list[CaseRun]
    variant: Variant
    launcher: Launcher = Launcher()
    limits: Limits = Limits()
    isolation: Isolation = Isolation()
    keep_work: bool = False  # work/<job> stays after the record is written
    # 0 only from hpcbench's own tools (validate-checks: accuracy only); site files need >= 1
    timing_repeats: int = Field(3, ge=0, le=100)
    valgrind: bool = True
    malloc_debug: bool = True  # -malloc_debug in the instrumented run (Site.malloc_debug)
    build_timeout_s: float = Field(300.0, gt=0)
    work_dir: str
    record_path: str
    cores: int = Field(1, ge=1)  # cores the executor gave this job (oversubscription is flagged against it)
    null_program_dir: str = ""  # where the launcher-overhead calibration program is cached
    gpus_per_rank: int = Field(0, ge=0, le=1)  # GPU variants: each rank gets a GPU of its own (up to the node's)
    perf: PerfPlan | None = None  # the performance case beside the reference (None: the problem has none)
    # hpcbench's own tools only (validate-checks): the job ends at its first failed run. A failed
    # run fails the execution gate whatever follows, so the rest would only cost time, and a
    # program that hangs would cost every case's time limit.
    stop_at_failure: bool = False
    build_cache: str = ""  # the folder of built binaries this job reuses and adds to ("": none; jobs/build_cache.py)
    # which case valgrind runs, drawn at planning from the campaign's secret held-out seed (jobs/job.py
    # valgrind_target): a program cannot know which of its cheap cases is the watched one (0: the first)
    valgrind_draw: int = Field(0, ge=0)
    # every run asks PETSc's unprefixed KSP for its residual history and view (jobs/ksp_monitor.py):
    # the problem's checks judge the residual reduction the task states (problem.ResidualCheck)
    solver_monitor: bool = False

    @property
    def width(self) -> int:
        """Ranks the job needs at once (its resource shape)."""
        return max((r.ranks for r in self.runs), default=1)

    @property
    def span(self) -> int:
        """Nodes its widest-spread run asks for (0: none asks; the fewest that hold them)."""
        return max((r.nodes for r in self.runs), default=0)

    def repeats_of(self, case: CaseRun) -> int:
        """How many timed runs follow `case`'s instrumented one."""
        return self.timing_repeats if case.repeats is None else case.repeats

    def cores_for(self, ranks: int) -> int:
        """Cores a run of `ranks` ranks keeps busy (more ranks than cores share them)."""
        return min(ranks, self.cores)

    def gpus_for(self, ranks: int) -> int:
        """GPUs a run of `ranks` ranks asks for (the slots give at most the node's)."""
        return ranks * self.gpus_per_rank


# ----------------------------------------------------------------------------- results


class BuildResult(Model):
    command: str
    exit_code: int
    timed_out: bool = False
    wall_s: float
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    makefile: str = ""
    stopped_reason: str = ""  # timeout | memory limit N MB | disk limit N MB | ...
    isolation: str = ""  # the sandbox it ran in: bwrap | apptainer | none
    disk_limit: str = ""  # how its disk limit was held: "kernel (tmpfs)" | "watched every 0.2 s" (jobs/capture.py)
    started_at: float = 0.0  # Unix time it got its core (0: before this was recorded)
    slot_wait_s: float = 0.0  # how long it waited for that core beside the other jobs
    cpus: str = ""  # the CPUs it was started on (its core slot; "": no slots here, or taken from the cache)
    cached: str = ""  # the build cache's key where this is an earlier build's binary and record (jobs/build_cache.py)
    # library file -> functions the binary defines that the library exports too: refused, not
    # run (jobs/interposition.py)
    replaces: dict[str, list[str]] = Field(default_factory=dict)


class LogEvent(Model):
    """One node of PETSc's -log_view nested timer tree (its ascii_xml format).

    `path` is the chain of enclosing events ("" at the top); times are averages
    over ranks; events under PETSc's 1% threshold are folded into "other"."""

    path: str
    name: str
    time_s: float = 0.0
    time_pct: float = 0.0
    time_max_ratio: float = 1.0  # slowest rank over fastest: load imbalance
    calls_per_parent: float = 1.0
    mflops: float = 0.0
    mbps: float = 0.0
    reductions_per_s: float = 0.0


class LogView(Model):
    total_time_s: float | None = None
    max_memory_bytes: float | None = None
    events: list[LogEvent] = []
    objects: dict[str, int] = {}
    options: list[str] = []
    parse_error: str = ""


class LogCounts(Model):
    """What one run created, destroyed and called, from PETSc's -log_view text summary
    (jobs/log_summary.py): objects by class on rank 0, calls by event (the most any rank
    made), each summed over the stages, and the flops of all ranks. Compared between the
    runs of one case and rank count (evaluators/watched_runs.py)."""

    created: dict[str, int] = {}
    destroyed: dict[str, int] = {}
    events: dict[str, int] = {}
    flops: float | None = None
    parse_error: str = ""


class KspSolve(Model):
    """One Krylov solve of the unprefixed KSP, from -ksp_monitor: the residual norm its solver tests
    convergence in at its first and last iteration."""

    iterations: int
    first: float
    last: float

    def reduction(self) -> float:
        """The residual reduction it reached in its own norm (last / first; nan where the first is
        zero or either is not a number: a norm type of none monitors zeros)."""
        if not (math.isfinite(self.first) and math.isfinite(self.last)) or self.first <= 0:
            return math.nan
        return self.last / self.first


class KspSolves(Model):
    """What the solver monitor recorded in a run (jobs/ksp_monitor.py): the unprefixed KSP's solves
    in order (at most MAX_SOLVES kept), and from -ksp_view of the last solve whether it started
    from a nonzero initial guess, the relative tolerance it was given and the norm type it tests
    (preconditioned, unpreconditioned, natural, none)."""

    solves: list[KspSolve] = []
    more: int = 0  # solves past the ones kept
    nonzero_guess: bool | None = None  # None: no -ksp_view of the unprefixed KSP
    rtol: float | None = None
    norm: str = ""
    parse_error: str = ""


class RawMalloc(Model):
    """What the malloc recorder (jobs/malloc_shim.c) found still held at exit of a run: blocks the
    program's own code took with the C library's malloc family and never freed, summed over the
    ranks; `callers` their call sites (source lines where the binary's debug info has them)."""

    held_blocks: int = 0
    held_bytes: int = 0
    tracked: int = 0  # blocks the program's code took in the run
    overflow: bool = False  # more live blocks than the recorder keeps: some went unrecorded
    callers: list[str] = []
    parse_error: str = ""


class Leak(Model):
    """A block still allocated at PetscFinalize, from -malloc_dump."""

    rank: int
    bytes: int
    function: str
    file: str
    line: int


class ValgrindError(Model):
    kind: str
    bytes: int = 0
    blocks: int = 0
    what: str = ""
    frames: list[str] = []  # "function file:line" or "function (object)"
    in_submission: bool = False


# valgrind's leak kinds counted against a program: definite, indirect, and "possibly lost" (only
# a pointer into the middle of the block is left: a leak that keeps such a pointer once went
# unseen, outside review 5379f62)
VALGRIND_LEAK_KINDS = frozenset({"Leak_DefinitelyLost", "Leak_IndirectlyLost", "Leak_PossiblyLost"})


class ValgrindSummary(Model):
    ran: bool = False
    reason: str = ""
    errors: list[ValgrindError] = []
    definitely_lost_bytes: int = 0  # all of it, MPI start-up included
    submission_lost_bytes: int = 0  # allocated by the submission's own code
    submission_invalid_accesses: int = 0
    parse_error: str = ""


# perf / perf_ref / perf_par: the performance case, the submission's, the reference's and the
# problem's par's runs interleaved on the same cores (jobs/perf.py)
RunKind = Literal["instrumented", "timing", "valgrind", "null", "perf", "perf_ref", "perf_par"]


class InstrumentCheck(Model):
    """One instrument hpcbench asked for in a run, and whether what it produced was found
    where only hpcbench named it, unaltered (jobs/instruments.py). An empty `problem` means
    every output it expected was there and read; anything else says why not, in words."""

    name: str  # malloc_dump | malloc_view | log_view | valgrind
    expected: int = 1  # outputs expected (one per rank for PETSc's allocator and valgrind)
    found: int = 0
    problem: str = ""


class Placement(Model):
    """Where a run's ranks ran (jobs/placement.py): read by scaling analysis."""

    nodes: list[str] = []
    ranks_per_node: int = 1
    cores_per_rank: int = 1
    binding: str = ""  # the launcher's binding option (--cpu-bind depth, --cpu-bind=cores) or "none"
    oversubscribed: bool = False
    packed: bool = False  # one of many runs in one allocation (hpcbench/executors/pack.py)
    cpus: str = ""  # the CPUs the run was given (kernel list format; "": no core slots here, the scheduler's)
    gpus: list[str] = []  # the GPUs it was given, as the site's visibility variable names them


class RankAffinity(Model):
    """One rank as the job wrapper saw it (jobs/affinity.py), never as the program said."""

    host: str
    rank: int = -1  # -1: the launcher did not say (no rank variable in its environment)
    pid: int = 0
    cpus: str  # Cpus_allowed_list when it started
    changed_to: str = ""  # a later, different Cpus_allowed_list (the program moved itself)
    gpus: dict[str, str] = {}  # the GPU visibility variables it started with
    cpu_wait_s: float = 0.0  # runnable but waiting for a CPU (/proc/<pid>/schedstat), while watched
    source: Literal["proc", "probe"] = "proc"


class RunResult(Model):
    case: str
    ranks: int
    kind: RunKind
    repeat: int = 0
    variant: str = "cpu"
    command: list[str]
    # the instruments' options, given through an options file the command names (records only;
    # not in campaign.h5)
    petsc_options: list[str] = Field(default_factory=list)
    exit_code: int | None
    signal: int | None = None
    timed_out: bool = False
    stopped_reason: str = ""  # timeout | output flood | cpu limit | ...
    wall_s: float
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    oversubscribed: bool = False
    isolation: str = ""  # the sandbox it ran in: bwrap | apptainer | none
    disk_limit: str = ""  # how its disk limit was held: "kernel (tmpfs)" | "watched every 0.2 s" (jobs/capture.py)
    log_view: LogView | None = None
    # the text summary beside it (None: not asked for, an older record, or not found whole)
    log_counts: LogCounts | None = None
    leaks: list[Leak] = []
    malloc_dump_seen: bool = False
    options_left: list[str] = []
    ksp: KspSolves | None = None  # the solver monitor's record (problems with a residual check; jobs/ksp_monitor.py)
    raw_malloc: RawMalloc | None = None  # the malloc recorder's (C programs' runs but valgrind's; jobs/raw_malloc.py)
    valgrind: ValgrindSummary | None = None
    instruments: list[InstrumentCheck] = []  # what was asked of each instrument and confirmed
    hostnames: list[str] = []
    placement: Placement | None = None
    started_at: float = 0.0  # Unix time it got its cores (0: before this was recorded)
    slot_wait_s: float = 0.0  # how long it waited for them beside the other jobs
    affinity: list[RankAffinity] = []  # every rank seen by the job wrapper ([]: none seen, or not recorded)
    affinity_note: str = ""  # why nothing was recorded (a run shorter than the first look ...)
    memory_peak_bytes: float | None = None  # the run's cgroup high-water mark (all ranks, launcher included)
    cpu_s: float | None = None  # CPU time of all its processes (its cgroup; launcher included)


class TimingSummary(Model):
    """Execution time of one case at one rank count, launcher overhead removed."""

    case: str
    ranks: int
    repeats: int
    wall_median_s: float
    null_median_s: float
    # PETSc's own time (-log_view, PetscInitialize to PetscFinalize) when it agrees with
    # wall - null; otherwise wall - null (work outside PETSc's timer counts too)
    exec_s: float
    petsc_time_median_s: float | None = None
    wall_minus_null_s: float = 0.0
    exec_source: Literal["log_view", "wall_minus_null"] = "wall_minus_null"
    oversubscribed: bool = False


JobStatus = Literal["done", "skipped", "error", "timeout", "cancelled"]


class JobResult(Model):
    schema_version: int = RECORD_SCHEMA
    job_id: str
    agent: str
    problem: str
    attempt: str
    # timeout: the job reached its walltime (a result: the program was too slow);
    # cancelled: stopped by a user or the scheduler (kept beside the job, rerun by --resume).
    status: JobStatus = "done"
    reason: str = ""
    hostname: str = ""
    scheduler: str = "local"
    scheduler_job_id: str = ""
    started: str = ""
    finished: str = ""
    wall_s: float = 0.0
    build: BuildResult | None = None
    runs: list[RunResult] = []
    timings: list[TimingSummary] = []
    petsc_version: str = ""
    petsc_configure_options: str = ""
    mpi_version: str = ""
    compilers: dict[str, str] = {}
    cores: int = 1
    isolation: str = ""  # the job's sandbox level; each build and run records its own too
    extra: dict[str, str] = Field(default_factory=dict)


def compact(result: JobResult) -> JobResult:
    """The record as stored: -log_view events (the bulk of a record) only for the
    instrumented runs, which the judges' evidence reads, and the first timing run of each
    case and rank count, whose clean events (no -malloc_debug) a sweep's breakdown reads;
    other runs keep their total time and memory, which the timings summary already uses."""
    for run in result.runs:
        if run.kind not in ("instrumented", "timing") or run.kind == "timing" and run.repeat != 0:
            if run.log_view is not None:
                run.log_view.events = []
                run.log_view.objects = {}
    return result


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename: readers never see
    half a record, even on a shared file system."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_model(path: Path, model: BaseModel) -> None:
    write_atomic(path, model.model_dump_json(indent=1))


def load_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())
