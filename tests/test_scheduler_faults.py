"""Scheduler commands that hang, fail or say nothing: each has a timeout and retries with backoff;
an unreachable scheduler is said so by `status`/`wait` and never turns a running job into "lost";
a job is lost only when the scheduler, answering, has not known it for the grace period and its
own record and work folder say nothing either. Stand-ins here are PATH shims around the real
Slurm clients (and the PBS stand-in of tests/fake_pbs), each saying what it replaces."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hpcbench.errors import HpcbenchError
from hpcbench.executors import batch as batch_mod
from hpcbench.executors import schedcmd
from hpcbench.jobs.records import JobResult, save_model
from hpcbench.plan.campaign import Campaign
from hpcbench.site import SiteConfig
from tests.test_sched_units import _Replay, _ReplayExecutor, _spec

FAST = schedcmd.Policy(timeout_s=1.0, tries=3, backoff_s=0.1)


def _shim(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("#!/bin/bash\n" + body + "\n")
    p.chmod(0o755)
    return p


def test_a_hanging_command_is_timed_out_retried_and_named(tmp_path):
    """Stand-in for a hung sacct: a script that sleeps."""
    sh = _shim(tmp_path, "sacct", "sleep 30")
    said = []
    t0 = time.monotonic()
    with pytest.raises(schedcmd.SchedulerUnreachable, match=r"sacct did not answer: no answer within 1 s \(3 tries"):
        schedcmd.call([str(sh)], FAST, notify=said.append)
    assert time.monotonic() - t0 < 10  # three tries of 1 s and the backoff, not 3 x 60 s in silence
    assert len(said) == 2 and "try 2 of 3" in said[0]


def test_a_connection_failure_is_retried_until_the_scheduler_answers(tmp_path):
    """Stand-in for a restarting slurmctld: fails twice with Slurm's own words, then answers."""
    n = tmp_path / "n"
    sh = _shim(tmp_path, "squeue", f'c=$(cat {n} 2>/dev/null || echo 0); echo $((c+1)) > {n}\n'
               'if [ "$c" -lt 2 ]; then echo "slurm_load_jobs error: Unable to contact slurm controller '
               '(connect failure)" >&2; exit 1; fi\necho "12_0|RUNNING"')
    p = schedcmd.call([str(sh)], FAST, notify=lambda m: None)
    assert p.returncode == 0 and p.stdout.strip() == "12_0|RUNNING" and n.read_text().strip() == "3"


def test_an_answer_that_is_an_error_is_not_retried(tmp_path):
    sh = _shim(tmp_path, "scontrol", 'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1')
    p = schedcmd.call([str(sh)], FAST, notify=lambda m: None)
    assert p.returncode == 1 and "Invalid job id" in p.stderr


def test_a_submission_that_timed_out_is_never_sent_again(tmp_path):
    log = tmp_path / "calls"
    sh = _shim(tmp_path, "sbatch", f"echo x >> {log}; sleep 30")
    with pytest.raises(schedcmd.SchedulerUnreachable, match="may or may not have reached the scheduler"):
        schedcmd.call([str(sh), "job.sh"], FAST, submission=True, notify=lambda m: None)
    assert log.read_text().count("x") == 1


def test_the_command_line_form_passes_output_and_status_through(tmp_path, capsys):
    sh = _shim(tmp_path, "sbatch", 'echo "Submitted batch job 42"')
    assert schedcmd.main(["--timeout", "5", "--tries", "2", "--submit", "--", str(sh), "f.sh"]) == 0
    assert "Submitted batch job 42" in capsys.readouterr().out
    hang = _shim(tmp_path, "hang", "sleep 30")
    assert schedcmd.main(["--timeout", "1", "--submit", "--", str(hang)]) == schedcmd.EXIT_UNREACHABLE


class _Down(_Replay):
    """The replay scheduler, with a switch that makes every poll go unanswered."""

    down = False

    def poll(self, ids):
        if self.down:
            raise schedcmd.SchedulerUnreachable("sacct did not answer: no answer within 30 s (3 tries over 96 s)")
        return super().poll(ids)


def _executor(tmp_path):
    site = SiteConfig(name="t", scheduler="slurm", partitions=[{"name": "p"}], batch={"account_required": False})
    ex = _ReplayExecutor(site, Campaign(tmp_path))
    ex._replay = _Down()
    return ex


def test_an_unanswered_poll_concludes_nothing_and_says_so(tmp_path, monkeypatch):
    """Before: one failed sacct/squeue call 600 s after submission wrote a "lost" record for a
    job that was still running."""
    ex = _executor(tmp_path)
    jobs = [_spec(tmp_path, "run"), _spec(tmp_path, "done")]
    ex.submit(jobs)
    ledger = ex.load_ledger()
    for e in ledger.jobs.values():
        e.submitted_ts -= 3600  # long after submission
    ex.save_ledger(ledger)
    save_model(Path(jobs[1].record_path), JobResult(job_id="done", agent="a", problem="p", attempt="1"))
    ex._replay.down = True
    states, _ = ex.refresh(jobs)
    assert states == {"run": "unknown", "done": "done"}
    assert "sacct did not answer" in ex.unreachable
    assert not Path(jobs[0].record_path).exists()
    assert not any(e.outcome for e in ex.load_ledger().jobs.values())  # nothing concluded


def test_lost_only_after_the_scheduler_answered_unknown_for_the_grace_period_and_the_job_shows_nothing(
        tmp_path, monkeypatch):
    ex = _executor(tmp_path)
    job = _spec(tmp_path, "gone")
    ex.submit([job])
    sid = ex.load_ledger().jobs["gone"].sched_id
    del ex._replay.states[sid]  # the scheduler answers and does not know it
    clock = [time.time() + batch_mod.LOST_AFTER_S + 10]  # long after submission
    monkeypatch.setattr(batch_mod.time, "time", lambda: clock[0])
    assert ex.refresh([job])[0]["gone"] == "unknown"  # first time unknown: the grace period starts
    clock[0] += batch_mod.LOST_AFTER_S / 2
    assert ex.refresh([job])[0]["gone"] == "unknown"
    # the job's work folder changed meanwhile: it is alive somewhere
    work = Path(job.work_dir)
    work.mkdir(parents=True)
    (work / "job.log").write_text("running\n")
    os.utime(work / "job.log", (clock[0], clock[0]))
    clock[0] += batch_mod.LOST_AFTER_S / 2 + 1
    assert ex.refresh([job])[0]["gone"] == "unknown"
    # an unanswered poll in between does not count, nor does it reset the answered "unknown"
    ex._replay.down = True
    assert ex.refresh([job])[0]["gone"] == "unknown"
    ex._replay.down = False
    clock[0] += batch_mod.LOST_AFTER_S
    assert ex.refresh([job])[0]["gone"] == "failed"
    rec = json.loads(Path(job.record_path).read_text())
    assert "the scheduler lost job" in rec["reason"] and "no record" in rec["reason"]


def test_a_job_the_scheduler_knows_again_starts_its_grace_period_over(tmp_path, monkeypatch):
    ex = _executor(tmp_path)
    job = _spec(tmp_path, "flaky")
    ex.submit([job])
    sid = ex.load_ledger().jobs["flaky"].sched_id
    clock = [time.time() + 2 * batch_mod.LOST_AFTER_S]
    monkeypatch.setattr(batch_mod.time, "time", lambda: clock[0])
    saved = ex._replay.states.pop(sid)
    ex.refresh([job])
    ex._replay.states[sid] = saved  # accounting caught up
    clock[0] += batch_mod.LOST_AFTER_S + 1
    assert ex.refresh([job])[0]["flaky"] == "pending"
    assert ex.load_ledger().jobs["flaky"].unknown_since == 0.0


def test_submit_refuses_to_guess_what_is_still_queued_when_the_scheduler_is_down(tmp_path):
    ex = _executor(tmp_path)
    job = _spec(tmp_path, "j")
    ex.submit([job])
    ex._replay.down = True
    with pytest.raises(HpcbenchError, match="sacct did not answer"):
        ex.submit([job])  # resubmitting a job that may still run would run it twice
    assert len(ex._replay.submitted) == 1


def test_pbs_qstat_failure_is_unreachable_not_unknown(tmp_path, monkeypatch):
    """PBS stand-in for a server that is down: qstat exits 1 with PBS's own words."""
    from hpcbench.executors.pbs import PbsBackend

    _shim(tmp_path / "bin", "qstat", 'echo "Connection refused" >&2; echo "qstat: cannot connect to server pbs1 '
          '(errno=111)" >&2; exit 1')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    site = SiteConfig(name="t", scheduler="pbs", partitions=[{"name": "p"}], batch={"account_required": False})
    be = PbsBackend(site, tmp_path / "pbs", tmp_path / "specs")
    be.query = FAST
    with pytest.raises(schedcmd.SchedulerUnreachable, match="cannot connect to server"):
        be.poll(["1[0].pbs1"])
    _shim(tmp_path / "bin", "qstat", 'echo "not json"')
    with pytest.raises(schedcmd.SchedulerUnreachable, match="not JSON"):
        be.poll(["1[0].pbs1"])

