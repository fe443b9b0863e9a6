"""A scheduler's compute-side view (hpcbench/schedulers/) and the launchers as parts
(jobs/launchers.py): what a job inside an allocation reads, pure (the environments are the
variables each scheduler documents; no scheduler runs here). The end-to-end use by a
plugin's scheduler and launcher is tests/test_plugins.py."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from hpcbench.errors import ConfigError
from hpcbench.jobs.launchers import launcher_for, launcher_named
from hpcbench.jobs.placement import PackContext, placed_launcher
from hpcbench.jobs.records import Launcher
from hpcbench.jobs.sandbox import step_env
from hpcbench.schedulers.base import view_for
from hpcbench.site import load_site


def test_each_view_reads_its_own_schedulers_variables(tmp_path):
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("n1\nn1\nn2\nn2\n")  # PBS: one line per MPI slot
    pbs = view_for("pbs", {"PBS_NODEFILE": str(nodefile), "NCPUS": "64", "PBS_JOBID": "7.s",
                           "SLURM_CPUS_ON_NODE": "3"})
    assert (pbs.hosts(), pbs.cores_per_node(32), pbs.job_id()) == (["n1", "n2"], 32, "7.s")
    slurm = view_for("slurm", {"SLURM_CPUS_ON_NODE": "3", "NCPUS": "64", "SLURM_JOB_ID": "12",
                               "SLURM_MEM_PER_NODE": "9000"})
    assert (slurm.cores_per_node(32), slurm.job_id()) == (3, "12")
    local = view_for("local", {"SLURM_JOB_ID": "12", "SLURM_CPUS_ON_NODE": "3"})
    assert (local.hosts(), local.cores_per_node(8), local.job_id()) == ([socket.gethostname()], 8, "")


def test_the_scheduler_is_named_by_the_batch_script_else_found_by_its_job_id():
    assert type(view_for(environ={"HPCBENCH_SCHEDULER": "pbs", "SLURM_JOB_ID": "1"})).__name__ == "PbsView"
    assert type(view_for(environ={"SLURM_JOB_ID": "1"})).__name__ == "SlurmView"  # salloc, no batch script
    assert type(view_for(environ={})).__name__ == "LocalView"


def test_a_step_keeps_only_its_schedulers_and_launchers_variables():
    base = {"PATH": "/usr/bin", "SLURM_JOB_ID": "1", "SLURM_STEP_ID": "2", "PALS_RANKID": "0", "OMPI_X": "y"}
    under_slurm = step_env({}, {**base, "HPCBENCH_SCHEDULER": "slurm"})
    assert {"SLURM_JOB_ID", "SLURM_STEP_ID", "PALS_RANKID", "OMPI_X"} <= set(under_slurm)
    under_pbs = step_env({}, {**base, "HPCBENCH_SCHEDULER": "pbs", "PBS_JOBID": "3"})
    assert not any(k.startswith("SLURM_") for k in under_pbs) and "PALS_RANKID" in under_pbs


def test_a_pbs_step_keeps_pbs_cray_mpich_and_kokkos_variables():
    """PALS mpiexec reads $PBS_NODEFILE (its default --hostfile: ALCF's Polaris running-jobs page),
    Cray MPICH its MPIR_CVAR_* at MPI_Init, Kokkos its KOKKOS_* at initialize, the cc wrappers
    CRAYPE_*: main at 1e0203d dropped all four from a step's environment; secrets stay out."""
    base = {"HPCBENCH_SCHEDULER": "pbs", "PBS_JOBID": "3.s", "PBS_NODEFILE": "/var/spool/pbs/aux/3.s",
            "CRAYPE_LINK_TYPE": "dynamic", "MPIR_CVAR_ENABLE_GPU": "1", "KOKKOS_NUM_DEVICES": "1",
            "PBS_SECRET_TOKEN": "x"}
    env = step_env({}, base)
    assert {"PBS_JOBID", "PBS_NODEFILE", "CRAYPE_LINK_TYPE", "MPIR_CVAR_ENABLE_GPU", "KOKKOS_NUM_DEVICES"} <= set(env)
    assert "PBS_SECRET_TOKEN" not in env
    assert "PBS_JOBID" not in step_env({}, {**base, "HPCBENCH_SCHEDULER": "slurm"})


def test_each_launcher_names_a_steps_hosts_in_its_own_terms(tmp_path):
    hf = lambda: tmp_path / "h.hosts"  # noqa: E731
    argv = ["mpiexec", "-n", "4", "wrapper.sh"]
    assert launcher_named("pals").on_hosts(argv, ["a", "b"], False, hf) == [
        "mpiexec", "-n", "4", "--hostfile", str(hf()), "wrapper.sh"]
    assert launcher_named("openmpi").on_hosts(argv, ["a"], False, hf)[3:5] == ["--hostfile", str(hf())]
    assert launcher_named("mpich").on_hosts(argv, ["a"], False, hf)[3:5] == ["-f", str(hf())]
    assert launcher_named("srun").on_hosts(["srun", "-n", "4"], ["a", "b"], False, hf) == [
        "srun", "--exact", "-N", "2", "--nodelist=a,b", "-n", "4"]
    assert launcher_named("none").on_hosts(argv, ["a"], False, hf) == argv
    assert launcher_for("auto", ["./run.sh"]).name == "none"


def test_any_scheduler_with_any_launcher_and_local_names_no_host(tmp_path):
    srun = Launcher(template="srun -n {ranks}")
    argv, _, where = placed_launcher(srun, 2, PackContext("pbs", ("a", "b"), 1, str(tmp_path)))
    assert argv[:5] == ["srun", "--exact", "-N", "2", "--nodelist=a,b"] and where.nodes == ["a", "b"]
    pals = Launcher(template="mpiexec -n {ranks}", binding="pals")
    argv, _, _ = placed_launcher(pals, 2, PackContext("slurm", ("a",), 4, str(tmp_path)))
    assert argv[3] == "--hostfile" and Path(argv[4]).read_text() == "a\n"
    argv, _, _ = placed_launcher(pals, 2, PackContext("local", ("a",), 4, str(tmp_path)))
    assert argv == ["mpiexec", "-n", "2"]  # one machine: nothing to name


def _site(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text("name: s\nscheduler: slurm\npartitions: [{name: q, launcher: {template: 'srun -n {ranks}'}}]\n"
                 + text)
    return p


def test_launcher_per_variant_then_partition_then_site_and_unknown_names_refused(tmp_path):
    site = load_site(str(_site(tmp_path, "launcher: {template: 'mpiexec -n {ranks}'}\nvariants: [{name: cpu}, "
                                         "{name: gpu, launcher: {template: 'mpiexec -n {ranks}', binding: pals}}]\n")))
    assert site.launcher_for("cpu").template == "srun -n {ranks}" and site.launcher_for("gpu").binding == "pals"
    p = _site(tmp_path, "variants: [{name: cpu, launcher: {template: 'jsrun -n {ranks}', binding: jsrun}}]\n")
    with pytest.raises(ConfigError) as e:
        load_site(str(p))
    assert str(p) in str(e.value) and "variants.0.launcher.binding: 'jsrun' is not a known launcher" in str(e.value)


def test_a_schedulers_settings_are_its_models_and_errors_name_the_field(tmp_path):
    p = _site(tmp_path, "batch: {retries: 3, spool: x}\n")
    with pytest.raises(ConfigError) as e:
        load_site(str(p))
    assert str(p) in str(e.value) and "batch.spool" in str(e.value)
    assert load_site(str(_site(tmp_path, "batch: {retries: 3}\n"))).batch.retries == 3
