"""Run jobs on this machine, as many at once as the cores allow.

Two jobs per core run at once, more while cores sit idle with nothing waiting
that fits them (jobs/slots.py Admission); inside them, every build and run takes
core slots (hpcbench.jobs.slots) for as many cores as it keeps busy and only
while it runs, so a job whose widest run has two ranks does not hold two cores
through its one-rank build and runs, and runs never oversubscribe each other.
A run wider than the machine still runs, alone, oversubscribed, and its
timings say so. submitit's LocalExecutor starts every job at once with no such
packing, so this executor drives the same job entry point
(`python -m hpcbench.jobs.job`) itself.

Each job has a wall-time limit of its own, derived from its spec's cases as a batch
scheduler's walltime is (executors/shapes.job_walltime_s: every run at its time limit): the
job is told it (HPCBENCH_WALLTIME_S) and SIGTERMed when it has run that long, so it records
"timeout" with what finished; a driver stuck on a file its program left (before the reads
were made safe, a FIFO named like a report) cannot hold the campaign for ever.

Each started job has a lease (hpcbench.executors.lease): a rerun after the driver was
killed waits for jobs still running instead of starting them twice. Ctrl-C stops every
job this driver started or adopted (SIGTERM to its process group, SIGKILL after a grace
period) and records none of them as finished."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil

from hpcbench.errors import DiskFull, HpcbenchError
from hpcbench.executors import lease
from hpcbench.executors.base import Executor, JobState, Progress, register_executor
from hpcbench.executors.shapes import job_walltime_s, start_order
from hpcbench.jobs import diskfull, slots
from hpcbench.jobs.interrupt import WALLTIME_ENV
from hpcbench.jobs.records import JobResult, JobSpec, save_model


@register_executor("local")
class LocalExecutor(Executor):
    poll_s = 0.2
    heartbeat_s = 5.0
    stop_grace_s = 10.0  # after SIGTERM a job writes what it has (jobs/interrupt.py), then SIGKILL
    walltime_s = staticmethod(job_walltime_s)  # a job's own limit, from its spec
    _slots: Path | None = None  # _slots_dir, once read from the campaign's profile

    def submit(self, jobs: list[JobSpec], progress: Progress | None = None) -> None:
        # The cores (and GPUs) runs are given, one at a time each (jobs/cores.py): slot i is core i.
        layout = self.site.local_layout()
        self._slots_dir().mkdir(parents=True, exist_ok=True)
        layout.save(self._slots_dir())
        cores = len(layout.cores)
        queue = start_order(jobs)  # the most work first; each job's place is its core-slot priority
        priority = {j.job_id: i for i, j in enumerate(queue)}
        running: dict[str, tuple[subprocess.Popen, JobSpec, lease.Lease]] = {}
        clock = _Deadlines(self.stop_grace_s)
        adopted = self._adopt(queue)  # still running from a driver that died: wait for them, never restart
        queue = [j for j in queue if j.job_id not in adopted]
        done = 0
        counts: Counter[str] = Counter()
        last_beat = time.monotonic()
        full: diskfull.FullJobs[JobSpec] = diskfull.FullJobs()
        # Admission only (the slots share the cores between runs): twice as many jobs as
        # cores, more while cores sit idle, so one-rank work fills the gaps around wide runs.
        admit = slots.Admission(self._slots_dir(), cores)
        try:
            while queue or running or adopted or full.waiting:
                self._stop_if_disk_full(running, queue, clock, full)
                while (k := admit.next(queue, len(running) + len(adopted), lambda j: j.width)) is not None:
                    job = queue.pop(k)
                    proc = self._start(job, priority.get(job.job_id, len(priority)))
                    running[job.job_id] = (proc, job, self._lease(job, proc))
                    clock.start(job.job_id, proc.pid, self.walltime_s(job))
                clock.enforce()
                done += self._reap(running, clock) + self._reap_adopted(adopted, queue)
                if time.monotonic() - last_beat >= self.heartbeat_s:
                    last_beat = time.monotonic()
                    for _, job, ls in running.values():
                        ls.beat(Path(job.work_dir))
                counts = Counter(pending=len(queue), running=len(running) + len(adopted), done=done)
                if progress:
                    progress(counts)
                time.sleep(self.poll_s)
        except (KeyboardInterrupt, DiskFull) as e:
            # Ctrl-C: stop every job this driver started or adopted; none is recorded as
            # finished (a job stopped by SIGTERM sets its partial result aside as cancelled.json).
            self._stop([(proc.pid, job) for proc, job, _ in running.values()]
                       + [(ps.pid, job) for ps, job in adopted.values()])
            raise e from None
        except OSError as e:
            if not diskfull.is_disk_full_error(e):
                raise
            self._stop([(proc.pid, job) for proc, job, _ in running.values()]
                       + [(ps.pid, job) for ps, job in adopted.values()])
            raise DiskFull(f"{diskfull.full_message(self.campaign.root, e.strerror or str(e))}; "
                           "the running jobs were stopped") from None

    def _reap(self, running: dict, clock: _Deadlines) -> int:
        """Jobs whose process ended: released, and recorded if they could not record themselves."""
        n = 0
        for jid, (proc, job, _) in list(running.items()):
            if proc.poll() is None or self._full_exit(jid, proc, job, clock):
                continue  # a full file system: _stop_if_disk_full's, at the next turn, never a record
            del running[jid]
            lease.release(Path(job.work_dir))
            if not self.campaign.finished(jid) and not (Path(job.work_dir) / "cancelled.json").is_file():
                # The job process itself died (killed, out of memory, past its limit): record why.
                over = clock.over(jid)
                save_model(Path(job.record_path), JobResult(
                    job_id=jid, agent=job.agent, problem=job.problem, attempt=job.attempt,
                    status="timeout" if over else "error",
                    reason=over or f"job process exited {proc.returncode} without a record"))
            clock.forget(jid)
            n += 1
        return n

    def _reap_adopted(self, adopted: dict, queue: list[JobSpec]) -> int:
        """Jobs of an earlier driver that ended: done if recorded, else queued to run again."""
        n = 0
        for jid, (ps, job) in list(adopted.items()):
            if ps.is_running() and ps.status() != psutil.STATUS_ZOMBIE:
                continue
            del adopted[jid]
            lease.release(Path(job.work_dir))
            if self.campaign.finished(jid):
                n += 1
            else:  # it died without a record (its exit status is not ours to read): run it again
                queue.append(job)
        return n

    def _stop_if_disk_full(self, running: dict, queue: list[JobSpec], clock: _Deadlines,
                           full: diskfull.FullJobs[JobSpec]) -> None:
        """A job that found the file system full exited without a record. Where room comes back
        soon (another step filled it past its own disk limit, and its files were freed) the job
        runs again; where it does not, or the same job meets it again and again, the run stops."""
        for jid, (proc, job, _) in list(running.items()):
            if proc.poll() is not None and self._full_exit(jid, proc, job, clock):
                del running[jid]
                lease.release(Path(job.work_dir))
                clock.forget(jid)
                full.add(job, job)
        for job in full.with_room():
            print(f"hpcbench: job {job.job_id} met a full file system that has room again; it runs again",
                  file=sys.stderr)
            queue.insert(0, job)
        if (stuck := full.stuck()) is not None:
            job, why = stuck
            what = f"job {job.job_id} could not finish ({why}), see its job.log"
            raise DiskFull(f"{diskfull.full_message(Path(job.work_dir), what)}; the running jobs were stopped")

    def _full_exit(self, jid: str, proc: subprocess.Popen, job: JobSpec, clock: _Deadlines) -> bool:
        """The job ended for a full file system: it said so (EXIT_DISK_FULL), or it died without a
        record while the file system holding its work folder is full (a write of its own failed
        before it could say so: Python's 120 when flushing its log at exit fails), and not
        because the driver stopped it at its wall-time limit (a timeout stays one)."""
        rc = proc.returncode
        return rc == diskfull.EXIT_DISK_FULL or (
            rc not in (0, None) and not clock.over(jid) and not self.campaign.finished(jid)
            and diskfull.is_full(Path(job.work_dir)))

    def _adopt(self, jobs: list[JobSpec]) -> dict[str, tuple[psutil.Process, JobSpec]]:
        adopted = {}
        for job in jobs:
            ls = lease.read_lease(Path(job.work_dir))
            if ls is None:
                continue
            if ls.host != socket.gethostname():
                raise HpcbenchError(f"job {job.job_id} is leased to host {ls.host} (pid {ls.pid}, heartbeat "
                                    f"{ls.heartbeat}); rerun there, or remove {Path(job.work_dir) / lease.NAME} "
                                    "if that host is gone")
            ps = ls.process()
            if ps is None:
                lease.release(Path(job.work_dir))  # its process is gone: the job is rerun
            else:
                adopted[job.job_id] = (ps, job)
        if adopted:
            print(f"hpcbench: {len(adopted)} job(s) still running from an earlier driver: waiting for them "
                  f"instead of starting them again ({', '.join(sorted(adopted))})", file=sys.stderr)
        return adopted

    def _stop(self, procs: list[tuple[int, JobSpec]]) -> None:
        for pid, _ in procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_grace_s
        alive = list(procs)
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [(pid, job) for pid, job in alive if _running(pid)]
        for pid, _ in alive:
            _kill_tree(pid)
        for _, job in procs:
            lease.release(Path(job.work_dir))

    def _start(self, job: JobSpec, priority: int) -> subprocess.Popen:
        Path(job.work_dir).mkdir(parents=True, exist_ok=True)
        spec = Path(self.campaign.specs_dir) / f"{job.job_id}.json"
        log = open(Path(job.work_dir) / "job.log", "wb")  # noqa: SIM115 (owned by the child)
        env = {**os.environ, slots.ENV: f"{self._slots_dir()}:{len(self.site.local_layout().cores)}",
               slots.PRIORITY_ENV: str(priority), WALLTIME_ENV: f"{self.walltime_s(job):.0f}"}
        proc = subprocess.Popen([sys.executable, "-m", "hpcbench.jobs.job", str(spec)], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True, env=env)
        log.close()
        return proc

    def _lease(self, job: JobSpec, proc: subprocess.Popen) -> lease.Lease:
        try:
            ls = lease.Lease.for_process(proc.pid)
        except psutil.Error:  # it already ended: a lease with no start time, never adopted
            ls = lease.Lease(proc.pid, 0.0, socket.gethostname(), "", "", os.getpid())
        ls.write(Path(job.work_dir))
        return ls

    def _slots_dir(self) -> Path:
        """Where the campaign's runs take their cores (its profile's `core_slots`): the machine's
        slots, shared with every other campaign running here (validate-checks' problems side by
        side, a test suite's workers, a second `hpcbench run`), the campaign's own, or a folder
        named. Unshared, each campaign's runs would take every core."""
        if self._slots is not None:
            return self._slots
        try:
            where = self.campaign.profile().core_slots
        except HpcbenchError:  # no readable manifest: the machine's, as the default profile says
            where = "machine"
        if where == "machine":
            self._slots = self.site.local_layout().machine_slots()
        else:
            self._slots = Path(self.campaign.work_dir) / ".core-slots" if where == "campaign" else Path(where)
        return self._slots

    def states(self, jobs: list[JobSpec]) -> dict[str, JobState]:
        out: dict[str, JobState] = {}
        for j in jobs:
            ls = lease.read_lease(Path(j.work_dir))
            if self.campaign.finished(j.job_id):
                out[j.job_id] = "done"
            elif ls is not None and ls.process() is not None:
                out[j.job_id] = "running"
            else:
                out[j.job_id] = "pending"
        return out

    def cancel(self, jobs: list[JobSpec]) -> int:
        n = 0
        for j in jobs:
            ls = lease.read_lease(Path(j.work_dir))
            if ls is not None and ls.process() is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(ls.pid, signal.SIGTERM)
                    n += 1
        return n


class _Deadlines:
    """Each running job's wall-time limit: SIGTERM to its process group when reached (the job
    records "timeout" with what finished), SIGKILL to what is left a grace period later."""

    def __init__(self, grace_s: float):
        self.grace_s = grace_s
        self.jobs: dict[str, tuple[int, float, float]] = {}  # job id -> (pid, limit, started)
        self.termed: dict[str, float] = {}  # job id -> when SIGTERM was sent

    def start(self, jid: str, pid: int, limit_s: float) -> None:
        self.jobs[jid] = (pid, limit_s, time.monotonic())

    def over(self, jid: str) -> str:
        """The reason in words when the job was stopped at its limit ("" otherwise)."""
        if jid not in self.termed:
            return ""
        return f"the driver's wall-time limit for this job ({self.jobs[jid][1]:.0f} s, from its cases' time limits) " \
               "was reached and the job did not record what it had"

    def forget(self, jid: str) -> None:
        self.jobs.pop(jid, None)
        self.termed.pop(jid, None)

    def enforce(self) -> None:
        now = time.monotonic()
        for jid, (pid, limit, started) in self.jobs.items():
            sig = None
            if jid not in self.termed and now - started >= limit:
                self.termed[jid], sig = now, signal.SIGTERM
            elif jid in self.termed and now - self.termed[jid] >= self.grace_s:
                sig = signal.SIGKILL
            if sig == signal.SIGKILL:
                _kill_tree(pid)
            elif sig is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, sig)


def _kill_tree(pid: int) -> None:
    """SIGKILL a job's process group and its descendants: its runs are sessions of their own
    (jobs/capture.py), so a job killed before it could stop its run would leave the run behind."""
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    for d in descendants:
        with contextlib.suppress(psutil.Error):
            d.kill()


def _running(pid: int) -> bool:
    try:
        p = psutil.Process(pid)
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
