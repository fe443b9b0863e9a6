"""Campaigns on a REAL single-node Slurm cluster with accounting (munge, MariaDB, slurmdbd,
slurmctld, slurmd from Debian), started by scripts/slurm-test-cluster.sh: sbatch job
arrays, sacct, scancel, Slurm's walltime signal, srun --mpi=pmix launching Open MPI ranks.

Kept small (2 problems) because the test machine has 2 cores."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.clusters import read_ledger, sacct_states, site_variant
from tests.conftest import QUICK, hpcbench

pytestmark = [pytest.mark.slurm, pytest.mark.petsc]


def _report(out: Path) -> dict:
    hpcbench("collect", str(out))
    hpcbench("score", str(out))
    rows = json.loads(hpcbench("report", str(out), "--format", "json").stdout)["submissions"]
    return {(r["agent"], r["problem"]): r for r in rows}


def _deterministic(row: dict) -> dict:
    """Evaluator scores that do not depend on the machine's speed or a judge."""
    return {k: v["score"] for k, v in row["evaluators"].items()
            if v["status"] == "scored" and k != "execution_time"}


def test_reference_campaign_through_sbatch_arrays_and_sacct(slurm_cluster, sample_campaign, tmp_path):
    out = tmp_path / "c"
    # Variables of an enclosing Slurm job must not reach the new jobs (sbatch exports the environment).
    env_leak = {"SLURM_JOB_ID": "999999", "SLURM_NTASKS": "64", "SBATCH_PARTITION": "nope"}
    os.environ.update(env_leak)
    try:
        # the quick profile, as the local sample campaign its scores are compared with
        hpcbench("submit", "--site", "ci-slurm", "--profile", str(QUICK), "--problems", "vec-scatter,rosenbrock",
                 "--out", str(out))
    finally:
        for k in env_leak:
            os.environ.pop(k)
    ledger = read_ledger(out)
    assert set(ledger["jobs"]) == {"reference__vec-scatter__1", "reference__rosenbrock__1"}
    # One sbatch per resource shape (1 core for rosenbrock, 2 for the 3-rank vec-scatter).
    assert ledger["submit_calls"] == len(ledger["arrays"]) == 2
    script = Path(ledger["arrays"][0]["script"]).read_text()
    assert "#SBATCH --signal=B:USR2@45" in script and "\nexec " in script
    hpcbench("wait", str(out), "--timeout", "400")
    ids = [e["sched_id"] for e in read_ledger(out)["jobs"].values()]
    acct = sacct_states(ids)
    assert all(acct.get(i) == "COMPLETED" for i in ids), acct
    for jid, e in read_ledger(out)["jobs"].items():
        rec = json.loads((out / "records" / f"{jid}.json").read_text())
        assert rec["status"] == "done" and rec["scheduler_job_id"] == e["sched_id"].split("_")[0]
        assert rec["runs"][0]["command"][:2] == ["srun", "--mpi=pmix"]
        # srun outside, each rank in its own bubblewrap sandbox; the build sandboxed whole
        cmd = rec["runs"][0]["command"]
        assert any(Path(a).name == "bwrap" for a in cmd) and cmd.index("--") > cmd.index("srun")
        assert rec["isolation"] == rec["build"]["isolation"] == "bwrap"
        assert all(r["isolation"] == "bwrap" for r in rec["runs"])
        assert not (out / "work" / jid / "build").exists()  # removed once the record was written
    rows = _report(out)
    local = json.loads(hpcbench("report", str(sample_campaign), "--format", "json").stdout)["submissions"]
    local = {(r["agent"], r["problem"]): r for r in local}
    for key, row in rows.items():
        assert row["gates_passed"], row["why"]
        assert _deterministic(row) == _deterministic(local[key]), key


def test_cancel_mid_campaign_then_resume_reruns_only_it(slurm_cluster, slow_tree, tmp_path):
    out = tmp_path / "c"
    args = ["--site", "ci-slurm", "--profile", str(QUICK), "--submissions", str(slow_tree), "--problems", "rosenbrock",
            "--out", str(out)]
    hpcbench("submit", *args)
    slow = "slow-coder__rosenbrock__1"
    # until the slow job runs, past its start-up: its first run has made its folders under runs/
    for _ in range(120):
        if f"running   {slow}" in hpcbench("status", str(out)).stdout and \
                any((out / "work" / slow / "runs").glob("*/logs")):
            break
        time.sleep(0.5)
    else:
        pytest.fail(hpcbench("status", str(out)).stdout)
    assert "cancelled 1 job" in hpcbench("cancel", str(out), "--job", slow).stdout
    waited = hpcbench("wait", str(out), "--timeout", "300").stdout
    assert "cancelled: 1" in waited and "done: 1" in waited
    first = read_ledger(out)
    assert sacct_states([first["jobs"][slow]["sched_id"]])[first["jobs"][slow]["sched_id"]] == "CANCELLED"
    assert not (out / "records" / f"{slow}.json").exists()  # no result: resume must rerun it
    partial = json.loads((out / "work" / slow / "cancelled.json").read_text())
    assert partial["status"] == "cancelled" and "cancelled" in partial["reason"]
    ref_record = (out / "records" / "reference__rosenbrock__1.json").read_text()

    resumed = hpcbench("submit", *args).stderr
    assert "1 already done" in resumed and "submitted 1 jobs" in resumed
    second = read_ledger(out)
    assert second["submit_calls"] == first["submit_calls"] + 1
    assert second["jobs"]["reference__rosenbrock__1"] == first["jobs"]["reference__rosenbrock__1"]
    assert second["jobs"][slow]["sched_id"] != first["jobs"][slow]["sched_id"]
    assert second["jobs"][slow]["history"] == [f"{first['jobs'][slow]['sched_id']}: CANCELLED"]
    assert (out / "records" / "reference__rosenbrock__1.json").read_text() == ref_record

    # A submission to a partition that does not exist: a clear error, and what was submitted stays.
    hpcbench("cancel", str(out))
    hpcbench("wait", str(out), "--timeout", "120")
    before = read_ledger(out)
    bad = site_variant(tmp_path, "ci-slurm-bad", **{"    partition: debug": "    partition: nope",
                                                     "  - name: short": "  - name: nope\n  - name: short"})
    p = hpcbench("submit", "--site", str(bad), *args[2:], check=False)
    assert p.returncode != 0 and "sbatch refused" in p.stderr and "partition nope" in p.stderr, p.stderr
    assert "nvalid partition" in p.stderr, p.stderr  # Slurm's own words
    after = read_ledger(out)
    assert after["jobs"] == before["jobs"] and after["submit_calls"] == before["submit_calls"] + 1
    assert (out / "records" / "reference__rosenbrock__1.json").read_text() == ref_record


def test_job_over_its_walltime_records_timeout(slurm_cluster, slow_tree, tmp_path):
    out = tmp_path / "c"
    site = site_variant(tmp_path, "ci-slurm-short", **{
        "    partition: debug": "    partition: short",
        "  signal_margin_s: 45": "  signal_margin_s: 10\n  walltime_min: 1",
        "timing_repeats: 3": "timing_repeats: 2", "valgrind: true": "valgrind: false"})
    hpcbench("submit", "--site", str(site), "--submissions", str(slow_tree), "--problems", "rosenbrock",
             "--out", str(out))
    waited = hpcbench("wait", str(out), "--timeout", "300").stdout
    assert "timeout: 1" in waited, waited
    rec = json.loads((out / "records" / "slow-coder__rosenbrock__1.json").read_text())
    assert rec["status"] == "timeout"
    assert "walltime (60 s)" in rec["reason"] and "SIGUSR2" in rec["reason"]
    assert rec["build"]["exit_code"] == 0  # what finished before the signal is kept
    row = _report(out)[("slow-coder", "rosenbrock")]
    assert row["failed_gate"] == "execution" and "timed out" in row["why"]


def test_sacct_down_falls_back_to_squeue_and_scontrol(slurm_cluster, tmp_path, monkeypatch):
    """Accounting unreachable (as without slurmdbd): states still come from the controller."""
    from hpcbench.executors.slurm import SlurmBackend
    from hpcbench.site import load_site

    sid = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "-p", "debug", "--wrap", "sleep 4"],
                         capture_output=True, text=True, check=True).stdout.strip()
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "sacct").write_text("#!/bin/sh\necho 'sacct: error: Problem talking to the database: "
                                "Connection refused' >&2\nexit 1\n")
    (shim / "sacct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    from hpcbench.executors.schedcmd import Policy

    backend = SlurmBackend(load_site("ci-slurm"), tmp_path, tmp_path)
    backend.query = Policy(timeout_s=30, tries=3, backoff_s=0.01)
    assert backend.poll([sid])[sid].state in ("PENDING", "RUNNING", "CONFIGURING")
    assert backend.sacct_failures == 1  # retried (schedcmd), then fell back
    for _ in range(60):
        state = backend.poll([sid])[sid].state
        if state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
            break
        time.sleep(0.5)
    assert state == "COMPLETED"  # from scontrol: squeue no longer lists it


def test_doctor_on_the_cluster_runs_mpi_through_srun(slurm_cluster):
    p = hpcbench("doctor", "--site", "ci-slurm")
    out = p.stdout
    assert "scheduler: sacct" in out and "MISSING" not in out
    assert "srun" in out and "2 ranks" in out  # a one-job check through the launcher
    assert "problem scatter-cuda" in out and "ruled out" in out  # no CUDA build here
