"""Pure parts of the scheduler support: site configs, shapes and walltimes, sacct/squeue
parsing, the outcome of every scheduler state, the job's signal interpretation, and
`submit --dry-run` for every bundled site (no scheduler needed)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from hpcbench.errors import ConfigError, HpcbenchError
from hpcbench.executors.backend import Backend, SchedInfo
from hpcbench.executors.base import Executor, executor_class, executor_for
from hpcbench.executors.batch import BatchExecutor
from hpcbench.executors.shapes import job_walltime_s, plan_arrays, resolve_account
from hpcbench.executors.slurm import (
    clean_env,
    exec_command,
    expand_array_id,
    parse_directives,
    parse_sacct,
    parse_squeue,
)
from hpcbench.jobs.interrupt import outcome_for
from hpcbench.jobs.records import CaseRun, JobResult, JobSpec, Variant, save_model
from hpcbench.plan.campaign import Campaign
from hpcbench.schedulers.base import view_class
from hpcbench.site import SiteConfig, list_sites, load_site
from tests.conftest import hpcbench


def _spec(tmp: Path, jid: str, ranks: int = 1, limit: float = 30, variant: str = "cpu") -> JobSpec:
    return JobSpec(job_id=jid, agent="a", problem="p", attempt="1", source_dir=str(tmp), entry="main.c",
                   files=["main.c"], runs=[CaseRun(case="c", args=[], ranks=ranks, time_limit_s=limit)],
                   variant=Variant(name=variant, petsc_dir="/x"), work_dir=str(tmp / "work" / jid),
                   record_path=str(tmp / "records" / f"{jid}.json"))


def test_every_bundled_site_loads_and_names_its_partitions():
    assert {"local", "ci-slurm", "perlmutter", "frontier", "polaris", "aurora"} <= set(list_sites())
    for name in list_sites():
        s = load_site(name)
        for v in s.variants:
            assert v.partition == "" or s.partition_for(v.name).name == v.partition
        assert all(not p.account for p in s.partitions)  # accounts never in a shared file
    assert load_site("polaris").scheduler == "pbs" and load_site("perlmutter").partition_for("cuda").gpus_per_node == 4


def test_bad_site_file_names_file_field_and_reason(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\nscheduler: slurm\npartitions: [{name: a, max_walltime_min: soon}]\n")
    with pytest.raises(ConfigError) as e:
        load_site(str(p))
    assert str(p) in str(e.value) and "partitions.0.max_walltime_min" in str(e.value)
    p.write_text("name: x\nscheduler: slurm\npartitions: [{name: a}]\nvariants: [{name: cpu, partition: b}]\n")
    with pytest.raises(ConfigError, match="variants.0.partition: 'b' is not one of"):
        load_site(str(p))
    p.write_text("name: x\nscheduler: pbs\n")
    with pytest.raises(ConfigError, match="needs at least one partition"):
        load_site(str(p))
    # The scheduler is checked against the executors known (in the tree and installed), not a fixed list.
    p.write_text("name: x\nscheduler: lsf\npartitions: [{name: a}]\n")
    with pytest.raises(ConfigError) as e:
        load_site(str(p))
    assert str(p) in str(e.value) and "field 'scheduler'" in str(e.value)
    assert "'lsf' is not a known scheduler (known: local, pbs, slurm" in str(e.value)


def test_walltime_shapes_and_max_array_size(tmp_path):
    site = load_site("ci-slurm").model_copy(deep=True)
    spec = _spec(tmp_path, "j0", ranks=3, limit=30)
    # build 300 + slack 60, 4 runs of 30 s + 3 null runs of 60 s, valgrind 30x30+10
    assert job_walltime_s(spec) == 300 + 60 + 30 * 4 + 60 * 3 + 910
    site.batch.max_array_size = 2
    jobs = [_spec(tmp_path, f"j{i}", ranks=1 + i % 2) for i in range(5)]
    arrays = plan_arrays(jobs, site)
    sizes = sorted((a.shape.cpus, len(a.jobs)) for a in arrays)
    assert sizes == [(1, 1), (1, 2), (2, 2)]  # 3 one-rank jobs split at 2; 2 two-rank jobs
    assert all(a.walltime_min == 27 for a in arrays)  # 1570 s, rounded up
    site.partitions[0].max_walltime_min = 10
    assert plan_arrays(jobs, site)[0].walltime_min == 10  # capped by the partition


def test_account_from_option_or_environment(monkeypatch):
    site = load_site("polaris")
    monkeypatch.delenv("HPCBENCH_ACCOUNT", raising=False)
    with pytest.raises(HpcbenchError, match="--account PROJECT or set HPCBENCH_ACCOUNT"):
        resolve_account(site, None)
    assert resolve_account(site, "A1") == "A1"
    monkeypatch.setenv("HPCBENCH_ACCOUNT", "B2")
    assert resolve_account(site, None) == "B2" and resolve_account(site, "A1") == "A1"
    assert resolve_account(load_site("ci-slurm"), None) == "B2"


def test_sacct_squeue_parsing_and_directives():
    text = "12_0|COMPLETED|0:0|None\n12_1|CANCELLED by 0|0:15|None\n12_[2-3,5%2]|PENDING|0:0|Priority\n" \
           "12_0.batch|COMPLETED|0:0|\n13|TIMEOUT|0:0|\n"
    got = {k: v.state for k, v in parse_sacct(text).items()}
    assert got == {"12_0": "COMPLETED", "12_1": "CANCELLED", "12_2": "PENDING", "12_3": "PENDING",
                   "12_5": "PENDING", "13": "TIMEOUT"}
    assert expand_array_id("7_[0-1]") == ["7_0", "7_1"] and expand_array_id("7") == ["7"]
    assert {k: v.state for k, v in parse_squeue("9_1|RUNNING\n9_[2-3]|PENDING\n").items()} == \
        {"9_1": "RUNNING", "9_2": "PENDING", "9_3": "PENDING"}
    assert parse_directives(["--exclusive", "--mail-type=END", "-x node1"]) == \
        {"exclusive": True, "mail-type": "END", "x": "node1"}


def test_clean_env_hides_slurm_variables_but_keeps_slurm_conf(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "1")
    monkeypatch.setenv("SBATCH_PARTITION", "x")
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm.conf")
    with clean_env():
        assert "SLURM_JOB_ID" not in os.environ and "SBATCH_PARTITION" not in os.environ
        assert os.environ["SLURM_CONF"] == "/etc/slurm.conf"
    assert os.environ["SLURM_JOB_ID"] == "1"


def test_signal_outcomes():
    assert outcome_for(signal.SIGUSR2, 5, 3600) == "timeout"  # Slurm's advance warning
    assert outcome_for(signal.SIGTERM, 3590, 3600) == "timeout"  # PBS at the walltime
    assert outcome_for(signal.SIGTERM, 100, 3600) == "cancelled"  # qdel / scancel
    assert outcome_for(signal.SIGTERM, 100, 0) == "cancelled"


class _Replay(Backend):
    """In-memory scheduler states: node failures, preemption and out-of-memory cannot be
    provoked on the single-node test cluster, so the reconciliation of each is checked here."""

    name = "replay"

    def __init__(self):
        self.states: dict[str, SchedInfo] = {}
        self.submitted: list[list[str]] = []

    def submit_array(self, plan, account):
        n = len(self.submitted)
        ids = [f"{n}_{i}" for i in range(len(plan.jobs))]
        self.submitted.append([j.job_id for j in plan.jobs])
        for i in ids:
            self.states[i] = SchedInfo("PENDING")
        return str(n), ids, ""

    def render(self, plan, account):
        return ""

    def poll(self, ids):
        return {i: self.states[i] for i in ids if i in self.states}

    def cancel(self, ids):
        for i in ids:
            self.states[i] = SchedInfo("CANCELLED")


class _ReplayExecutor(BatchExecutor):
    scheduler = "replay"

    def make_backend(self):
        return self._replay


def test_every_final_state_maps_to_an_outcome(tmp_path):
    site = SiteConfig(name="t", scheduler="slurm", partitions=[{"name": "p"}],
                      batch={"account_required": False, "retries": 1})
    camp = Campaign(tmp_path)
    ex = _ReplayExecutor(site, camp)
    ex._replay = _Replay()
    names = ["done", "timeout_rec", "timeout", "cancel", "nodefail", "oom", "failed", "running", "diskfull"]
    jobs = [_spec(tmp_path, n) for n in names]
    ex.submit(jobs)
    ids = {j.job_id: e.sched_id for j, e in zip(jobs, [ex.load_ledger().jobs[j.job_id] for j in jobs])}
    for jid, status in (("done", "done"), ("timeout_rec", "timeout")):
        save_model(Path(jobs[names.index(jid)].record_path), JobResult(job_id=jid, agent="a", problem="p",
                                                                       attempt="1", status=status))
    st = ex._replay.states
    st[ids["done"]] = SchedInfo("COMPLETED")
    st[ids["timeout_rec"]] = SchedInfo("COMPLETED")  # the job's USR2 handler wrote the timeout
    st[ids["timeout"]] = SchedInfo("TIMEOUT")
    st[ids["cancel"]] = SchedInfo("CANCELLED")
    st[ids["nodefail"]] = SchedInfo("NODE_FAIL")
    st[ids["oom"]] = SchedInfo("OUT_OF_MEMORY")
    st[ids["failed"]] = SchedInfo("FAILED", exit_code="1:0")
    st[ids["running"]] = SchedInfo("RUNNING")
    st[ids["diskfull"]] = SchedInfo("FAILED", exit_code="75:0")  # jobs/diskfull.py EXIT_DISK_FULL, no record
    states, retry = ex.refresh(jobs)
    assert states == {"done": "done", "timeout_rec": "timeout", "timeout": "timeout", "cancel": "cancelled",
                      "nodefail": "retrying", "oom": "failed", "failed": "failed", "running": "running",
                      "diskfull": "retrying"}  # room came back (tmp_path has it): run again, not an error
    assert [j.job_id for j in retry] == ["nodefail", "diskfull"]
    assert not Path(jobs[names.index("diskfull")].record_path).exists()
    rec = lambda n: json.loads(Path(jobs[names.index(n)].record_path).read_text())  # noqa: E731
    assert rec("timeout")["status"] == "timeout" and rec("oom")["status"] == "error"
    assert "FAILED (exit 1:0) without a record" in rec("failed")["reason"]
    assert not Path(jobs[names.index("cancel")].record_path).exists()
    # The retry is resubmitted; failing again past the budget is an error with both ids.
    ex._submit_arrays(ex.load_ledger(), retry, "", retry=True)
    e = ex.load_ledger().jobs["nodefail"]
    assert e.tries == 2 and e.history == [f"{ids['nodefail']}: NODE_FAIL"]
    st[e.sched_id] = SchedInfo("PREEMPTED")
    st[ids["running"]] = SchedInfo("COMPLETED")
    st[ex.load_ledger().jobs["diskfull"].sched_id] = SchedInfo("FAILED", exit_code="75")  # PBS: Exit_status alone
    states, retry = ex.refresh(jobs)
    assert states["nodefail"] == "failed" and not retry
    # full again past the retries: no record (no result of the program's), left for --resume
    assert states["diskfull"] == "cancelled" and not Path(jobs[names.index("diskfull")].record_path).exists()
    assert "PREEMPTED on every try (2" in rec("nodefail")["reason"]
    assert states["running"] == "failed"  # COMPLETED but no record: the log tail would say why
    # A resumed submit skips what is still queued; cancel only touches active jobs.
    assert ex.cancel(jobs) == 0
    d = ex.details(jobs)
    assert d["done"].sched_id == ids["done"] and d["done"].state == "COMPLETED" and d["nodefail"].tries == 2


def test_executor_interface_is_enforced_and_says_what_the_cli_needs(tmp_path):
    class NoPoll(Backend):
        def submit_array(self, plan, account):
            return "1", [], ""

        def render(self, plan, account):
            return ""

        def cancel(self, ids):
            pass

    with pytest.raises(TypeError, match="poll"):  # Backend is an ABC: a missing method is an error, not a None
        NoPoll()

    class NoSubmit(Executor):
        def cancel(self, jobs):
            return 0

    with pytest.raises(TypeError, match="submit"):
        NoSubmit(load_site("local"), Campaign(tmp_path))
    local = executor_for(load_site("local"), Campaign(tmp_path), account="ignored")
    jobs = [_spec(tmp_path, "j")]
    # The local executor's base behaviour: submit blocks, so wait is the states; no scheduler details or scripts.
    assert not local.batch and local.account == "ignored"
    assert local.wait(jobs) == {"j": "pending"} and local.details(jobs) == {} and local.dry_run(jobs) == []
    slurm = executor_class("slurm")
    assert slurm.batch and slurm.tools == ("sbatch", "squeue", "sacct", "scancel")
    assert (view_class("slurm").job_id_env, view_class("pbs").job_id_env) == ("SLURM_JOB_ID", "PBS_JOBID")
    assert not hasattr(slurm, "job_id_env")  # one source: the allocation view's
    with pytest.raises(HpcbenchError, match="scheduler 'lsf' has no executor .known: local, pbs, slurm"):
        executor_class("lsf")


def test_login_launch_of_each_scheduler():
    argv = ["srun", "-n", "2", "hello"]
    site = SiteConfig(name="s", scheduler="slurm", partitions=[{"name": "debug", "constraint": "cpu"}])
    assert executor_class("slurm").login_launch(site, argv, "acct") == [
        "srun", "-t", "2", "-p", "debug", "-A", "acct", "-C", "cpu", "-n", "2", "hello"]
    site = site.model_copy(update={"batch": site.batch.model_copy(update={"login_node_mpi": True})})
    assert executor_class("slurm").login_launch(site, argv, "acct") == argv
    pbs = SiteConfig(name="p", scheduler="pbs", partitions=[{"name": "debug"}])
    assert "needs an allocation" in executor_class("pbs").login_launch(pbs, ["mpiexec", "hello"], "")
    assert executor_class("local").login_launch(load_site("local"), ["mpiexec", "hello"], "") == ["mpiexec", "hello"]


def test_slurm_jobs_exec_python_through_submitits_public_option(tmp_path):
    """The job's command line comes from submitit's public `python` option; it must be exactly
    the `exec` line the batch shell needs for the B:USR2 warning to reach the job's handler."""
    import shlex

    import submitit

    py = "/opt/my python/bin/python3"
    ex = submitit.SlurmExecutor(folder=tmp_path, python=f"exec {shlex.quote(py)}")
    assert ex._submitit_command_str == exec_command(py, tmp_path)
    assert exec_command(py, tmp_path).startswith("exec '/opt/my python/bin/python3' -u -m submitit.core._submit")


@pytest.mark.petsc
@pytest.mark.parametrize("site", ["perlmutter", "frontier", "polaris", "aurora", "ci-slurm"])
def test_dry_run_prints_batch_scripts_without_a_scheduler(site, tmp_path, monkeypatch):
    monkeypatch.setenv("HPCBENCH_ACCOUNT", "proj123")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no sbatch/qsub reachable either way
    args = ["submit", "--dry-run", "--no-pack", "--problems", "vec-scatter,rosenbrock", "--out", str(tmp_path / "c")]
    if site in ("polaris", "aurora"):  # debug: one job per user; two array tasks are refused before qsub
        refused = hpcbench(*args, "--site", site, check=False)
        assert refused.returncode == 2 and "lets one user have 1 job(s) at once" in refused.stderr
        s = load_site(site).model_dump()
        for part in s["partitions"]:
            part.update(max_running_per_user=0, max_queued_per_user=0)
        site = str(tmp_path / f"{site}.yaml")
        Path(site).write_text(yaml.safe_dump(s))
    p = hpcbench(*args, "--site", site)  # arrays (packed dry runs: tests/test_pack.py)
    text = p.stdout
    assert "nothing submitted" in p.stderr
    if load_site(site).scheduler == "pbs":
        assert "#PBS -A proj123" in text and "#PBS -l walltime=" in text and "hpcbench.jobs.job" in text
        assert ("#PBS -l filesystems=home:eagle" in text) == ("polaris" in site)
        assert 'export HPCBENCH_SCHEDULER_JOB_ID="${PBS_JOBID:-}"' in text
    else:
        assert "#SBATCH --signal=B:USR2@" in text and "exec " in text
        assert 'export HPCBENCH_SCHEDULER_JOB_ID="${SLURM_JOB_ID:-}"' in text  # the job's record names its id
        assert ("#SBATCH --account=proj123" in text) or site == "ci-slurm"
        assert "--wckey" not in text  # none configured: not submitit's `--wckey=submitit`
    assert text.count("#!/bin/bash") == 2  # rosenbrock (1 rank) and vec-scatter (3 ranks): two shapes
    assert not (tmp_path / "c" / "scheduler" / "ledger.json").exists()


@pytest.mark.petsc
def test_doctor_for_a_site_not_reachable_from_here(monkeypatch):
    monkeypatch.delenv("HPCBENCH_ACCOUNT", raising=False)
    p = hpcbench("doctor", "--site", "polaris", check=False)
    assert p.returncode == 1
    for line in ("scheduler: qsub", "account", "PETSc [cuda]", "launcher"):
        assert line in p.stdout, line
    assert "ruled out" in p.stdout and "HPCBENCH_ACCOUNT" in p.stdout


def test_only_gpu_variants_ask_for_gpus(tmp_path):
    site = load_site("frontier")  # one partition, 8 GCDs per node, cpu and kokkos variants on it
    arrays = plan_arrays([_spec(tmp_path, "a", ranks=2, variant="cpu"),
                          _spec(tmp_path, "b", ranks=2, variant="kokkos")], site)
    assert sorted((a.shape.variant, a.shape.gpus) for a in arrays) == [("cpu", 0), ("kokkos", 8)]
    assert all(a.walltime_min <= 120 for a in arrays)


@pytest.mark.petsc
def test_a_variant_launcher_overrides_the_sites(tmp_path, monkeypatch):
    monkeypatch.setenv("HPCBENCH_ACCOUNT", "p")
    hpcbench("submit", "--site", "perlmutter", "--dry-run", "--problems", "scatter-cuda,vec-scatter",
             "--out", str(tmp_path / "c"))
    specs = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "c" / "specs").glob("*.json")}
    assert "--gpus-per-task=1" in specs["reference__scatter-cuda__1"]["launcher"]["template"]
    assert "--gpus-per-task" not in specs["reference__vec-scatter__1"]["launcher"]["template"]
    assert specs["reference__scatter-cuda__1"]["variant"]["runtime_options"] == \
        ["-vec_type", "cuda", "-mat_type", "aijcusparse"]


def test_waiting_ends_soon_after_the_last_record_but_asks_the_scheduler_at_most_every_10_s(tmp_path, monkeypatch):
    """_doze (between scheduler polls in `wait`) sleeps the whole poll while jobs run; once every
    active job has its record it wakes END_POLL_S (10 s) after the last poll, not a minute later,
    and no sooner: it asked sacct/qstat every half second until they said the jobs ended."""
    from hpcbench.executors import batch

    clock = [0.0]  # the module's clock, advanced by its sleeps alone
    monkeypatch.setattr(batch.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(batch.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    specs = [SimpleNamespace(record_path=str(tmp_path / f"{i}.json")) for i in range(2)]
    batch._doze(specs, 60.0)
    assert clock[0] == pytest.approx(60.0)  # no record yet: the whole poll
    for s in specs:
        Path(s.record_path).write_text("{}")
    clock[0] = 0.0
    batch._doze(specs, 60.0)
    assert batch.END_POLL_S == 10.0 and 10.0 <= clock[0] < 11.0, clock[0]
    clock[0] = 0.0
    batch._doze(specs, 2.0)  # a site polling more often (the test cluster) keeps its poll
    assert clock[0] == pytest.approx(2.0)


def test_each_scheduler_validates_its_own_batch_settings_and_old_manifests_still_open():
    """PBS Pro's fields (filesystems, select_extra, whole_nodes) are PbsSettings', Slurm's
    signal_margin_s SlurmSettings': every bundled site loads, the other scheduler's field is
    refused by name, and a manifest an older hpcbench wrote (every field in every site's
    batch:) still opens its campaign."""
    from hpcbench.schedulers.settings import BatchConfig, PbsSettings, SlurmSettings
    from hpcbench.site import planned_site

    kinds = {name: type(load_site(name).batch) for name in list_sites()}
    assert kinds["polaris"] is PbsSettings and kinds["perlmutter"] is SlurmSettings and kinds["local"] is BatchConfig
    assert load_site("polaris").batch.whole_nodes and load_site("frontier").batch.signal_margin_s == 120
    for name, field, value in (("ci-slurm", "whole_nodes", True), ("polaris", "signal_margin_s", 5),
                               ("local", "filesystems", "home:eagle")):
        cfg = load_site(name).model_dump(mode="json")
        cfg["batch"][field] = value
        with pytest.raises(ValueError, match=f"batch.{field}"):
            SiteConfig.model_validate(cfg)
        assert not hasattr(planned_site(cfg).batch, field)  # a stored manifest: the old field dropped


@pytest.mark.petsc
def test_a_wckey_only_where_configured_and_job_cores_from_the_partition(tmp_path, monkeypatch):
    """sbatch gets `--wckey` only from the site's `batch.wckey` (submitit adds --wckey=submitit by
    default, refused where wckeys are enforced); a job's cores are the partition's nodes' (a
    3-rank job has 3 on Frontier), not those of the machine that runs `submit` (2 here)."""
    monkeypatch.setenv("HPCBENCH_ACCOUNT", "proj123")
    s = load_site("frontier").model_dump(mode="json")
    s["batch"]["wckey"] = "myproj"
    site = tmp_path / "frontier-wckey.yaml"
    site.write_text(yaml.safe_dump(s))
    out = tmp_path / "c"
    text = hpcbench("submit", "--dry-run", "--no-pack", "--problems", "vec-scatter", "--site", str(site),
                    "--out", str(out)).stdout
    assert "#SBATCH --wckey=myproj" in text and "--wckey=submitit" not in text
    spec = json.loads(next((out / "specs").glob("reference__vec-scatter__*.json")).read_text())
    assert spec["cores"] == 3, spec["cores"]


def test_a_pack_past_the_clusters_max_step_count_is_refused_before_sbatch(tmp_path):
    """Slurm refuses every step past MaxStepCount (slurm.conf(5), 40000 by default): an allocation
    planned past it would leave its last jobs not run. Counted: each job's build and runs, the
    null program's build and the baseline's points."""
    from hpcbench.executors.pack import job_steps, plan_packs, planned_steps, steps_refusal
    from hpcbench.executors.slurm import parse_max_step_count

    site = load_site("frontier")
    jobs = [_spec(tmp_path, f"j{i}", ranks=2) for i in range(3)]
    per_job = job_steps(jobs[0])
    assert per_job == 1 + sum(1 + jobs[0].repeats_of(c) for c in jobs[0].runs) + int(jobs[0].valgrind)  # no null run
    plan = plan_packs(jobs, site)[0]
    assert planned_steps(plan, [1, 2]) == 3 * per_job + 2 + 1
    assert steps_refusal(plan, 40000, 40000) == ""
    why = steps_refusal(plan, 40001, 40000)
    assert "40001 job steps" in why and "MaxStepCount 40000" in why
    assert parse_max_step_count("MaxJobCount             = 10000\nMaxStepCount            = 40000\n") == 40000
    assert parse_max_step_count("") == 0
