"""The performance case: the submission and the problem's reference, timed side by side.

Each job of a problem with a performance case (problem.json `performance`, JobSpec.perf)
ends by timing it: for each rank count it takes one set of cores (and GPUs) and keeps it
while the submission and the reference run `repeats` times each, alternately (S R, R S,
S R, ...), plus three runs of the null program (first, middle, last) for the launcher's
own time. Same node, same cores, the same moments of machine load: the ratio of their
median times is a fair comparison, and the spread of the repeats says how far to trust it
(evaluators/metrics/execution_time.py). A job whose program is the reference itself (the same
staged files, entry and arguments: PerfPlan.same_program) runs it `repeats` times alone: its
ratio is 1 by definition, and those runs stand for both sides.

The reference never enters the submission's job folder or sandbox: its binary is built once
per campaign and variant in the PerfPlan's `reference_dir` (the first job to need it builds
it from the sources planning copied to `src/` there, under a lock; the others wait and reuse
it), and each job runs
it from its own folder there (`runs/<job>/`), in a sandbox that shows only the reference's
binary and that folder. The reference's outputs land in this job's record (kind
`perf_ref`), which no sandbox shows. OMPI_MCA_mpi_yield_when_idle=1 for both programs: on a
machine shared with other work, a busy-polling rank takes the core its descheduled partner
needs (the sweeps measured the same, docs/sweeps.md)."""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import statistics
from pathlib import Path

from hpcbench.jobs import build_cache, slots
from hpcbench.jobs.build import BINARY_NAME
from hpcbench.jobs.placement import build_confinement
from hpcbench.jobs.records import NOISE_CAP, SAME_PROGRAM, CaseRun, JobResult, JobSpec, RunResult
from hpcbench.petsc_env import PetscInstall

# ranks that wait yield their core (the submission, the reference and the null program take
# turns on one set of cores); in every run of a job (jobs/job.py Runner's environment), so the
# timed runs' environment is the others'
PERF_ENV = {"OMPI_MCA_mpi_yield_when_idle": "1"}
NULL_AT = ("first", "middle", "last")


def reference_binary(spec: JobSpec, petsc: PetscInstall, home_dir: str = "", files: list[str] | None = None,
                     entry: str = "", what: str = "the reference") -> Path | str:
    """The reference's (or, given its `home_dir`, `files` and `entry`, the par's) binary for the
    performance case (built once, shared), or why there is none."""
    plan = spec.perf
    assert plan is not None
    home = Path(home_dir or plan.reference_dir)
    files = files if files is not None else plan.reference_files
    entry = entry or plan.reference_entry
    home.mkdir(parents=True, exist_ok=True)
    final = home / "build"
    with open(home / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one job builds, the others wait for its binary
        if (final / BINARY_NAME).is_file():
            return final / BINARY_NAME
        failed = home / "build-failed.txt"
        if failed.is_file():
            return failed.read_text()
        tmp = home / "build.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for name in files:
            shutil.copyfile(home / "src" / name, tmp / name)
        with slots.hold(1) as held:
            where = build_confinement(spec.limits, held, spec.launcher,
                                      Path(spec.work_dir) / "bind" / f"{Path(home).name}.cpus")
            res = build_cache.build(spec.build_cache, tmp, files, entry, petsc,
                                    timeout_s=spec.build_timeout_s, isolation=spec.isolation, confinement=where)
        if res.exit_code != 0:
            why = f"{what} did not build for the performance case: {res.stderr.strip()[-300:]}"
            failed.write_text(why)
            return why
        tmp.rename(final)
        return final / BINARY_NAME


def _timed(runner, binary: Path, case: CaseRun, kind: str, repeat: int, held: slots.Held) -> RunResult:
    # fresh folders of its own like every run, its -log_view read back where only the driver named it
    return runner.run(binary, case, kind, repeat, runner.unwatched(), held=held)


def _time_of(r: RunResult) -> float:
    t = r.log_view.total_time_s if r.log_view is not None else None
    return t if t is not None else r.wall_s


def undecided(out: list[RunResult], kinds: tuple[str, str] = ("perf", "perf_par")) -> bool:
    """Whether the submission's or the par's repeats so far spread by more than NOISE_CAP (half
    their relative range, PETSc's time where it has one): the ratio to par is not yet decided."""
    for kind in kinds:
        t = [_time_of(r) for r in out if r.kind == kind]
        med = statistics.median(t) if t else 0.0
        if len(t) >= 2 and med > 0 and (max(t) - min(t)) / (2 * med) > NOISE_CAP:
            return True
    return False


def interleaved(sub, sub_bin: Path, others: list[tuple[object, Path, CaseRun, str]], null_bin: Path | None,
                case: CaseRun, repeats: int, max_repeats: int | None = None) -> list[RunResult]:
    """`repeats` runs of each program, in rotating order (S R P, R P S, P S R, ...), and three null
    runs, on one set of cores. `others`: the reference's and the par's runner, binary, case and run
    kind (none of the reference's where the program is the reference, timed once). Where a par is
    timed and the repeats spread by more than NOISE_CAP, more rounds, up to `max_repeats`."""
    spec = sub.spec
    out: list[RunResult] = []
    null_case = CaseRun(case="perf", args=[], ranks=case.ranks, time_limit_s=60)
    when = {0, repeats // 2, repeats - 1}
    timed = [(sub, sub_bin, case, "perf"), *others]
    extend = max_repeats is not None and any(k == "perf_par" for *_, k in others)
    with slots.hold(spec.cores_for(case.ranks), gpus=spec.gpus_for(case.ranks)) as held:
        i = 0
        while i < repeats or (extend and i < (max_repeats or 0) and undecided(out)):
            k = i % len(timed)
            for runner, binary, c, kind in timed[k:] + timed[:k]:
                out.append(_timed(runner, binary, c, kind, i, held))
            if any(r.kind == "perf" and (r.exit_code != 0 or r.timed_out) for r in out):
                break  # the program fails (or outlasts its limit) here: more repeats measure nothing
            if null_bin is not None and i in when:
                out.append(sub.run(null_bin, null_case, "null", len([r for r in out if r.kind == "null"]), [],
                                   held=held))
            i += 1
    return out


def measure_performance(spec: JobSpec, petsc: PetscInstall, sub, binary: Path, null_bin: Path | None, result: JobResult,
            runner_class) -> None:
    """The performance case of this job (nothing where the problem has none); its runs join
    the record. Not measured when a case failed: the program does not work."""
    plan = spec.perf
    if plan is None:
        return
    if any(r.kind == "instrumented" and r.exit_code != 0 for r in result.runs):
        result.extra["perf"] = "not measured: a case failed"
        return
    par = None
    if plan.par_files:
        got_par = reference_binary(spec, petsc, plan.par_dir, plan.par_files, plan.par_entry, "the par")
        if isinstance(got_par, str):
            result.extra["perf"] = got_par
            return
        par = _runner(spec, runner_class, petsc, got_par, plan.par_dir, plan.par_files, plan.par_entry)
    try:
        if plan.same_program:  # the same binary twice would measure nothing but the noise
            result.extra[SAME_PROGRAM] = "the program is the reference: its runs are the reference's"
            for i, case in enumerate(plan.runs):
                extra = [(par[0], par[1], plan.par_runs[i], "perf_par")] if par else []
                result.runs += interleaved(sub, binary, extra, null_bin, case, plan.repeats, plan.max_repeats)
            return
        got = reference_binary(spec, petsc)
        if isinstance(got, str):
            result.extra["perf"] = got
            return
        ref = _runner(spec, runner_class, petsc, got, plan.reference_dir, plan.reference_files, plan.reference_entry)
        for i, (case, ref_case) in enumerate(zip(plan.runs, plan.reference_runs, strict=True)):
            others = [(ref[0], ref[1], ref_case, "perf_ref")]
            if par:
                others.append((par[0], par[1], plan.par_runs[i], "perf_par"))
            result.runs += interleaved(sub, binary, others, null_bin, case, plan.repeats, plan.max_repeats)
    finally:
        if not spec.keep_work:
            for home in (Path(plan.reference_dir), Path(plan.par_dir)) if plan.par_dir else (Path(plan.reference_dir),):
                with contextlib.suppress(OSError):
                    shutil.rmtree(home / "runs" / spec.job_id)


def _runner(spec: JobSpec, runner_class, petsc: PetscInstall, binary: Path, home_dir: str, files: list[str],
            entry: str) -> tuple[object, Path]:
    """A runner for the reference's or the par's runs, in fresh folders under its own work folder
    (never the submission's), and its binary."""
    home = Path(home_dir) / "runs" / spec.job_id
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    ref_spec = spec.model_copy(update={"source_dir": str(Path(home_dir) / "src"), "files": files, "entry": entry,
                                       "work_dir": str(home)})
    return runner_class(ref_spec, petsc, binary.parent), binary
