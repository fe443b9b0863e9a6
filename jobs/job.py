"""One job: build a submission, run every case at every rank count with
instrumentation, time it cleanly, and write one result record atomically.

    python -m hpcbench.jobs.job SPEC.json

This is what an executor runs on a compute node (locally, under Slurm or PBS).
It reads only the spec and the staged submission; it never sees hidden checks
or references, and never writes the campaign's HDF5 file."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hpcbench.jobs import affinity, binding, build_cache, diskfull, interrupt, perf, raw_malloc, resume, slots
from hpcbench.jobs.api_snapshot import ensure_petsc_api
from hpcbench.jobs.build import BINARY_NAME
from hpcbench.jobs.build_python import interpreter_objects, package_dirs, python_hidden
from hpcbench.jobs.capture import Confinement, run_captured
from hpcbench.jobs.instruments import (
    EVERY_RUN,
    LogViewProbe,
    MallocProbe,
    Probe,
    RawMallocProbe,
    SolverMonitorProbe,
    ValgrindProbe,
    options_argv,
)
from hpcbench.jobs.launch import run_env
from hpcbench.jobs.launchers import launcher_of, rank_variables
from hpcbench.jobs.placement import build_confinement, build_cpus, place
from hpcbench.jobs.records import CaseRun, JobResult, JobSpec, RunResult, TimingSummary, compact, save_model
from hpcbench.jobs.run_folders import RunFolders, fresh_folders, stage_sources
from hpcbench.jobs.sandbox import Step
from hpcbench.jobs.valgrind import valgrind_path
from hpcbench.petsc_env import PetscInstall, find_petsc
from hpcbench.problem import language_of

NULL_PROGRAM = r"""/* Launcher-overhead calibration: PETSc start-up and shutdown, nothing else. */
#include <petscsys.h>
int main(int argc, char **argv)
{
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscFinalize());
  return 0;
}
"""


def now() -> str:
    # milliseconds: a run's float start is compared with its record's (a rerun within the same
    # second must still read as later), and seconds made such comparisons flaky
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return ""


# A petsc4py program's calibration: the interpreter, petsc4py's import and PETSc's start-up and
# shutdown (petsc4py finalizes at exit), which every Python run pays before its own work.
NULL_PYTHON = (
    '"""Launcher-overhead calibration of a petsc4py program."""\n'
    "import sys\n\nimport petsc4py\n\npetsc4py.init(sys.argv)\n"
    "from petsc4py import PETSc  # noqa: E402,F401\n"
)


def is_python(spec: JobSpec) -> bool:
    """Whether the job's submission is a petsc4py program (docs/python.md)."""
    return language_of(spec.entry) == "python"


def null_dir(spec: JobSpec) -> Path | None:
    """Where the job's calibration program lives: one per variant and language (None: no null runs)."""
    if not spec.null_program_dir:
        return None
    return Path(spec.null_program_dir + ("-python" if is_python(spec) else ""))


def null_program(spec: JobSpec, petsc: PetscInstall) -> Path | None:
    """Build (once per variant and language, shared between jobs) the calibration program."""
    final = null_dir(spec)
    if final is None:
        return None
    python = is_python(spec)
    if (final / BINARY_NAME).is_file():
        return final / BINARY_NAME
    tmp = final.parent / f".{final.name}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    source = "null.py" if python else "null.c"
    (tmp / source).write_text(NULL_PYTHON if python else NULL_PROGRAM)
    with slots.hold(1) as held:
        where = build_confinement(spec.limits, held, spec.launcher, Path(spec.work_dir) / "bind" / "null.cpus")
        res = build_cache.build(spec.build_cache, tmp, [source], source, petsc, timeout_s=spec.build_timeout_s,
                                isolation=spec.isolation, confinement=where)
    if res.exit_code != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    try:
        tmp.rename(final)  # another job may have won the race: keep theirs
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return final / BINARY_NAME


VALGRIND_RUNS = 10  # a valgrind run takes about as long as this many plain runs (memcheck)


def planned_runs(spec: JobSpec) -> float:
    """The job's runs counted by the cores each keeps busy: what is left of it, times the
    mean length of its runs so far, is the work it has left (its core-slot priority)."""
    runs = sum((1 + spec.repeats_of(c)) * spec.cores_for(c.ranks) for c in spec.runs)
    timed = {c.ranks for c in spec.runs if spec.repeats_of(c)}
    runs += sum(spec.timing_repeats * spec.cores_for(r) for r in timed)  # null runs
    if spec.perf is not None:  # the performance case: both programs, and three null runs
        runs += sum((2 * spec.perf.repeats + 3) * spec.cores_for(c.ranks) for c in spec.perf.runs)
    if spec.valgrind and spec.runs:
        runs += VALGRIND_RUNS * min(spec.cores_for(c.ranks) for c in spec.runs)
    return float(runs)


class Runner:
    def __init__(self, spec: JobSpec, petsc: PetscInstall, build_dir: Path):
        self.spec, self.petsc, self.build_dir = spec, petsc, build_dir
        self.env = run_env(petsc.env(), spec.launcher)
        # Each run in folders of its own, fresh (jobs/run_folders.py); the binary (and the
        # shared null program) read-only; nothing else of the campaign.
        null = null_dir(spec)
        readonly = [build_dir] + ([null] if null is not None else [])
        # a petsc4py program sees the allowed packages and no ctypes (jobs/build_python.py)
        self.hidden = python_hidden() if is_python(spec) else []
        if is_python(spec):
            readonly += package_dirs()
        # rankfiles (read by the launcher inside the sandbox) and per-rank probes (jobs/affinity.py)
        self.bind_dir = Path(spec.work_dir) / "bind"
        self.bind_dir.mkdir(parents=True, exist_ok=True)
        if not spec.isolation.per_rank:
            readonly.append(self.bind_dir)
        # the malloc recorder of a C program's runs, one build per campaign (jobs/raw_malloc.py)
        self.shim, self.shim_problem = (None, "") if is_python(spec) else raw_malloc.build_recorder(
            Path(spec.work_dir).parent / "_malloc", petsc)
        if self.shim is not None:
            readonly.append(self.shim.parent)
        self.readonly = [p for p in readonly if p.is_dir()]
        self.env.update(Step(spec.isolation, petsc, cwd=build_dir, writable=[]).rank_env())
        # the performance case's MPI setting in every run: a program that looked for it in its
        # environment could tell the timed runs from the checked ones (outside review, 5379f62)
        self.env.update(perf.PERF_ENV)
        # valgrind frames of the submission: its binary; a petsc4py program's code is run by the
        # interpreter, whose own records the run's suppressions take out (docs/python.md)
        self.own_objects = interpreter_objects() if is_python(spec) else {str(build_dir / BINARY_NAME)}
        # where its launcher tells each rank its index (affinity records, valgrind report names)
        self.rank_vars = rank_variables(launcher_of(spec.launcher))
        self.count = 0
        self.took: dict[tuple[bool, str, int], list[float]] = {}  # (null?, case, ranks) -> walls of clean runs
        self.runs_left = planned_runs(spec)

    def priority(self) -> int:
        """Longest remaining work first (jobs/slots.py priority_for): the runs left, each as
        long as this job's clean runs so far (1 s before the first)."""
        walls = [w for ws in self.took.values() for w in ws]
        return slots.priority_for(self.runs_left * (statistics.fmean(walls) if walls else 1.0))

    def skip(self, case: CaseRun) -> None:
        """A case finished by an earlier try: its runs are not left to do."""
        self.runs_left = max(0.0, self.runs_left - (1 + self.spec.repeats_of(case)) * self.spec.cores_for(case.ranks))

    def bounds(self, kind: str, case: str, ranks: int) -> tuple[float, float]:
        """(shortest, longest) this run can take, from the clean runs of the same program, case and
        ranks so far (0: unknown): the core slots let a narrow run past a blocked wide one only
        when it is sure to be done first. Margins are wide; a wrong bound only costs idle time."""
        walls = self.took.get((kind == "null", case, ranks))
        if not walls:
            return 0.0, 0.0
        if kind == "valgrind":  # never faster than the program alone; how much slower is unknown
            return min(walls), 0.0
        return 0.5 * min(walls), 1.25 * max(walls) + 0.1

    def run(self, binary: Path, case: CaseRun, kind: str, repeat: int, probes: list[Probe],
            ranks: int | None = None, held: slots.Held | None = None) -> RunResult:
        """One run in fresh folders, each probe's instrument asked for and its record read back; on
        cores it takes for itself, or on those of `held` (the caller holds them: the performance
        case's interleaved runs share one set)."""
        ranks = ranks or case.ranks
        self.count += 1
        folders = fresh_folders(self.spec, self.petsc, f"{self.count}-{kind}-{case.case}-r{ranks}", self.readonly,
                                with_sources=kind != "null", hidden=self.hidden)
        try:
            for probe in probes:
                probe.prepare(folders, ranks)
            result = self.launch(binary, case, kind, repeat, probes, ranks, folders, held)
            for probe in probes:
                probe.collect(result, folders)
            return result
        finally:
            if not self.spec.keep_work:
                folders.remove()

    def launch(self, binary: Path, case: CaseRun, kind: str, repeat: int, probes: list[Probe], ranks: int,
               folders: RunFolders, held: slots.Held | None = None) -> RunResult:
        logs = folders.logs_inside
        prefix = [a for p in probes for a in p.prefix(logs, self.petsc.petsc_dir)]
        given = [a for p in probes for a in p.options(logs)]
        # the submission's runs: one argv for all, the instruments in a file (instruments.options_argv)
        options = options_argv(given, folders.logs, logs) if kind != "null" else given
        program = [*prefix, str(binary), *case.args, *self.spec.variant.runtime_options, *EVERY_RUN, *options]
        limit = case.time_limit_s * (30 if kind == "valgrind" else 1) + (10 if kind == "valgrind" else 0)
        width = self.spec.cores_for(ranks)
        own = held is None  # the caller holding them waited for them, not this run
        with contextlib.nullcontext(held) if held is not None else slots.hold(
                width, *self.bounds(kind, case.case, ranks), priority=self.priority(),
                gpus=self.spec.gpus_for(ranks)) as held:
            # bound to the cores (and GPUs) it holds, its ranks' real affinity read as it runs
            go = place(self.spec.launcher, ranks, self.spec.cores, program, folders.step, binding.of_held(held),
                       self.bind_dir, case.nodes)
            began = time.time()
            # under valgrind a Python object is a malloc memcheck sees (pymalloc's arenas hide them)
            env = {**self.env, **go.env, **({"PYTHONMALLOC": "malloc"} if kind == "valgrind" and is_python(self.spec)
                                            else {})}
            for probe in probes:  # a preload joins the site's own (its launcher.env)
                for k, v in probe.env(logs, binary).items():
                    env[k] = f"{v}:{env[k]}" if k == "LD_PRELOAD" and env.get(k) else v
            cap = run_captured(go.argv, cwd=folders.run, env=env, timeout_s=limit,
                               output_cap=self.spec.limits.output_bytes, step=folders.step,
                               confinement=Confinement(self.spec.limits, go.cpus),
                               observe=affinity.observer(binary, kind, self.spec.isolation.per_rank, self.rank_vars))
        self.runs_left = max(0.0, self.runs_left - width * (VALGRIND_RUNS if kind == "valgrind" else 1))
        if cap.exit_code == 0 and not cap.timed_out and kind != "valgrind":
            self.took.setdefault((kind == "null", case.case, ranks), []).append(cap.wall_s)
        ranks_seen, note = affinity.recorded(cap.observed, go.probes, cap.wall_s)
        return RunResult(
            case=case.case, ranks=ranks, kind=kind, repeat=repeat, variant=self.spec.variant.name,
            command=go.argv, petsc_options=given, exit_code=cap.exit_code, signal=cap.signal, timed_out=cap.timed_out,
            stopped_reason=cap.stopped_reason, wall_s=cap.wall_s, stdout=cap.stdout, stderr=cap.stderr,
            stdout_truncated=cap.stdout_truncated, stderr_truncated=cap.stderr_truncated,
            stdout_bytes=cap.stdout_bytes, stderr_bytes=cap.stderr_bytes, oversubscribed=go.oversubscribed,
            hostnames=[socket.gethostname()], isolation=self.spec.isolation.level, disk_limit=cap.disk_limit,
            placement=go.placement,
            started_at=began, slot_wait_s=held.waited_s if own else 0.0,
            affinity=ranks_seen, affinity_note=note,
            memory_peak_bytes=cap.memory_peak_bytes, cpu_s=cap.cpu_s,
        )

    def every_run(self) -> list[Probe]:
        """The instruments of every run of the submission (timing, valgrind and performance runs
        too): -log_view costs little (PETSc logs events anyway) and gives PETSc's own time; the
        solver monitor changes what PETSc counts, so no run may lack it where one has it."""
        return [LogViewProbe(), *([SolverMonitorProbe()] if self.spec.solver_monitor else [])]

    def unwatched(self) -> list[Probe]:
        """The instruments of every run but valgrind's: every_run's and the malloc recorder (a C
        program's), which valgrind's run needs no more than it could have (memcheck replaces
        the allocator there and reports leaks itself)."""
        if is_python(self.spec):
            return self.every_run()
        return [*self.every_run(), RawMallocProbe(self.shim, self.shim_problem)]

    def instrumented(self, binary: Path, case: CaseRun) -> RunResult:
        return self.run(binary, case, "instrumented", 0, [*self.unwatched(), MallocProbe(self.spec.malloc_debug)])

    def timing(self, binary: Path, case: CaseRun, repeat: int) -> RunResult:
        return self.run(binary, case, "timing", repeat, self.unwatched())

    def valgrind(self, binary: Path, case: CaseRun) -> RunResult:
        # The same options as a timing run: the program cannot tell the two apart by its argv.
        probe = ValgrindProbe(self.own_objects, self.rank_vars, python=is_python(self.spec))
        return self.run(binary, case, "valgrind", 0, [probe, *self.every_run()])

    def null(self, binary: Path, case: CaseRun, repeat: int) -> RunResult:
        # An empty folder of its own: nothing the submission left (a petscrc) reaches it.
        return self.run(binary, case, "null", repeat, [])


# Launcher start-up varies by about +-0.05 s between runs (measured with Open MPI
# here), so wall - null only resolves a program's own time to about this much.
WALL_SLACK_S = 0.25


def summarise_timings(timing: list[RunResult], null: list[RunResult]) -> TimingSummary | None:
    """Execution time without launcher start-up. PETSc's own -log_view time is
    exact for what runs between PetscInitialize and PetscFinalize; wall - null is
    the cross-check that catches work done outside them, and is used instead when
    the two disagree by more than launcher noise allows (or -log_view is missing)."""
    ok = [r for r in timing if r.exit_code == 0]
    if not ok:
        return None
    wall = statistics.median(r.wall_s for r in ok)
    nulls = [r.wall_s for r in null if r.exit_code == 0]
    null_med = statistics.median(nulls) if nulls else 0.0
    outside = max(0.0, wall - null_med)
    petsc_times = [r.log_view.total_time_s for r in ok if r.log_view and r.log_view.total_time_s is not None]
    petsc = statistics.median(petsc_times) if petsc_times else None
    trusted = petsc is not None and (not nulls or outside <= petsc * 1.5 + WALL_SLACK_S)
    return TimingSummary(
        case=ok[0].case, ranks=ok[0].ranks, repeats=len(ok), wall_median_s=wall, null_median_s=null_med,
        exec_s=petsc if trusted else outside, petsc_time_median_s=petsc, wall_minus_null_s=outside,
        exec_source="log_view" if trusted else "wall_minus_null",
        oversubscribed=any(r.oversubscribed for r in ok),
    )


def run_job(spec: JobSpec, previous: JobResult | None = None) -> JobResult:
    t0 = time.perf_counter()
    work = Path(spec.work_dir)
    build_dir = work / "build"
    shutil.rmtree(work / "runs", ignore_errors=True)
    result = JobResult(job_id=spec.job_id, agent=spec.agent, problem=spec.problem, attempt=spec.attempt,
                       hostname=socket.gethostname(), started=now(), cores=spec.cores,
                       scheduler_job_id=os.environ.get(interrupt.SCHEDULER_JOB_ID_ENV, ""),
                       isolation=spec.isolation.level)
    interrupt.track(result)
    try:
        petsc = find_petsc(spec.variant.petsc_dir, spec.variant.petsc_arch)
    except FileNotFoundError as e:
        result.status, result.reason = "error", str(e)
        return _finish(result, t0)
    result.petsc_version, result.petsc_configure_options = petsc.version, petsc.configure_options
    ensure_petsc_api(spec.record_path, spec.variant.name, petsc.petsc_dir, petsc.petsc_arch)  # if planning could not
    result.mpi_version = first_line(["mpiexec", "--version"])
    result.compilers = {"mpicc": first_line(["mpicc", "--version"])}
    stage_sources(spec, build_dir)
    probe = work / "bind" / "build.cpus"
    with slots.hold(1, priority=slots.priority_for(planned_runs(spec))) as held:
        where = build_confinement(spec.limits, held, spec.launcher, probe)
        result.build = build_cache.build(spec.build_cache, build_dir, spec.files, spec.entry, petsc,
                                         timeout_s=spec.build_timeout_s, isolation=spec.isolation, confinement=where)
    result.build.started_at, result.build.slot_wait_s = held.started_at, held.waited_s
    if not result.build.cached:
        result.build.cpus = build_cpus(where, probe, result.build.cpus)
    if result.build.exit_code != 0:
        return _finish(result, t0)
    binary = build_dir / BINARY_NAME
    null_bin = null_program(spec, petsc)  # before the runner: its sandbox shows the null program's folder
    runner = Runner(spec, petsc, build_dir)
    nulls: dict[int, list[RunResult]] = {}
    for group in by_case(spec.runs):
        _run_case_group(spec, runner, binary, null_bin, group, previous, nulls, result)
        failed = next((r for r in result.runs if r.exit_code != 0 or r.timed_out), None)
        if spec.stop_at_failure and failed is not None:
            result.extra["stopped_at_failure"] = (f"case {failed.case} at {failed.ranks} ranks failed; "
                                                  "the job's later cases were not run")
            return _finish(result, t0)
    if spec.valgrind and spec.runs:
        _valgrind_run(spec, runner, binary, result)
    perf.measure_performance(spec, petsc, runner, binary, null_bin, result, Runner)
    return _finish(result, t0)


def by_case(runs: list[CaseRun]) -> list[list[CaseRun]]:
    """The job's cases grouped by name, each group's rank counts in their order: one case at
    1 and 2 ranks (a sweep point's size at every rank count) is timed as one group."""
    groups: dict[str, list[CaseRun]] = {}
    for c in runs:
        groups.setdefault(c.case, []).append(c)
    return list(groups.values())


def _run_case_group(spec: JobSpec, runner: Runner, binary: Path, null_bin: Path | None, group: list[CaseRun],
                    previous: JobResult | None, nulls: dict[int, list[RunResult]], result: JobResult) -> None:
    """One case at each of its rank counts: the instrumented runs, then the timed repeats
    interleaved across the rank counts (1, 2, 1, 2, ...), so that a drift of the machine
    (another job, a frequency change) falls on every rank count alike and a speedup, a ratio
    of two medians, does not carry it; then launcher start-up once per rank count."""
    kept = resume.finished_group(previous, group, spec.repeats_of)
    firsts: list[RunResult] = []
    for case in group:
        if kept is not None:  # finished by an earlier, stopped try of this job: not redone
            runner.skip(case)
            result.extra["resumed_runs"] = str(int(result.extra.get("resumed_runs", "0")) + len(kept[case.ranks]))
        firsts.append(kept[case.ranks][0] if kept is not None else runner.instrumented(binary, case))
    result.runs += firsts
    # a failed run is its own evidence; timing it measures nothing
    timed = [c for c, first in zip(group, firsts) if first.exit_code == 0 and spec.repeats_of(c)]
    timing: dict[int, list[RunResult]] = {c.ranks: kept[c.ranks][1:] if kept is not None else [] for c in timed}
    if kept is None:
        for i in range(max((spec.repeats_of(c) for c in timed), default=0)):
            for c in timed:
                if i < spec.repeats_of(c):
                    timing[c.ranks].append(runner.timing(binary, c, i))
    for c in timed:
        result.runs += timing[c.ranks]
        null_kept = resume.finished_nulls(previous, c.ranks, spec.timing_repeats)
        if c.ranks not in nulls and null_kept is not None:
            nulls[c.ranks] = null_kept
            result.runs += null_kept
        if null_bin is not None and c.ranks not in nulls:
            # Once per rank count, not per case: it only calibrates the launcher.
            null_case = CaseRun(case=c.case, args=[], ranks=c.ranks, time_limit_s=60, nodes=c.nodes)
            nulls[c.ranks] = [runner.null(null_bin, null_case, i) for i in range(spec.timing_repeats)]
            result.runs += nulls[c.ranks]
        summary = summarise_timings(timing[c.ranks], nulls.get(c.ranks, []))
        if summary:
            result.timings.append(summary)


def valgrind_target(spec: JobSpec, result: JobResult) -> CaseRun | None:
    """The case valgrind runs: at the fewest ranks (one where the case allows it: the cheapest
    full check of the program's own memory), among the cases that ran cleanly there and took at
    most twice the cheapest one's instrumented run (valgrind's cost stays bounded), the one the
    planning's draw names (JobSpec.valgrind_draw; 0: the cheapest). A program that leaked only at
    the case valgrind always ran cannot know it now (outside review, 5379f62)."""
    walls = {(r.case, r.ranks): r.wall_s for r in result.runs
             if r.kind == "instrumented" and r.exit_code == 0 and not r.timed_out}
    ok_runs = [c for c in spec.runs if (c.case, c.ranks) in walls]
    if not ok_runs:
        return None
    fewest = min(c.ranks for c in ok_runs)
    at = [c for c in ok_runs if c.ranks == fewest]
    cheapest = min(walls[(c.case, c.ranks)] for c in at)
    pool = [c for c in at if walls[(c.case, c.ranks)] <= 2 * cheapest + 0.5]
    if not spec.valgrind_draw:
        return min(pool, key=lambda c: walls[(c.case, c.ranks)])
    return pool[spec.valgrind_draw % len(pool)]


def _valgrind_run(spec: JobSpec, runner: Runner, binary: Path, result: JobResult) -> None:
    target = valgrind_target(spec, result)
    if valgrind_path() is None:
        result.extra["valgrind"] = "not installed on this node"
    elif target is not None:
        result.runs.append(runner.valgrind(binary, target))


def _finish(result: JobResult, t0: float) -> JobResult:
    result.finished = now()
    result.wall_s = time.perf_counter() - t0
    return result


def main(argv: list[str] | None = None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    if len(argv) != 1:
        print("usage: python -m hpcbench.jobs.job SPEC.json", file=sys.stderr)
        return 2
    # First: under Slurm, submitit's own SIGTERM handler (log and carry on) is in place until
    # this line, so a scancel that came earlier was lost and the job ran on until SIGKILL.
    interrupt.install()
    spec = JobSpec.model_validate_json(Path(argv[0]).read_text())
    aside = cancelled_path(spec)
    previous = resume.previous_partial(spec)  # removes the set-aside records it read
    watch = diskfull.FullWatch(Path(spec.work_dir))
    try:
        with watch:
            result = run_job(spec, previous)
    except interrupt.Interrupted as stop:  # walltime near or cancelled: keep what finished
        result = interrupt.partial_record(spec, stop)
    except Exception as e:  # the record says why rather than the job vanishing
        if diskfull.is_disk_full_error(e):
            return _disk_full(spec, f"{type(e).__name__}: {e}")
        result = JobResult(job_id=spec.job_id, agent=spec.agent, problem=spec.problem, attempt=spec.attempt,
                           status="error", reason=f"{type(e).__name__}: {e}", finished=now())
    failed = _failed_steps(result)
    if failed and (watch.seen_full or (watch.seen_low and any(diskfull.says_full(t) for t in failed))):
        return _disk_full(spec, "a build or run failed while the file system was full")
    # A cancelled job has no result: its partial record stays beside the job, and
    # `submit --resume` reruns it because records/ has nothing for it.
    try:
        save_model(aside if result.status == "cancelled" else Path(spec.record_path), compact(result))
    except OSError as e:
        if not diskfull.is_disk_full_error(e):
            raise
        return _disk_full(spec, f"its record could not be written ({e.strerror or e})")
    if result.status != "cancelled" and not spec.keep_work:
        remove_work(spec)
    return 0


# A step stopped past its own disk or inode limit failed by the program's doing, even when the
# file system filled at that moment: often it was what filled it (jobs/capture.py frees its files).
OWN_LIMITS = ("disk limit", "inode limit")


def _failed_steps(result: JobResult) -> list[str]:
    """What each step that failed for a reason a full file system may explain said (its output,
    or the job's error): empty where none failed so."""
    def other(stopped: str) -> bool:
        return not stopped.startswith(OWN_LIMITS)

    b = result.build
    return ([result.reason] if result.status == "error" else []) \
        + ([b.stdout + b.stderr] if b is not None and b.exit_code != 0 and other(b.stopped_reason) else []) \
        + [r.stdout + r.stderr for r in result.runs if r.exit_code != 0 and other(r.stopped_reason)]


def _disk_full(spec: JobSpec, what: str) -> int:
    """A full file system is no result of the program's: no record (the job is rerun once there
    is room), its work folder freed, the driver told by the exit status."""
    remove_work(spec)
    with contextlib.suppress(OSError):
        print(f"hpcbench job {spec.job_id}: stopped: {diskfull.full_message(Path(spec.work_dir), what)}; "
              "no record written (the job runs again on resume)", file=sys.stderr, flush=True)
    # job.log is on the full file system too: a flush failing at exit would turn the status into
    # Python's 120, which the driver records as the job's error; the status alone says it
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (for the interpreter's exit)
    return diskfull.EXIT_DISK_FULL


def remove_work(spec: JobSpec) -> None:
    """The record holds all a job's results: its folders (sources, objects, binary, each
    run's folders with whatever the program wrote) go, unless --keep-work (older layouts
    had run/, logs/ and tmp/ beside build/). job.log is the
    executor's, a few kilobytes, and stays for debugging."""
    work = Path(spec.work_dir)
    for sub in ("build", "runs", "run", "logs", "tmp"):
        shutil.rmtree(work / sub, ignore_errors=True)


def cancelled_path(spec: JobSpec) -> Path:
    return Path(spec.work_dir) / "cancelled.json"


if __name__ == "__main__":
    sys.exit(main())
