"""What Slurm and PBS executors share: a ledger of what was submitted, polling through a
backend, the scheduler's final state turned into a recorded outcome, retries, and `wait`.

    <campaign>/scheduler/ledger.json   job -> scheduler id, tries, last state (atomic writes)
    <campaign>/scheduler/submitit/     batch scripts, pickles and logs (on the shared file system)

A job writes its own record. The driver writes one only where the job could not: it
never started, died without a word, or was killed at the limit before its handler ran.
Outcomes by scheduler state:
    COMPLETED/FAILED with a record   the record (done, error, or timeout from USR2)
    TIMEOUT                          timeout: a result, never retried
    CANCELLED                        cancelled: no record, `submit --resume` reruns it
    NODE_FAIL, PREEMPTED, BOOT_FAIL  resubmitted up to site.batch.retries, then error
    OUT_OF_MEMORY                    error (a result: the program needed more memory)
    exit 75 (jobs/diskfull.py)       the file system was full: rerun where room came back, else
                                     left unrecorded for `submit --resume`
    FAILED/COMPLETED without record  error, with the job log's tail
    PENDING, RUNNING, REQUEUED, ...  still active
Scheduler commands have timeouts and retries (executors/schedcmd.py). A scheduler that does not
answer is "unreachable": every open job's state is "unknown", nothing is recorded, `status` and
`wait` say so. A job is recorded as lost only when the scheduler answered and did not know it,
on every poll for LOST_AFTER_S, and its own record and work folder showed no sign of it either."""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from abc import abstractmethod
from collections import Counter
from pathlib import Path

from pydantic import BaseModel

from hpcbench.errors import HpcbenchError
from hpcbench.executors.backend import Backend, SchedInfo
from hpcbench.executors.base import Executor, JobDetail, JobState, Progress
from hpcbench.executors.schedcmd import SchedulerUnreachable
from hpcbench.executors.shapes import ArrayPlan, plan_arrays, resolve_account
from hpcbench.jobs import diskfull
from hpcbench.jobs.interrupt import SCHEDULER_JOB_ID_ENV
from hpcbench.jobs.records import JobResult, JobSpec, JobStatus, save_model, write_atomic
from hpcbench.jobs.resume import keep_for_resume
from hpcbench.schedulers.base import ENV as SCHEDULER_ENV
from hpcbench.schedulers.base import view_class

ACTIVE = {"PENDING", "RUNNING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SUSPENDED",
          "CONFIGURING", "COMPLETING", "STOPPED", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD", "HELD", "QUEUED",
          "EXITING", "BEGUN", "WAITING", "TRANSIT", "MOVED"}
RETRY = {"NODE_FAIL", "PREEMPTED", "BOOT_FAIL"}
LOST_AFTER_S = 600.0


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class Entry(BaseModel):
    sched_id: str
    array_id: str
    tries: int = 1
    submitted: str = ""
    submitted_ts: float = 0.0
    state: str = "PENDING"
    outcome: str = ""  # set once the job is over: done | timeout | cancelled | error
    history: list[str] = []  # earlier tries: "<id>: <state>"
    packed: bool = False  # one of many jobs in one allocation (executors/pack.py)
    unknown_since: float = 0.0  # when the scheduler, answering, first did not know it (0: it knows it)


class ArrayRecord(BaseModel):
    array_id: str
    name: str
    jobs: int
    walltime_min: int
    script: str = ""
    submitted: str = ""


class Ledger(BaseModel):
    scheduler: str
    account: str = ""
    jobs: dict[str, Entry] = {}
    arrays: list[ArrayRecord] = []
    submit_calls: int = 0  # sbatch / qsub invocations for this campaign


END_POLL_S = 10.0  # at the end of a campaign the scheduler is asked no more often than this


def _doze(active: list[JobSpec], poll_s: float) -> None:
    """Sleep until the next poll of the scheduler, or less: once every job still active has
    written its record, `END_POLL_S` after the last poll (where the site polls less often), so
    that `--wait` returns within seconds of the last result rather than a whole poll (60 s on
    the centres' sites) later. It asked every half second until the scheduler said the jobs
    ended: sacct and qstat go to the centre's shared controller and database, which its users
    are asked to query no more often than every few seconds (a site whose own poll_s is shorter,
    the test cluster's 2 s, keeps it)."""
    start = time.monotonic()
    end = start + poll_s
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(0.5, left))
        if time.monotonic() - start >= END_POLL_S and active and all(Path(j.record_path).is_file() for j in active):
            return


def _record_status(path: Path) -> str:
    try:
        return json.loads(path.read_text()).get("status", "done")
    except (OSError, ValueError):
        return ""


def _exit_status(code: str) -> int | None:
    """The job script's exit status from the scheduler's exit code (Slurm "75:0", PBS "75")."""
    head = code.split(":", 1)[0].strip()
    return int(head) if head.isdigit() else None


def _lost(job: JobSpec, e: Entry) -> bool:
    """Lost: the scheduler, answering, has not known the job for LOST_AFTER_S (and not within that
    time of its submission), and the job's own traces say nothing else: no record, nothing of its
    work folder changed over that time."""
    now = time.time()
    if not e.unknown_since or now - e.unknown_since < LOST_AFTER_S or now - e.submitted_ts < LOST_AFTER_S:
        return False
    if Path(job.record_path).is_file():
        return False
    work = Path(job.work_dir)
    try:
        latest = max([work.stat().st_mtime, *(p.stat().st_mtime for p in work.iterdir())]) if work.is_dir() else 0.0
    except OSError:
        latest = now
    return now - latest >= LOST_AFTER_S


class BatchExecutor(Executor):
    """A campaign's jobs as scheduler arrays. `submit` returns once they are queued.
    `account`: --account, else $HPCBENCH_ACCOUNT (see shapes.resolve_account)."""

    batch = True

    def packing(self) -> bool:
        """One allocation per variant: --pack/--no-pack, else the site's exclusive_nodes."""
        return self.site.exclusive_nodes if self.pack is None else self.pack

    @abstractmethod
    def make_backend(self) -> Backend: ...

    @property
    def sched_dir(self) -> Path:
        return self.campaign.root / "scheduler"

    @property
    def ledger_path(self) -> Path:
        return self.sched_dir / "ledger.json"

    def backend(self) -> Backend:
        if not hasattr(self, "_backend"):
            self._backend = self.make_backend()
        return self._backend

    def load_ledger(self) -> Ledger:
        if self.ledger_path.is_file():
            try:
                return Ledger.model_validate_json(self.ledger_path.read_text())
            except ValueError as e:
                raise HpcbenchError(f"{self.ledger_path}: unreadable ledger ({e}); it lists what was "
                                    "submitted, restore it or cancel the campaign's jobs by hand") from None
        return Ledger(scheduler=self.scheduler)

    def save_ledger(self, ledger: Ledger) -> None:
        write_atomic(self.ledger_path, ledger.model_dump_json(indent=1))

    # ------------------------------------------------------------------ submit
    def plans(self, jobs: list[JobSpec]) -> list[ArrayPlan]:
        """The arrays (or packed allocations, executors/pack.py) to submit; each job is told its
        scheduler (SCHEDULER_ENV) and id (SCHEDULER_JOB_ID_ENV, copied from the variable the
        scheduler's allocation view names: one source of it, hpcbench/schedulers/)."""
        from hpcbench.executors.pack import plan_packs

        plans: list[ArrayPlan] = list(plan_packs(jobs, self.site)) if self.packing() else plan_arrays(jobs, self.site)
        job_id_env = view_class(self.scheduler).job_id_env
        for p in plans:  # the job's allocation view (hpcbench/schedulers/) is this scheduler's
            p.setup = [*p.setup, f"export {SCHEDULER_ENV}={self.scheduler}"]
            if job_id_env:
                p.setup = [*p.setup, f'export {SCHEDULER_JOB_ID_ENV}="${{{job_id_env}:-}}"']
        return plans

    def dry_run(self, jobs: list[JobSpec]) -> list[tuple[ArrayPlan, str]]:
        from hpcbench.executors import pack

        account = resolve_account(self.site, self.account)
        out: list[tuple[ArrayPlan, str]] = []
        for p in self.plans(jobs):
            if isinstance(p, pack.PackPlan):
                key = f"{p.name}-0"
                path = self.campaign.root / "scheduler" / "pack" / f"{key}.json"
                out.append((p, self.backend().render_packed(p, account, path)))
            else:
                out.append((p, self.backend().render(p, account)))
        return out

    def submit(self, jobs: list[JobSpec], progress: Progress | None = None) -> None:
        account = resolve_account(self.site, self.account)  # before anything is submitted
        ledger = self.load_ledger()
        ledger.account = account or ledger.account
        active = self._active_ids(ledger, jobs)
        todo = [j for j in jobs if j.job_id not in active]
        if len(todo) < len(jobs):
            print(f"{len(jobs) - len(todo)} jobs are still queued or running: not submitted again",
                  file=sys.stderr)
        self._submit_arrays(ledger, todo, account)

    def _submit_arrays(self, ledger: Ledger, jobs: list[JobSpec], account: str, retry: bool = False) -> None:
        from hpcbench.executors import pack

        for plan in self.plans(jobs):
            packed = isinstance(plan, pack.PackPlan)
            for j in plan.jobs:  # a fresh try: leftovers of the last one must not be mistaken for it
                keep_for_resume(Path(j.work_dir))  # ... but its finished runs are not redone (jobs/resume.py)
            try:
                if isinstance(plan, pack.PackPlan):
                    array_id, script = self.backend().submit_packed(self.campaign, plan, account, self.baseline_ranks)
                    ids = [array_id] * len(plan.jobs)
                else:
                    array_id, ids, script = self.backend().submit_array(plan, account)
            except HpcbenchError as e:
                done = sum(1 for e_ in ledger.jobs.values() if not e_.outcome)
                raise HpcbenchError(f"{e}\n(nothing of this array was submitted; the {done} jobs submitted "
                                    f"earlier are kept in {self.ledger_path})") from None
            finally:
                ledger.submit_calls += 1
                self.save_ledger(ledger)
            ts = time.time()
            for j, sid in zip(plan.jobs, ids):
                old = ledger.jobs.get(j.job_id)
                tries = (old.tries + 1 if retry else old.tries) if old else 1
                history = ([*old.history, f"{old.sched_id}: {old.state}"] if old else [])
                ledger.jobs[j.job_id] = Entry(sched_id=sid, array_id=array_id, tries=tries, submitted=now_iso(),
                                              submitted_ts=ts, history=history, packed=packed)
            ledger.arrays.append(ArrayRecord(array_id=array_id, name=plan.name, jobs=len(plan.jobs),
                                             walltime_min=plan.walltime_min, script=script, submitted=now_iso()))
            self.save_ledger(ledger)

    def _active_ids(self, ledger: Ledger, jobs: list[JobSpec]) -> set[str]:
        mine = {j.job_id: ledger.jobs[j.job_id] for j in jobs if j.job_id in ledger.jobs
                and not ledger.jobs[j.job_id].outcome}
        if not mine:
            return set()
        info = self._poll(list(mine.values()))
        return {jid for jid, e in mine.items() if info.get(e.sched_id, SchedInfo("UNKNOWN")).state in ACTIVE}

    # ------------------------------------------------------------------ follow
    def _poll(self, entries: list[Entry]) -> dict[str, SchedInfo]:
        return self.backend().poll([e.sched_id for e in entries]) if entries else {}

    unreachable = ""  # why the last poll got no answer from the scheduler ("" when it answered)

    def refresh(self, jobs: list[JobSpec]) -> tuple[dict[str, JobState], list[JobSpec]]:
        """Poll, record what ended, and return each job's state plus the jobs to retry."""
        ledger = self.load_ledger()
        open_entries = [ledger.jobs[j.job_id] for j in jobs if j.job_id in ledger.jobs
                        and not ledger.jobs[j.job_id].outcome]
        try:
            info: dict[str, SchedInfo] | None = self._poll(open_entries)
            self.unreachable = ""
        except SchedulerUnreachable as err:
            info, self.unreachable = None, str(err)
        states: dict[str, JobState] = {}
        retry: list[JobSpec] = []
        for j in jobs:
            e = ledger.jobs.get(j.job_id)
            rec = Path(j.record_path)
            if e is None:
                states[j.job_id] = self._state_of_record(rec) if rec.is_file() else "pending"
                continue
            if e.outcome:
                states[j.job_id] = self._state_of_record(rec) if rec.is_file() else (
                    "cancelled" if e.outcome == "cancelled" else "pending")
                continue
            if info is None:  # no answer: nothing is concluded, the job's own record aside
                states[j.job_id] = self._state_of_record(rec) if rec.is_file() else "unknown"
                continue
            si = info.get(e.sched_id) or SchedInfo("UNKNOWN")
            e.state = si.state
            e.unknown_since = (e.unknown_since or time.time()) if si.state == "UNKNOWN" else 0.0
            states[j.job_id] = self._reconcile(j, e, si, retry)
        self.save_ledger(ledger)
        return states, retry

    def _state_of_record(self, rec: Path) -> JobState:
        st = _record_status(rec)
        return "done" if st in ("done", "skipped") else "timeout" if st == "timeout" else "failed"

    def _write(self, job: JobSpec, e: Entry, status: JobStatus, reason: str) -> None:
        aside = Path(job.work_dir) / "cancelled.json"
        res = None
        if aside.is_file():  # the job's handler saved what it had before the kill
            try:
                res = JobResult.model_validate_json(aside.read_text())
            except ValueError:
                res = None
        if res is None:
            res = JobResult(job_id=job.job_id, agent=job.agent, problem=job.problem, attempt=job.attempt)
        res.status, res.reason = status, reason
        res.scheduler, res.scheduler_job_id = self.scheduler, e.sched_id
        res.finished = res.finished or now_iso()
        save_model(Path(job.record_path), res)
        aside.unlink(missing_ok=True)

    def _reconcile(self, job: JobSpec, e: Entry, si: SchedInfo, retry: list[JobSpec]) -> JobState:
        rec = Path(job.record_path)
        st = si.state
        if st in ACTIVE:
            return "running" if st in ("RUNNING", "COMPLETING") else "pending"
        if rec.is_file() and (st not in RETRY or e.packed):  # packed: finished before its allocation failed
            e.outcome = _record_status(rec) or "done"
            return self._state_of_record(rec)
        if e.packed and st not in RETRY:
            # Left over when its allocation ended (walltime, cancel): not run, and no result
            # of the program's; `submit --resume` runs it.
            e.outcome = "cancelled"
            return "cancelled"
        if st == "TIMEOUT":
            e.outcome = "timeout"
            self._write(job, e, "timeout", f"the scheduler ended the job at its walltime ({e.sched_id}: TIMEOUT)")
            return "timeout"
        if st == "CANCELLED" or (st in ("COMPLETED", "FAILED") and (Path(job.work_dir) / "cancelled.json").is_file()):
            # PBS: qdel's SIGTERM was caught, the partial record set aside and the job exited 0.
            e.outcome = "cancelled"
            return "cancelled"
        if st in RETRY:
            if e.tries <= self.site.batch.retries:
                rec.unlink(missing_ok=True)  # an interrupted run's record is not the result
                retry.append(job)
                return "retrying"
            e.outcome = "error"
            self._write(job, e, "error", f"{st} on every try ({e.tries}: {', '.join([*e.history, e.sched_id])})")
            return "failed"
        if st == "OUT_OF_MEMORY":
            e.outcome = "error"
            self._write(job, e, "error", f"the scheduler killed the job for exceeding its memory ({e.sched_id})")
            return "failed"
        if st == "UNKNOWN":
            if not _lost(job, e):
                return "unknown"
            e.outcome = "error"
            self._write(job, e, "error", f"the scheduler lost job {e.sched_id}: neither accounting nor the queue "
                                         f"knew it on any poll for {LOST_AFTER_S:.0f} s, and the job left no "
                                         "record and touched nothing of its work folder in that time")
            return "failed"
        if _exit_status(si.exit_code) == diskfull.EXIT_DISK_FULL and not rec.is_file():
            return self._disk_full(job, e, retry)
        e.outcome = "error"
        tail = self.backend().log_tail(e.sched_id)
        self._write(job, e, "error", f"job {e.sched_id} ended {st} (exit {si.exit_code or '?'}) without a record"
                                     + (f"; log tail:\n{tail}" if tail else ""))
        return "failed"

    def _disk_full(self, job: JobSpec, e: Entry, retry: list[JobSpec]) -> JobState:
        """The job found its file system full and wrote no record (jobs/job.py): no result of the
        program's. Run again where room came back, else left for `submit --resume`."""
        work = Path(job.work_dir)
        if e.tries <= self.site.batch.retries and not diskfull.is_full(work):
            retry.append(job)
            return "retrying"
        e.outcome = "cancelled"
        print(f"hpcbench: job {job.job_id} ({e.sched_id}) stopped: "
              f"{diskfull.full_message(work, 'the job could not write its results')}; not recorded: "
              "`submit --resume` runs it once there is room", file=sys.stderr)
        return "cancelled"

    def states(self, jobs: list[JobSpec]) -> dict[str, JobState]:
        return self.refresh(jobs)[0]

    def wait(self, jobs: list[JobSpec], progress: Progress | None = None, poll_s: float | None = None,
             max_wait_s: float | None = None) -> dict[str, JobState]:
        """Follow the jobs until none is active, resubmitting retryable failures."""
        poll_s = self.site.batch.poll_s if poll_s is None else poll_s
        limit_s = self.site.batch.max_wait_h * 3600 if max_wait_s is None else max_wait_s
        deadline = time.monotonic() + limit_s
        told = ""
        while True:
            states, retry = self.refresh(jobs)
            if self.unreachable != told:  # say when the scheduler stops answering, and when it is back
                told = self.unreachable
                print(f"hpcbench: scheduler unreachable, still waiting (jobs keep running; states are unknown "
                      f"until it answers): {told}" if told else "hpcbench: the scheduler answers again",
                      file=sys.stderr)
            if retry:
                ledger = self.load_ledger()
                self._submit_arrays(ledger, retry, ledger.account, retry=True)
                continue
            if progress:
                progress(Counter(states.values()))
            if not any(s in ("pending", "running", "unknown", "retrying") for s in states.values()):
                return states
            if time.monotonic() > deadline:
                raise HpcbenchError(f"gave up waiting after {limit_s:.0f} s with jobs still queued or running; "
                                    "they keep going: run `hpcbench wait` again later")
            _doze([j for j in jobs if states.get(j.job_id) in ("pending", "running", "unknown")], poll_s)

    def cancel(self, jobs: list[JobSpec]) -> int:
        ledger = self.load_ledger()
        open_e = [ledger.jobs[j.job_id] for j in jobs if j.job_id in ledger.jobs and not ledger.jobs[j.job_id].outcome]
        info = self._poll(open_e)
        # A packed job is cancelled with its whole allocation; only its unfinished jobs are counted.
        hit = [(j, e) for j in jobs if (e := ledger.jobs.get(j.job_id)) in open_e
               and info.get(e.sched_id, SchedInfo("UNKNOWN")).state in ACTIVE
               and not (e.packed and Path(j.record_path).is_file())]
        ids = sorted({e.sched_id for _, e in hit})
        if ids:
            self.backend().cancel(ids)
        return len(hit)

    def accounting(self, jobs: list[JobSpec]) -> Path | None:
        """Ask the scheduler's accounting about every allocation of these jobs that has ended and
        write scheduler/accounting.json (node-hours, elapsed, peak memory; executors/accounting.py)."""
        from hpcbench.executors import accounting

        ledger = self.load_ledger()
        members: dict[str, list[JobSpec]] = {}
        for j in jobs:
            e = ledger.jobs.get(j.job_id)
            if e is not None and e.outcome:
                members.setdefault(e.sched_id, []).append(j)
        if not members:
            return None
        usages = accounting.split_node_hours(self.backend().usage(sorted(members)), members)
        return accounting.write_usages(self.sched_dir, usages)

    def details(self, jobs: list[JobSpec]) -> dict[str, JobDetail]:
        ledger = self.load_ledger()
        return {j.job_id: JobDetail(e.sched_id, e.state, e.tries) for j in jobs
                if (e := ledger.jobs.get(j.job_id)) is not None}
