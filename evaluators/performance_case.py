"""The performance case read back from a record (jobs/perf.py wrote it): per rank count, the
submission's and the reference's repeats, their times, the noise, and the ratio. Shared by
the execution_time and peak_memory metrics and by the report.

A repeat's time is PETSc's own -log_view time when both programs' runs report one that
agrees with the wall clock minus the launcher's (null program's) time (the medians, as for
the ordinary timings, jobs/job.py summarise_timings); otherwise wall minus null for both, so
the two are always measured alike. On a machine loaded from outside (the ranks waited for a
CPU more than LOADED_WAIT_SHARE of their runs) every wall-clock time measures the load as much
as the program: then, where every run has it, the CPU time of the run's processes minus the
null runs' (the work done, whoever else wanted the cores; OMPI_MCA_mpi_yield_when_idle makes
waiting ranks give their core away instead of spinning on it). The noise is half the relative
range of each program's repeats (the larger of the two; at least NOISE_FLOOR): a ratio within
1 + noise counts as equal. The reference's own job times it once (jobs/perf.py SAME_PROGRAM):
its runs are both sides, ratio 1.

Each side's launcher time is its own language's null program: a petsc4py submission's null is
the interpreter with petsc4py imported (jobs/build_python.py), far more than the C null the
reference and the par stand beside; subtracting it from them too read a C par at 0.000 s on a
loaded machine (its 0.13 s of CPU less the Python null's, clipped: `hpcbench run` beside 8 busy
processes, stop 45) and the reference's peak memory at 0.0 MiB. Their null is the reference
job's own null runs at the same case and ranks (`ref_nulls`)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from hpcbench.jobs.records import NOISE_CAP, SAME_PROGRAM, JobResult, RunResult

NOISE_FLOOR = 0.03  # PETSc's timer and the launcher never agree better than this between runs
WALL_SLACK_S = 0.25  # as jobs/job.py: launcher start-up noise
MEMORY_SLACK_BYTES = 1 << 20  # the launcher's own peak varies by about this much (null runs)
LOADED_WAIT_SHARE = 0.25  # ranks runnable but waiting for a CPU this share of their run: a loaded machine


@dataclass
class TimedSide:
    runs: list[RunResult]
    times: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times) if self.times else float("nan")

    def spread(self) -> float:
        """Half the relative range of the repeats."""
        if len(self.times) < 2 or self.median <= 0:
            return 0.0
        return (max(self.times) - min(self.times)) / (2 * self.median)


@dataclass
class RankCount:
    ranks: int
    sub: TimedSide
    ref: TimedSide
    nulls: list[RunResult]
    par: TimedSide = field(default_factory=lambda: TimedSide([]))  # the problem's par (none: no runs)
    source: str = "log_view"
    left_out: list[str] = field(default_factory=list)  # repeats not used, and why
    failed: str = ""  # why there is no ratio (the submission's runs failed ...)
    # the null runs of the reference's and par's language where it is not the submission's
    # (the reference job's own); empty: `nulls` serve every side
    ref_nulls: list[RunResult] = field(default_factory=list)

    def nulls_of(self, side: TimedSide) -> list[RunResult]:
        return self.nulls if side is self.sub or not self.ref_nulls else self.ref_nulls

    @property
    def noise(self) -> float:
        return max(NOISE_FLOOR, self.sub.spread(), self.ref.spread())

    @property
    def ratio(self) -> float:
        return self.sub.median / self.ref.median if self.ref.median > 0 else float("nan")

    @property
    def within_noise(self) -> bool:
        return self.ratio <= 1.0 + self.noise

    @property
    def has_par(self) -> bool:
        return bool(self.par.times)

    @property
    def par_noise(self) -> float:
        """The submission's and the par's spread (at least NOISE_FLOOR), uncapped."""
        return max(NOISE_FLOOR, self.sub.spread(), self.par.spread())

    @property
    def par_allowance(self) -> float:
        """How far above par still counts as par: the noise, capped at NOISE_CAP (a program
        measurably 1.3x slower than par never ties with it, however noisy the machine)."""
        return min(NOISE_CAP, self.par_noise)

    @property
    def par_ratio(self) -> float:
        return self.sub.median / self.par.median if self.par.median > 0 else float("nan")

    def wait_share(self) -> float:
        """Median over the runs of the largest share of its wall time a rank spent waiting for
        a CPU (jobs/affinity.py): load on the machine from outside the campaign."""
        shares = [max((a.cpu_wait_s for a in r.affinity), default=0.0) / r.wall_s
                  for r in self.sub.runs + self.ref.runs + self.par.runs if r.wall_s > 0]
        return statistics.median(shares) if shares else 0.0

    @property
    def oversubscribed(self) -> bool:
        return any(r.oversubscribed for r in self.sub.runs + self.ref.runs + self.par.runs)

    @property
    def cpus(self) -> str:
        return next((r.placement.cpus for r in self.sub.runs if r.placement and r.placement.cpus), "")


def _clean(r: RunResult) -> bool:
    return r.exit_code == 0 and not r.timed_out


def _petsc(r: RunResult) -> float | None:
    return r.log_view.total_time_s if r.log_view is not None else None


def rank_counts(record: JobResult | None, contended: dict[int, str] | None = None,
                other_language: JobResult | None = None) -> list[RankCount]:
    """The performance case of `record`, per rank count; `contended` (run index -> why) names
    runs that shared a core with another run of the campaign: left out while 3 clean pairs remain.
    `other_language`: the reference's record where the submission's language is not the
    reference's (a petsc4py program): its null runs are the reference's and the par's launcher time."""
    if record is None:
        return []
    contended = contended or {}
    out = []
    for ranks in sorted({r.ranks for r in record.runs if r.kind in ("perf", "perf_ref", "perf_par")}):
        idx = [i for i, r in enumerate(record.runs) if r.case == "perf" and r.ranks == ranks]
        sub = [(i, record.runs[i]) for i in idx if record.runs[i].kind == "perf"]
        ref = [(i, record.runs[i]) for i in idx if record.runs[i].kind == "perf_ref"]
        par = {record.runs[i].repeat: (i, record.runs[i]) for i in idx if record.runs[i].kind == "perf_par"}
        rc = RankCount(ranks, TimedSide([]), TimedSide([]), _nulls(record, ranks),
                       ref_nulls=_nulls(other_language, ranks))
        bad = [r for _, r in sub if not _clean(r)]
        if bad:
            rc.failed = (f"the submission's run {bad[0].repeat} of the performance case "
                         + (bad[0].stopped_reason or f"exited {bad[0].exit_code}"))
        if record.extra.get(SAME_PROGRAM):  # the reference's own job: its runs are both sides
            ref = sub
        # a round's runs (the submission's, the reference's and, where timed, the par's) stand or
        # fall together: the three medians are of the same moments of the machine
        rounds = [(s, r, par.get(s[1].repeat)) for s, r in zip(sub, ref, strict=False)]
        if par:
            rounds = [x for x in rounds if x[2] is not None]
        pairs = [x for x in rounds if all(_clean(y[1]) for y in x if y is not None)]
        clean = [x for x in pairs if not any(y[0] in contended for y in x if y is not None)]
        if len(clean) >= 3 or len(clean) == len(pairs):
            rc.left_out += [f"repeat {x[0][1].repeat}: "
                            + next(contended[y[0]] for y in x if y is not None and y[0] in contended)
                            for x in pairs if x not in clean]
            pairs = clean
        rc.sub.runs, rc.ref.runs = [x[0][1] for x in pairs], [x[1][1] for x in pairs]
        rc.par.runs = [x[2][1] for x in pairs if x[2] is not None]
        _times(rc)
        if rc.par.times and not rc.par.median > 0:  # unmeasured, not infinitely fast: no ratio to it
            rc.left_out.append("par's runs: no time above their null runs' (0 s): scored against the reference")
            rc.par = TimedSide([])
        out.append(rc)
    return out


def _nulls(record: JobResult | None, ranks: int) -> list[RunResult]:
    """The clean null runs of `record`'s performance case at `ranks`."""
    return [r for r in (record.runs if record else []) if r.case == "perf" and r.ranks == ranks
            and r.kind == "null" and _clean(r)]


def _agrees(runs: list[RunResult], null: float) -> bool:
    """PETSc's time of these runs agrees with the wall clock minus the launcher's (medians)."""
    petsc = [p for r in runs if (p := _petsc(r)) is not None]
    if len(petsc) != len(runs) or not runs:
        return False
    outside = max(0.0, statistics.median(r.wall_s for r in runs) - null)
    return outside <= 1.5 * statistics.median(petsc) + WALL_SLACK_S


def _unlogged(runs: list[RunResult], null: float) -> float:
    """How long these runs took beyond PETSc's own time and the launcher's (medians): work before
    PetscInitialize or after PetscFinalize, which -log_view does not see."""
    return statistics.median(max(0.0, r.wall_s - null - (_petsc(r) or 0.0)) for r in runs) if runs else 0.0


def _launch_noise(nulls: list[RunResult]) -> float:
    """What the launcher's start-up varies by, as the null runs measured it (at least 0.05 s; the
    fixed slack where they are too few)."""
    walls = [r.wall_s for r in nulls]
    return max(0.05, max(walls) - min(walls)) if len(walls) >= 2 else WALL_SLACK_S


def _times(rc: RankCount) -> None:
    """Each repeat's time, measured alike for every program (see the module's note)."""
    sides = [side for side in (rc.sub, rc.ref, rc.par) if side.runs]
    null = {id(side): statistics.median([r.wall_s for r in rc.nulls_of(side)]) if rc.nulls_of(side) else 0.0
            for side in (rc.sub, rc.ref, rc.par)}
    runs = [r for side in sides for r in side.runs]
    cpu_null = {id(side): [r.cpu_s for r in rc.nulls_of(side) if r.cpu_s is not None] for side in sides}
    if rc.wait_share() > LOADED_WAIT_SHARE and runs and all(r.cpu_s is not None for r in runs) \
            and all(cpu_null.values()):
        rc.source = "cpu"
        for side in sides:
            base = statistics.median(cpu_null[id(side)])
            side.times = [max(0.0, (r.cpu_s or 0.0) - base) for r in side.runs]
        return
    least = min((_unlogged(side.runs, null[id(side)]) for side in sides[1:]), default=0.0)
    trusted = (all(_agrees(side.runs, null[id(side)]) for side in sides)
               and _unlogged(rc.sub.runs, null[id(rc.sub)]) <= least + _launch_noise(rc.nulls))
    rc.source = "log_view" if trusted else "wall_minus_null"
    for side in sides:
        side.times = [(_petsc(r) or 0.0) if trusted else max(0.0, r.wall_s - null[id(side)]) for r in side.runs]


def memory(rc: RankCount) -> tuple[float, float, float] | None:
    """(submission's, reference's, noise) peak memory in bytes above the launcher's own (the
    null program's): each run's cgroup high-water mark, median of the repeats; None without."""
    def peaks(runs: list[RunResult]) -> list[float]:
        return [r.memory_peak_bytes for r in runs if r.memory_peak_bytes is not None]

    s, r, n, rn = peaks(rc.sub.runs), peaks(rc.ref.runs), peaks(rc.nulls), peaks(rc.nulls_of(rc.ref))
    if not s or not r:
        return None
    base = statistics.median(n) if n else 0.0
    ref_base = statistics.median(rn) if rn else 0.0
    noise = max((max(x) - min(x) for x in (s, r, n, rn) if len(x) > 1), default=0.0) + MEMORY_SLACK_BYTES
    return max(0.0, statistics.median(s) - base), max(0.0, statistics.median(r) - ref_base), noise
