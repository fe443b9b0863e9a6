"""Interrupted and concurrent `hpcbench run` (issue 9), with real driver processes, real
signals and a real slow PETSc program: one writer per campaign folder, a rerun after
SIGKILL adopts the jobs still running instead of starting them twice, Ctrl-C stops
the jobs and exits 130."""

import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from hpcbench.jobs.records import JobResult
from hpcbench.plan.locking import campaign_lock
from tests.conftest import profile_file

pytestmark = pytest.mark.petsc

ROOT = Path(__file__).resolve().parent.parent
SLOW_S = 12
JOB = "slowpoke__vec-scatter__1"

# Sleeps in every run (each run starts in a fresh folder of its own, so the marker never
# survives to the next); prints the quantities vec-scatter declares. The campaign's profile runs
# one case, once, so a job is one such run (and the reference's).
SLOW_C = r"""/* Sleeps once per job run folder, then prints the output contract. */
#include <petscsys.h>
#include <unistd.h>
int main(int argc, char **argv)
{
  PetscMPIInt rank;
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (rank == 0 && access("slow.done", F_OK) != 0) {
    FILE *f;
    sleep(SLOW_S);
    f = fopen("slow.done", "w");
    if (f) fclose(f);
  }
  PetscCallMPI(MPI_Barrier(PETSC_COMM_WORLD));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "sum: 1\nnorm2: 1\nweighted_sum: 1\nfirst_last: 0 1\n"));
  PetscCall(PetscFinalize());
  return 0;
}
""".replace("SLOW_S", str(SLOW_S))



@pytest.fixture
def setup(tmp_path):
    tree = tmp_path / "tree" / "slowpoke" / "vec-scatter" / "1"
    tree.mkdir(parents=True)
    (tree / "main.c").write_text(SLOW_C)
    (tree / "submission.json").write_text(json.dumps({"entry": "main.c", "files": ["main.c"]}))
    out = tmp_path / "c"
    one_run = profile_file("one-run", timing_repeats=0, held_out=False, cases="cheapest")
    args = ["run", "--profile", str(one_run), "--agent", f"dir:{tmp_path / 'tree'}", "--problems", "vec-scatter",
            "--out", str(out)]
    started: list[subprocess.Popen] = []

    def start(*extra: str) -> subprocess.Popen:
        # SIGINT as a terminal's Ctrl-C finds it: a process started with SIGINT ignored (nohup, `&`,
        # or a test worker a library left so: twice in the whole suite, never alone) keeps it
        # ignored, and Python then installs no KeyboardInterrupt handler
        p = subprocess.Popen([str(Path(sys.executable).parent / "hpcbench"), *args, *extra], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        started.append(p)
        return p

    yield out, start
    for p in started:  # never leave a driver (or its jobs) behind a failed test
        if p.poll() is None:
            p.kill()
            p.wait()
    _kill_everything_under(out)


def _kill_everything_under(root: Path) -> None:
    for proc in psutil.process_iter():
        try:
            if str(root) in proc.cwd() or any(str(root) in a for a in proc.cmdline()):
                proc.kill()
        except psutil.Error:
            continue


def _procs_under(root: Path) -> list[str]:
    out = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and (
                    str(root) in proc.cwd() or any(str(root) in a for a in proc.cmdline())):
                out.append(" ".join(proc.cmdline()))
        except psutil.Error:
            continue
    return out


def _wait_for(cond, timeout_s: float, what: str) -> None:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout_s, f"timed out waiting for {what}"
        time.sleep(0.2)


def _slow_program_running(out: Path) -> bool:
    """The job was built and its first run is sleeping (lease written, its run folder made: the
    sandbox's processes see it as work/<job>/run, bwrap itself as the host folder under runs/)."""
    work = out / "work" / JOB
    return (work / "lease.json").is_file() and any((work / "runs").glob("*/run")) and \
        bool(_procs_under(work / "run") or _procs_under(work / "runs"))


def _record(out: Path) -> JobResult:
    return JobResult.model_validate_json((out / "records" / f"{JOB}.json").read_text())


def test_a_second_writer_is_refused_and_one_that_waits_goes_after_the_first(setup):
    """Before: two `hpcbench run` into one --out corrupted the campaign (the second deleted the
    first's staged reference and exited 0 with a wrong report)."""
    out, start = setup
    first = start()
    _wait_for(lambda: (out / ".hpcbench.lock.json").is_file(), 60, "the first driver's lock")
    assert json.loads((out / ".hpcbench.lock.json").read_text())["pid"] == first.pid
    second = start()
    _, err = second.communicate(timeout=60)
    assert second.returncode == 2, err
    assert f"in use by pid {first.pid}" in err and "--wait-lock" in err
    assert first.poll() is None  # the first was not disturbed
    waiter = start("--wait-lock")
    time.sleep(3)
    assert waiter.poll() is None and first.poll() is None  # waiting, neither refused nor running beside
    _, err1 = first.communicate(timeout=240)
    assert first.returncode == 0, err1
    _, err2 = waiter.communicate(timeout=240)
    assert waiter.returncode == 0, err2
    assert f"waiting for {out}: in use by pid {first.pid}" in err2
    assert "2 jobs, 2 already done" in err2  # it ran after the first, on its results
    assert _record(out).status == "done"


def test_a_rerun_after_sigkill_adopts_the_running_job_instead_of_starting_it_twice(setup):
    """Before: rerunning started every in-flight job a second time while its orphan still ran in
    the same work folder (records written twice, logs truncated)."""
    out, start = setup
    first = start()
    _wait_for(lambda: _slow_program_running(out), 120, "the slow program to start")
    lease = json.loads((out / "work" / JOB / "lease.json").read_text())
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    killed_at = dt.datetime.now(dt.timezone.utc)
    assert psutil.pid_exists(lease["pid"])  # the orphan job still runs
    log_before = (out / "work" / JOB / "job.log").stat().st_ino
    second = start()
    _, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    assert "still running from an earlier driver" in err and JOB in err
    rec = _record(out)
    assert rec.status == "done"
    assert dt.datetime.fromisoformat(rec.started) < killed_at  # the orphan's record, not a second start
    assert (out / "work" / JOB / "job.log").stat().st_ino == log_before
    assert not (out / "work" / JOB / "lease.json").exists()


def test_a_rerun_after_sigkill_reruns_a_job_whose_process_died(setup):
    out, start = setup
    first = start()
    _wait_for(lambda: _slow_program_running(out), 120, "the slow program to start")
    lease = json.loads((out / "work" / JOB / "lease.json").read_text())
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    os.killpg(lease["pid"], signal.SIGKILL)  # the job dies with its driver
    _wait_for(lambda: not psutil.pid_exists(lease["pid"]) or
              psutil.Process(lease["pid"]).status() == psutil.STATUS_ZOMBIE, 10, "the job to die")
    killed_at = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    second = start()
    _, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    adopted = [ln for ln in err.splitlines() if "still running from an earlier driver" in ln]
    assert not any(JOB in ln for ln in adopted), err  # dead: not adopted, rerun
    rec = _record(out)
    assert rec.status == "done" and dt.datetime.fromisoformat(rec.started) >= killed_at


def test_ctrl_c_stops_the_jobs_records_nothing_and_exits_130(setup):
    out, start = setup
    driver = start()
    _wait_for(lambda: _slow_program_running(out), 120, "the slow program to start")
    lease = json.loads((out / "work" / JOB / "lease.json").read_text())
    t0 = time.monotonic()
    ignored = int(re.search(r"SigIgn:\s*([0-9a-f]+)", Path(f"/proc/{driver.pid}/status").read_text()).group(1), 16)
    worker = re.search(r"SigIgn:\s*([0-9a-f]+)", Path("/proc/self/status").read_text()).group(1)
    assert not ignored & (1 << (signal.SIGINT - 1)), f"the driver ignores SIGINT (this worker's SigIgn {worker})"
    os.kill(driver.pid, signal.SIGINT)
    _, err = driver.communicate(timeout=60)
    assert driver.returncode == 130, f"this worker's SigIgn {worker}\n{err}"
    assert "interrupted" in err and time.monotonic() - t0 < SLOW_S  # stopped, not waited for
    assert not psutil.pid_exists(lease["pid"]) or psutil.Process(lease["pid"]).status() == psutil.STATUS_ZOMBIE
    _wait_for(lambda: not _procs_under(out), 10, "every process of the campaign to end")
    assert not (out / "records" / f"{JOB}.json").exists()  # nothing unfinished recorded as done
    assert not (out / "work" / JOB / "lease.json").exists()


def test_the_lock_is_released_when_its_holder_is_killed(tmp_path):
    """flock belongs to the process: SIGKILL of a holder never leaves the folder locked."""
    code = (f"from hpcbench.plan.locking import campaign_lock; import time\n"
            f"with campaign_lock({str(tmp_path)!r}):\n    print('held', flush=True); time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    from hpcbench.plan.locking import CampaignBusy

    with pytest.raises(CampaignBusy, match=f"pid {holder.pid}"), campaign_lock(tmp_path):
        pass
    holder.kill()
    holder.wait()
    with campaign_lock(tmp_path):
        pass
