"""Scheduler signals become an exception in the job's main thread, so a job near its
walltime or being cancelled stops its current run (capture kills the run's process
group) and still writes what it has, instead of vanishing.

    Slurm: `--signal=B:USR2@M` sends USR2 to the batch shell (which `exec`s Python)
           M seconds before the walltime; at the limit and on scancel it sends SIGTERM.
    PBS:   SIGTERM at the walltime and on qdel, no advance warning: the job (and a packed
           allocation's driver) warns itself with a timer at the walltime less the margin
           (`warn_before_walltime`), which stops it as USR2 would.
    local: the executor's cancel sends SIGTERM.

USR2 always means the walltime is near. SIGTERM is a timeout when it arrives within
the walltime margin (the batch script exports the walltime as HPCBENCH_WALLTIME_S),
otherwise a cancel. The driver still reconciles with the scheduler's final state."""

from __future__ import annotations

import datetime as dt
import os
import signal
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

from hpcbench.jobs.records import JobResult, JobSpec, JobStatus

WALLTIME_ENV = "HPCBENCH_WALLTIME_S"
# The scheduler's id of this job, for its record: the batch script copies it from the
# scheduler's own variable (schedulers.base.AllocationView.job_id_env), so jobs/ names no scheduler.
SCHEDULER_JOB_ID_ENV = "HPCBENCH_SCHEDULER_JOB_ID"
_t0 = time.monotonic()
_partial: JobResult | None = None
_fired = False


class Interrupted(BaseException):
    """Not an Exception: the job's own `except Exception` must not swallow it."""

    def __init__(self, outcome: JobStatus, signum: int, elapsed_s: float):
        super().__init__(outcome)
        self.outcome, self.signum, self.elapsed_s = outcome, signum, elapsed_s


def walltime_margin_s(walltime_s: float) -> float:
    return min(120.0, max(10.0, 0.25 * walltime_s))


def outcome_for(signum: int, elapsed_s: float, walltime_s: float) -> Literal["timeout", "cancelled"]:
    if signum == signal.SIGUSR2:
        return "timeout"
    if signum == signal.SIGTERM and walltime_s > 0 and elapsed_s >= walltime_s - walltime_margin_s(walltime_s):
        return "timeout"
    return "cancelled"


def _handler(signum: int, frame) -> None:
    global _fired
    if _fired:  # the record is being written: a second signal must not interrupt that
        return
    _fired = True
    try:
        walltime = float(os.environ.get(WALLTIME_ENV, "0") or 0)
    except ValueError:
        walltime = 0.0
    elapsed = time.monotonic() - _t0
    raise Interrupted(outcome_for(signum, elapsed, walltime), signum, elapsed)


def install() -> None:
    for sig in (signal.SIGTERM, signal.SIGUSR2):
        signal.signal(sig, _handler)
    warn_before_walltime(_handler)


def warn_before_walltime(handler: Callable[[int, Any], None], environ: Mapping[str, str] | None = None) -> float:
    """Under a scheduler that sends no warning (its view's `warns_itself`: PBS), a timer that calls
    `handler` as USR2 at the walltime ($HPCBENCH_WALLTIME_S from the batch script) less the margin,
    counted from this process's start. The seconds until it fires; 0 where none is armed."""
    from hpcbench.schedulers.base import view_for

    env = os.environ if environ is None else environ
    try:
        walltime = float(env.get(WALLTIME_ENV, "0") or 0)
    except ValueError:
        walltime = 0.0
    if walltime <= 0 or not view_for(environ=env).warns_itself:
        return 0.0
    at = max(0.05, walltime - walltime_margin_s(walltime) - (time.monotonic() - _t0))
    signal.signal(signal.SIGALRM, lambda signum, frame: handler(signal.SIGUSR2, frame))
    signal.setitimer(signal.ITIMER_REAL, at)
    return at


def track(result: JobResult) -> None:
    """The record being filled in, so an interruption can save what is done."""
    global _partial
    _partial = result


def partial_record(spec: JobSpec, stop: Interrupted) -> JobResult:
    res = _partial if _partial is not None and _partial.job_id == spec.job_id else JobResult(
        job_id=spec.job_id, agent=spec.agent, problem=spec.problem, attempt=spec.attempt)
    res.status = stop.outcome
    name = signal.Signals(stop.signum).name
    walltime = os.environ.get(WALLTIME_ENV, "")
    what = f"the walltime ({walltime} s) was reached" if stop.outcome == "timeout" else "the job was cancelled"
    res.reason = (f"{what}: {name} after {stop.elapsed_s:.0f} s; {len(res.runs)} runs had finished, "
                  "the one in progress was stopped")
    res.finished = dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")
    res.wall_s = stop.elapsed_s
    return res
