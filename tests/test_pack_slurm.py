"""A packed campaign on the REAL single-node Slurm test cluster (scripts/slurm-test-cluster.sh):
one sbatch for all jobs, their runs as `srun --exact` steps of that one job in sacct, then
scancel of the allocation and `submit --resume` running only what had not finished, down
to the run (a finished case of the stopped job is not redone). The same for `hpcbench sweep`:
one sbatch, the machine baseline and every point as steps of it, scancel, and the same command
again resuming only the points that had not finished."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from hpcbench.jobs.cores import parse_cpu_list
from tests.clusters import rosenbrock_tree, site_variant
from tests.conftest import QUICK, hpcbench

pytestmark = [pytest.mark.slurm, pytest.mark.petsc]

SLOWISH_C = r"""/* Slow on purpose: each run sleeps 4 s, so the allocation can be cancelled mid-job. */
#include <petscsys.h>
int main(int argc, char **argv)
{
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscSleep(4));
  PetscCall(PetscFinalize());
  return 0;
}
"""


def _tree(root: Path) -> Path:
    return rosenbrock_tree(root, "slowish-coder", SLOWISH_C)


def _sleeper(seconds: float, functions: int, tag: str) -> str:
    """A program whose runs sleep `seconds` and whose build compiles `functions` generated
    functions (a build of some seconds: the other job's runs go on meanwhile); `tag` keeps the
    build cache from answering for it."""
    body = "\n".join(f"static double f{i}(double x) {{ double s = 0; for (int k = 0; k < {i % 7 + 3}; k++) "
                     f"s += x * k + {i}; return s; }}" for i in range(functions))
    calls = " + ".join(f"f{i}(1.0)" for i in range(functions)) or "0"
    return (f"/* {tag} */\n#include <petscsys.h>\n{body}\nint main(int argc, char **argv)\n{{\n"
            f"  volatile double r = {calls};\n  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));\n"
            f"  PetscCall(PetscSleep({seconds}));\n  PetscCall(PetscFinalize());\n  return r < 0;\n}}\n")


def _until(cond, what: str, timeout: float = 240) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.5)
    pytest.fail(f"gave up waiting for {what}")


def _exact_step(cmd: list[str]) -> bool:
    """An `srun --exact` step: --exact among srun's own options (before `-n` and the program;
    the binding puts its --cpu-bind=cores ahead of it)."""
    return cmd[0] == "srun" and "--exact" in cmd[:cmd.index("-n")]


def test_packed_campaign_is_one_sbatch_of_steps_and_resume_reruns_only_the_rest(slurm_cluster, tmp_path):
    out = tmp_path / "c"
    args = ["--site", "ci-slurm", "--profile", str(QUICK), "--pack", "--agent", "reference", "--submissions",
            str(_tree(tmp_path / "t")), "--problems", "rosenbrock", "--out", str(out)]
    hpcbench("submit", *args)
    ledger = json.loads((out / "scheduler" / "ledger.json").read_text())
    assert ledger["submit_calls"] == 1 and len(ledger["jobs"]) == 2  # one sbatch for both jobs
    alloc = ledger["arrays"][0]["array_id"]
    assert {e["sched_id"] for e in ledger["jobs"].values()} == {alloc}
    slow, ref = "slowish-coder__rosenbrock__1", "reference__rosenbrock__1"
    # Cancel once the reference has its record and the slow job finished its first case (n6).
    # (each run has folders of its own under runs/, removed when it ends: n20's show n6 is done)
    _until(lambda: (out / "records" / f"{ref}.json").is_file()
           and any((out / "work" / slow / "runs").glob("*-n20-*")), "the first case")
    time.sleep(1.0)  # into the next run
    assert "cancelled 1 job" in hpcbench("cancel", str(out)).stdout
    waited = hpcbench("wait", str(out), "--timeout", "120").stdout
    assert "cancelled: 1" in waited and "done: 1" in waited, waited
    steps = subprocess.run(["sacct", "-n", "-P", "-j", alloc, "-o", "JobID,JobName,State"], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    ids = [s.split("|")[0] for s in steps]
    step_ids = [i for i in ids if "." in i and i.rsplit(".", 1)[1].isdigit()]  # N.0, N.1 ...: job steps
    assert ids[0] == alloc and f"{alloc}.batch" in ids
    ref_rec = json.loads((out / "records" / f"{ref}.json").read_text())
    assert all(s.startswith(f"{alloc}.") for s in step_ids)
    assert len(step_ids) >= len(ref_rec["runs"]) + 2  # the reference's runs and the slow job's, all steps
    assert all(_exact_step(r["command"]) and r["placement"]["packed"] for r in ref_rec["runs"])
    partial = json.loads((out / "work" / slow / "cancelled.json").read_text())
    done_n6 = {(r["kind"], r["wall_s"]) for r in partial["runs"] if r["case"] == "n6" and r["kind"] != "null"}
    assert len(done_n6) == 2  # instrumented and timed: the case finished before the cancel

    ref_text = (out / "records" / f"{ref}.json").read_text()
    resumed = hpcbench("submit", *args).stderr
    assert "1 already done" in resumed and "submitted 1 jobs" in resumed, resumed
    second = json.loads((out / "scheduler" / "ledger.json").read_text())
    assert second["submit_calls"] == 2 and second["jobs"][ref]["outcome"] == "done"
    assert second["jobs"][ref]["sched_id"] == alloc and second["jobs"][slow]["sched_id"] != alloc
    manifest = json.loads((out / "scheduler" / "pack" / "hpcbench-pack-cpu-1.json").read_text())
    assert [Path(p).stem for p in manifest["specs"]] == [slow]  # only what had not finished
    waited = hpcbench("wait", str(out), "--timeout", "240").stdout
    assert "done: 2" in waited, waited
    rec = json.loads((out / "records" / f"{slow}.json").read_text())
    assert rec["status"] == "done" and rec["extra"]["resumed_runs"] == "2"
    assert {(r["kind"], r["wall_s"]) for r in rec["runs"] if r["case"] == "n6" and r["kind"] != "null"} == done_n6
    assert any(r["case"] == "n20" and r["kind"] == "timing" and r["exit_code"] == 0 for r in rec["runs"])
    assert (out / "records" / f"{ref}.json").read_text() == ref_text  # nothing finished is redone


def test_sweep_is_one_sbatch_and_the_same_command_after_scancel_runs_only_the_rest(slurm_cluster, tmp_path):
    out = tmp_path / "sweep"
    args = ["--site", "ci-slurm", "--agent", "reference", "--problems", "advection1d", "--ranks", "1,2",
            "--sizes", "400000,800000", "--repeats", "2", "--out", str(out)]
    first = hpcbench("sweep", *args, "--no-wait")
    assert "no job has finished yet" in first.stderr, first.stderr
    ledger = json.loads((out / "scheduler" / "ledger.json").read_text())
    job = "reference__advection1d__1"
    assert ledger["submit_calls"] == 1 and list(ledger["jobs"]) == [job]
    alloc = ledger["jobs"][job]["sched_id"]
    runs = out / "work" / job / "runs"
    # Cancel once the first size (n400000) has its instrumented runs and both repeats at 1 and 2
    # ranks (timed interleaved: 1, 2, 1, 2): each run has a folder of its own while it runs
    # (numbered in order; the 7th, a null run, follows them).
    _until(lambda: any(int(p.name.split("-")[0]) >= 7 for p in runs.glob("*-*")), "the first sweep size")
    assert "cancelled 1 job" in hpcbench("cancel", str(out)).stdout
    waited = hpcbench("wait", str(out), "--timeout", "120").stdout
    assert "cancelled: 1" in waited, waited
    rows = subprocess.run(["sacct", "-n", "-P", "-j", alloc, "-o", "JobID,NTasks"], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    steps = [r.split("|")[0] for r in rows if r.split("|")[0].rsplit(".", 1)[-1].isdigit() and "." in r]
    partial = json.loads((out / "work" / job / "cancelled.json").read_text())
    assert all(s.startswith(f"{alloc}.") for s in steps)
    # the machine baseline (1 and 2 ranks) and the finished runs: all steps of the one allocation
    assert len(steps) >= len(partial["runs"]) + 2, (steps, len(partial["runs"]))
    kept = {(r["case"], r["ranks"], r["kind"], r["repeat"]): r["wall_s"] for r in partial["runs"]
            if r["case"] == "n400000" and r["kind"] != "null"}
    assert len(kept) == 6  # instrumented and two timed at each rank count: that size finished before the cancel
    assert (out / "machine" / "baseline-cpu.json").is_file()

    again = hpcbench("sweep", *args)  # resumes: one more allocation for what had not finished
    second = json.loads((out / "scheduler" / "ledger.json").read_text())
    assert second["submit_calls"] == 2 and second["jobs"][job]["sched_id"] != alloc, again.stderr
    rec = json.loads((out / "records" / f"{job}.json").read_text())
    assert rec["status"] == "done" and int(rec["extra"]["resumed_runs"]) >= 6
    assert {(r["case"], r["ranks"], r["kind"], r["repeat"]): r["wall_s"] for r in rec["runs"]
            if (r["case"], r["ranks"], r["kind"], r["repeat"]) in kept} == kept  # not redone
    timed = {(r["case"], r["ranks"]) for r in rec["runs"] if r["kind"] == "timing" and r["exit_code"] == 0}
    assert timed == {(f"n{n}", k) for n in (400000, 800000) for k in (1, 2)}
    assert all(r["placement"]["packed"] and _exact_step(r["command"]) for r in rec["runs"])
    assert "report:" in again.stdout and (out / "report" / "scaling.html").is_file(), again.stdout


def _interval(start: float, wall: float) -> tuple[float, float]:
    return start, start + wall


def test_builds_are_steps_of_their_own_and_no_run_shares_a_core_with_one(slurm_cluster, tmp_path, monkeypatch):
    """Slurm picks the cores of the runs' `srun --exact` steps; a build run in the batch step
    (pinned to a core slot's CPUs, which Slurm does not know of) could share its core with one.
    Each build is a step of its own (sacct: hpcbench-build), its CPUs are what the step saw, and
    no run that overlaps a build in time ran on one of its CPUs. With a centre's poll (60 s),
    `--wait` asks sacct at most every 10 s at the end (it asked every 0.5 s)."""
    tree = rosenbrock_tree(tmp_path / "t", "quick-coder", _sleeper(1, 0, str(tmp_path)))
    rosenbrock_tree(tmp_path / "t", "heavy-coder", _sleeper(0, 4000, str(tmp_path)))
    out = tmp_path / "c"
    site = site_variant(tmp_path, "ci-slurm-patient", **{"  poll_s: 2": "  poll_s: 60"})
    calls = tmp_path / "sacct.log"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real = shutil.which("sacct")
    (bindir / "sacct").write_text(f'#!/bin/sh\necho "$(date +%s.%N) $*" >> {calls}\nexec {real} "$@"\n')
    (bindir / "sacct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    hpcbench("submit", "--site", str(site), "--profile", str(QUICK), "--pack", "--wait", "--problems", "rosenbrock",
             "--submissions", str(tree), "--out", str(out))
    polls = [float(line.split()[0]) for line in calls.read_text().splitlines() if "JobID,State,ExitCode" in line]
    assert len(polls) >= 2 and min(b - a for a, b in zip(polls, polls[1:])) >= 9.5, polls
    ledger = json.loads((out / "scheduler" / "ledger.json").read_text())
    alloc = {e["sched_id"] for e in ledger["jobs"].values()}.pop()
    names = subprocess.run(["sacct", "-n", "-P", "-j", alloc, "-o", "JobID,JobName"], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    recs = {p.stem.split("__")[0]: json.loads(p.read_text()) for p in (out / "records").glob("*.json")}
    builds = [r["build"] for r in recs.values() if not r["build"].get("cached")]
    assert builds, "every build came from the cache: nothing compiled"
    # each compiled build (and the null program's) a step of the allocation, on the CPUs it says
    assert sum(n.endswith("|hpcbench-build") for n in names) >= len(builds), names
    assert all(b["cpus"] for b in builds), [b["cpus"] for b in builds]
    build = recs["heavy-coder"]["build"]
    assert not build.get("cached") and build["exit_code"] == 0, build.get("stderr", "")[-500:]
    # the build, a step Slurm started, in a tmpfs of disk_mb that its sandbox copied back itself
    # (jobs/sandbox.py disk_limited); each rank its own sandbox: the folders shared, watched
    assert build["disk_limit"] == "kernel (tmpfs)", build
    assert {r["disk_limit"] for r in recs["heavy-coder"]["runs"]} == {"watched every 0.2 s"}
    cpus = set(parse_cpu_list(build["cpus"]))
    lo, hi = _interval(build["started_at"], build["wall_s"])
    beside = [r for r in recs["quick-coder"]["runs"]
              if r["started_at"] < hi and r["started_at"] + r["wall_s"] > lo and r["affinity"]]
    assert beside, "no run of the other job overlapped the heavy build: nothing was shown"
    for r in beside:  # the other job's runs while it compiled: on other cores
        seen = {c for a in r["affinity"] for c in parse_cpu_list(a["cpus"])}
        assert not seen & cpus, (r["kind"], r["case"], sorted(seen), sorted(cpus))


def test_the_clusters_max_step_count_is_read_before_a_pack_is_submitted(slurm_cluster, tmp_path):
    from hpcbench.executors.slurm import SlurmBackend
    from hpcbench.site import load_site

    assert SlurmBackend(load_site("ci-slurm"), tmp_path, tmp_path).max_step_count() == 40000  # slurm.conf's default
