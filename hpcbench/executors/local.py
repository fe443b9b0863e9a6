"""Run jobs on this machine, as many at once as the cores allow.

Up to two jobs per core run at once; inside them, every build and run takes
core slots (hpcbench.jobs.slots) for as many cores as it keeps busy and only
while it runs, so a job whose widest run has two ranks does not hold two cores
through its one-rank build and runs, and runs never oversubscribe each other.
A run wider than the machine still runs, alone, oversubscribed, and its
timings say so. submitit's LocalExecutor starts every job at once with no such
packing, so this executor drives the same job entry point
(`python -m hpcbench.jobs.job`) itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from hpcbench.executors.base import Executor, JobState, Progress, register_executor
from hpcbench.jobs import slots
from hpcbench.jobs.records import JobResult, JobSpec, save_model


@register_executor("local")
class LocalExecutor(Executor):
    poll_s = 0.2

    def _pid_file(self, job: JobSpec) -> Path:
        return Path(job.work_dir) / "pid"

    def submit(self, jobs: list[JobSpec], progress: Progress | None = None) -> None:
        cores = self.site.total_cores()
        queue = sorted(jobs, key=lambda j: -j.width)  # widest first: their runs wait least at the end
        running: dict[str, tuple[subprocess.Popen, JobSpec]] = {}
        done = 0
        counts = Counter()
        try:
            while queue or running:
                # Admission only (the slots share the cores between runs): twice as many
                # jobs as cores, so one-rank work fills the gaps around wide runs.
                while queue and len(running) < 2 * cores:
                    job = queue.pop(0)
                    running[job.job_id] = (self._start(job), job)
                for jid, (proc, job) in list(running.items()):
                    if proc.poll() is not None:
                        del running[jid]
                        self._pid_file(job).unlink(missing_ok=True)
                        if not self.campaign.finished(jid) and not (Path(job.work_dir) / "cancelled.json").is_file():
                            # The job process itself died (killed, out of memory): record why.
                            save_model(Path(job.record_path), JobResult(
                                job_id=jid, agent=job.agent, problem=job.problem, attempt=job.attempt,
                                status="error", reason=f"job process exited {proc.returncode} without a record"))
                        done += 1
                counts = Counter(pending=len(queue), running=len(running), done=done)
                if progress:
                    progress(counts)
                time.sleep(self.poll_s)
        except KeyboardInterrupt:
            for proc, _ in running.values():
                os.killpg(proc.pid, signal.SIGTERM)
            raise

    def _start(self, job: JobSpec) -> subprocess.Popen:
        Path(job.work_dir).mkdir(parents=True, exist_ok=True)
        spec = Path(self.campaign.specs_dir) / f"{job.job_id}.json"
        log = open(Path(job.work_dir) / "job.log", "wb")  # noqa: SIM115 (owned by the child)
        env = {**os.environ, slots.ENV: f"{self._slots_dir()}:{self.site.total_cores()}"}
        proc = subprocess.Popen([sys.executable, "-m", "hpcbench.jobs.job", str(spec)], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True, env=env)
        log.close()
        self._pid_file(job).write_text(str(proc.pid))
        return proc

    def _slots_dir(self) -> Path:
        return Path(self.campaign.work_dir) / ".core-slots"

    def _alive(self, job: JobSpec) -> bool:
        try:
            os.kill(int(self._pid_file(job).read_text()), 0)
            return True
        except (OSError, ValueError):
            return False

    def states(self, jobs: list[JobSpec]) -> dict[str, JobState]:
        out: dict[str, JobState] = {}
        for j in jobs:
            if self.campaign.finished(j.job_id):
                out[j.job_id] = "done"
            elif self._pid_file(j).is_file() and self._alive(j):
                out[j.job_id] = "running"
            else:
                out[j.job_id] = "pending"
        return out

    def cancel(self, jobs: list[JobSpec]) -> int:
        n = 0
        for j in jobs:
            if self._pid_file(j).is_file() and self._alive(j):
                os.killpg(int(self._pid_file(j).read_text()), signal.SIGTERM)
                n += 1
        return n
