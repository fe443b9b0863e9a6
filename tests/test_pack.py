"""Packed allocations (hpcbench/executors/pack.py, jobs/pack.py, jobs/placement.py): every job
of a variant in one batch job, each run placed inside it.

- PBS through the STAND-IN qsub/qstat of tests/fake_pbs (PBS Pro cannot be installed here;
  the test plays the server and runs the generated script for real, real PETSc and MPI).
- Dry runs of the bundled Polaris, Aurora, Perlmutter and Frontier configs.
- Placement on host subsets, pure (no hosts but this one exist here)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
from pathlib import Path

import pytest

from hpcbench.jobs.placement import PackContext, placed_launcher
from hpcbench.jobs.records import Launcher
from tests.clusters import polaris_here, serve
from tests.conftest import ROOT, hpcbench

PALS = Launcher(template="mpiexec --np {ranks} --ppn {ppn} --depth {depth} --cpu-bind depth", oversubscribe_flag="")


def _pbs_driver(tmp: Path, ncpus: int, planned: int, whole_nodes: bool = False):
    """A packed allocation's driver with no jobs, inside a one-node PBS allocation whose MoM
    exported NCPUS=`ncpus`."""
    from hpcbench.jobs.pack import PackDriver, PackManifest
    from hpcbench.schedulers.base import view_for

    nodefile = tmp / "nodefile"
    nodefile.write_text("x3001c0s1b0n0\n")
    m = PackManifest(scheduler="pbs", variant="cpu", specs=[], cores_per_node=planned, work_dir=str(tmp),
                     summary=str(tmp / "s.json"), whole_nodes=whole_nodes)
    return PackDriver(m, view_for("pbs", {"NCPUS": str(ncpus), "PBS_NODEFILE": str(nodefile), "PBS_JOBID": "1.pbs"}))


@pytest.mark.parametrize("site,whole", [("polaris", True), ("aurora", True), ("perlmutter", False)])
def test_a_packed_driver_on_whole_nodes_takes_every_core_of_the_node_not_ncpus(site, whole, tmp_path):
    """ALCF's select asks no ncpus, so OpenPBS's MoM exports NCPUS=1 (the first chunk's ncpus):
    read as the node's cores it bound every run of the allocation to core 0."""
    from hpcbench.site import load_site

    assert bool(getattr(load_site(site).batch, "whole_nodes", False)) == whole
    assert _pbs_driver(tmp_path, ncpus=1, planned=32, whole_nodes=whole).cpn == (32 if whole else 1)


def test_a_stopped_pbs_allocation_kills_its_jobs_before_pbs_kills_the_driver(tmp_path):
    """PBS sends SIGKILL kill_delay (10 s by default) after SIGTERM: a job that ignores the
    SIGTERM is killed by the driver before that, so the driver lives to write its summary."""
    import subprocess
    import time
    from types import SimpleNamespace

    d = _pbs_driver(tmp_path, ncpus=2, planned=2)
    stubborn = subprocess.Popen(["bash", "-c", "trap '' TERM; sleep 60"], start_new_session=True)
    time.sleep(0.3)  # its trap is set
    d.running["j"] = (stubborn, SimpleNamespace(record_path=str(tmp_path / "j.json"), work_dir=str(tmp_path)))
    t0 = time.monotonic()
    d.stop(15, None)
    d.wait_stopped()
    assert stubborn.wait(timeout=5) == -9 and time.monotonic() - t0 < 10


def test_a_pbs_driver_warns_itself_before_the_walltime(tmp_path):
    """PBS sends no signal before the walltime (qsub has no --signal), only SIGTERM at it and
    SIGKILL kill_delay later: main at 1e0203d let every packed PBS allocation run into the limit.
    The driver arms its own timer (the walltime less the margin) that stops it as USR2 would;
    under Slurm the batch script's --signal=B:USR2 does and no timer is armed."""
    import signal
    import time

    from hpcbench.jobs import interrupt

    d = _pbs_driver(tmp_path, ncpus=2, planned=2)
    env = {"HPCBENCH_SCHEDULER": "pbs", interrupt.WALLTIME_ENV: "10"}
    try:
        assert interrupt.warn_before_walltime(d.stop, env) > 0
        deadline = time.monotonic() + 5
        while not d.stopping and time.monotonic() < deadline:
            time.sleep(0.02)
        assert d.stopping
        assert interrupt.warn_before_walltime(d.stop, {**env, "HPCBENCH_SCHEDULER": "slurm"}) == 0
        assert interrupt.warn_before_walltime(d.stop, {"HPCBENCH_SCHEDULER": "pbs"}) == 0  # no walltime known
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)


def test_pals_runs_go_to_the_fewest_hosts_of_the_job_in_order(tmp_path):
    ctx = PackContext("pbs", ("n0", "n1", "n2", "n3"), 4, str(tmp_path))
    argv, over, where = placed_launcher(PALS, 6, ctx)
    assert argv[:9] == ["mpiexec", "--np", "6", "--ppn", "3", "--depth", "1", "--cpu-bind", "depth"]
    assert argv[9] == "--hostfile" and Path(argv[10]).read_text() == "n0\nn1\n"
    assert (where.nodes, where.ranks_per_node, where.oversubscribed, where.binding) == (
        ["n0", "n1"], 3, False, "--cpu-bind depth")
    argv, _, where = placed_launcher(PALS, 2, ctx)  # a smaller strong-scaling point: the same first node
    assert Path(argv[argv.index("--hostfile") + 1]).read_text() == "n0\n" and where.ranks_per_node == 2
    _, over, where = placed_launcher(PALS, 20, ctx)  # wider than the job's nodes hold
    assert over and where.nodes == ["n0", "n1", "n2", "n3"] and where.ranks_per_node == 5
    # Aurora's GPU wrapper stays right before the program, after the hostfile.
    aurora = Launcher(template="mpiexec -n {ranks} --ppn {ppn} --depth {depth} --cpu-bind depth gpu_tile_compact.sh")
    argv, _, _ = placed_launcher(aurora, 4, ctx)
    assert argv[-3:-1] == ["--hostfile", str(tmp_path / "n0.hosts")] and argv[-1] == "gpu_tile_compact.sh"


def test_slurm_runs_are_exact_steps_on_the_jobs_nodes():
    srun = Launcher(template="srun -n {ranks} -c {depth} --cpu-bind=cores", oversubscribe_flag="--overcommit")
    argv, over, where = placed_launcher(srun, 3, PackContext("slurm", ("a", "b"), 2))
    assert argv == ["srun", "--exact", "-N", "2", "--nodelist=a,b", "-n", "3", "-c", "1", "--cpu-bind=cores"]
    assert not over and where.binding == "--cpu-bind=cores" and where.packed
    argv, over, _ = placed_launcher(srun, 3, PackContext("slurm", ("a",), 2))
    assert over and "--exact" not in argv  # Slurm refuses an --exact step over the cores; it runs alone


def _dry(site: str, out: Path, *extra: str) -> str:
    return hpcbench("submit", "--site", site, "--dry-run", "--agent", "reference", "--problems",
                    "vec-scatter,rosenbrock", "--out", str(out), *extra).stdout


@pytest.mark.parametrize("site", ["polaris", "aurora", "perlmutter", "frontier"])
def test_dry_run_prints_one_allocation_and_every_launch_command(site, tmp_path, monkeypatch):
    monkeypatch.setenv("HPCBENCH_ACCOUNT", "myproj")
    text = _dry(site, tmp_path / "c")
    assert text.count("#!/bin/bash") == 1 and "hpcbench.jobs.pack" in text  # one packed allocation
    specs = [json.loads(p.read_text()) for p in (tmp_path / "c" / "specs").glob("*.json")]
    assert {s["problem"] for s in specs} == {"vec-scatter", "rosenbrock"}
    pbs = site in ("polaris", "aurora")
    for s in specs:
        for r in s["runs"]:
            repeats = s["timing_repeats"] if r.get("repeats") is None else r["repeats"]  # held-out cases: none
            for kind in ("instrumented", f"timing x{repeats}") if repeats else ("instrumented",):
                line = next(ln for ln in text.splitlines() if f"{r['case']} r{r['ranks']} {kind}" in ln)
                if pbs:  # the run's own list (what a run alone on the node gets), never the template's depth
                    m = re.search(rf"mpiexec (--np|-n) {r['ranks']} --ppn {r['ranks']} .*--hostfile \S+node0\.hosts"
                                  r" --cpu-bind list:(\S+) <app>", line)
                    assert m and len(m.group(2).split(":")) == r["ranks"] and "cpu-bind depth" not in line, line
                else:
                    assert re.search(rf"srun --exact -N 1 --nodelist=node0 -n {r['ranks']} ", line), line
        assert any(f"null r{r['ranks']}" in ln for ln in text.splitlines() for r in s["runs"])


def test_dry_run_of_a_job_wider_than_a_node_spans_a_host_subset(tmp_path, monkeypatch):
    monkeypatch.setenv("HPCBENCH_ACCOUNT", "myproj")
    site = tmp_path / "polaris2.yaml"
    # Two cores a node, and no per-user limit on debug (Polaris's is 1: unpacked, the two jobs
    # would be refused; tests/test_sites_conformance.py holds that rule).
    site.write_text((ROOT / "site-configs" / "polaris.yaml").read_text().replace("cores_per_node: 32",
                    "cores_per_node: 2").replace("_per_user: 1", "_per_user: 0"))
    text = _dry(str(site), tmp_path / "c")
    # a whole node's hardware threads asked (2 cores of 2 threads here; ALCF's ncpus, docs/sites.md)
    assert "#PBS -l select=2:ncpus=4:system=polaris" in text and "#PBS -l place=scatter" in text
    assert re.search(r"default r3 instrumented +mpiexec --np 3 --ppn 2 .*--hostfile \$PACK_HOSTS/node0\+node1\.hosts",
                     text)
    assert re.search(r"n6 r1 instrumented +mpiexec --np 1 --ppn 1 .*--hostfile \$PACK_HOSTS/node0\.hosts", text)
    unpacked = _dry(str(site), tmp_path / "c2", "--no-pack")  # arrays, and still every launch line
    assert "#PBS -J" not in unpacked and unpacked.count("#!/bin/bash") == 2 and "--hostfile" not in unpacked
    assert re.search(r"default r3 instrumented +mpiexec --np 3 --ppn 3 --depth 1 --cpu-bind depth <app>", unpacked)
    local = _dry("local", tmp_path / "c3", "--pack")  # accepted; the local executor's core slots already pack
    assert "no batch scripts" in local
    assert re.search(r"default r3 instrumented +mpiexec -n 3 --oversubscribe <app>", local)


@pytest.mark.petsc
def test_pbs_packed_campaign_is_one_qsub_and_places_runs_with_hostfiles(fake_pbs, tmp_path, monkeypatch):
    out = tmp_path / "c"
    site = polaris_here(tmp_path)  # Polaris (exclusive nodes: packed by default) with this machine's PETSc
    # Open MPI spells PALS's --ppn --npernode; the hostfile is added by the packer.
    site.write_text(site.read_text().replace('template: "mpiexec -n {ranks}"',
                                             'template: "mpiexec --np {ranks} --npernode {ppn}"'))
    # quick: the placement of ordinary runs is asserted (the performance case's has its own test)
    hpcbench("submit", "--site", str(site), "--account", "MyProj", "--problems", "rosenbrock,advection1d",
             "--out", str(out), "--profile", "quick")
    ledger = json.loads((out / "scheduler" / "ledger.json").read_text())
    assert ledger["submit_calls"] == 1 and len(ledger["jobs"]) == 2
    alloc = ledger["arrays"][0]["array_id"]
    assert alloc == "1001.pbs-test" and {e["sched_id"] for e in ledger["jobs"].values()} == {alloc}
    script = Path(ledger["arrays"][0]["script"]).read_text()
    assert "#PBS -J" not in script and f"#PBS -l select=1:ncpus={os.cpu_count()}:system=polaris" in script
    host = socket.gethostname()
    nodefile = tmp_path / "nodefile"
    nodefile.write_text(f"{host}\n{host}\n")  # PBS lists a host once per MPI process slot
    monkeypatch.setenv("PBS_NODEFILE", str(nodefile))
    serve(fake_pbs, alloc)  # NCPUS=1, as OpenPBS's MoM sets it for a chunk that asks no ncpus
    waited = hpcbench("wait", str(out), "--poll", "0.1", "--timeout", "60").stdout
    assert "done: 2" in waited, waited
    for jid in ledger["jobs"]:
        rec = json.loads((out / "records" / f"{jid}.json").read_text())
        assert rec["status"] == "done" and rec["scheduler_job_id"] == alloc
        for run in rec["runs"]:
            cmd = run["command"]
            assert cmd[:5] == ["mpiexec", "--np", str(run["ranks"]), "--npernode", str(run["ranks"])], cmd
            hf = cmd[cmd.index("--hostfile") + 1]
            assert Path(hf).read_text() == f"{host}\n" and run["exit_code"] == 0
            assert run["placement"]["nodes"] == [host] and run["placement"]["packed"]
            # with NCPUS=1 (the stand-in's, as the MoM sets it for ALCF's select) taken as the
            # node's cores, every run of 2 ranks was oversubscribed
            assert not run["placement"]["oversubscribed"], run["placement"]
    summary = json.loads(next((out / "scheduler" / "pack").glob("*.summary.json")).read_text())
    assert summary["hosts"] == [host] and sorted(summary["finished"]) == sorted(ledger["jobs"])
    assert summary["cores_per_node"] == 2  # the node's (polaris_here: this machine's), not NCPUS's 1


@pytest.mark.petsc
def test_allocation_driver_measures_the_machine_baseline_before_its_jobs(tmp_path):
    """The driver of a packed allocation, run here as the batch script would (no jobs, one host):
    mpi4py ping-pong and allreduce through the launcher, placed like the jobs' runs."""
    import subprocess
    import sys

    from hpcbench.jobs.pack import BaselineRequest, PackManifest

    out = tmp_path / "machine" / "baseline-cpu.json"
    m = PackManifest(scheduler="local", variant="cpu", specs=[], cores_per_node=2, work_dir=str(tmp_path / "work"),
                     summary=str(tmp_path / "summary.json"),
                     baseline=BaselineRequest(out=str(out), ranks=[2, 1, 4], launcher=Launcher()))
    (tmp_path / "m.json").write_text(m.model_dump_json())
    subprocess.run([sys.executable, "-m", "hpcbench.jobs.pack", str(tmp_path / "m.json")], check=True, timeout=300)
    doc = json.loads(out.read_text())
    assert doc["schema"] == 1 and doc["variant"] == "cpu" and doc["hosts"] == [socket.gethostname()]
    assert "Open MPI" in doc["mpi_library"] or "MPICH" in doc["mpi_library"]
    pts = {p["ranks"]: p for p in doc["points"]}
    assert sorted(pts) == [1, 2, 4] and not any(p.get("error") for p in pts.values()), pts
    assert pts[1]["pingpong_latency_us"] is None and pts[1]["allreduce_8B_us"] > 0
    for r in (2, 4):
        assert 0 < pts[r]["pingpong_latency_us"] < 1e5 and pts[r]["pingpong_bandwidth_MBps"] > 1
        assert pts[r]["allreduce_1MB_us"] > pts[r]["allreduce_8B_us"] > 0 and pts[r]["nodes"] == 1
    assert pts[4]["oversubscribed"] and not pts[2]["oversubscribed"]
    assert json.loads((tmp_path / "summary.json").read_text())["not_run"] == []


@pytest.mark.petsc
def test_doctor_prints_the_machine_baseline_through_the_launcher():
    text = hpcbench("doctor", "--site", "local").stdout
    line = next(ln for ln in text.splitlines() if ln.startswith("machine baseline (mpi4py)"))
    assert " ok " in line and "1 rank(s) on 1 node(s): allreduce 8 B" in line
    assert re.search(r"2 rank\(s\) on 1 node\(s\): ping-pong [\d.]+ us, \d+ MB/s", text)
    assert "measured inside each packed allocation" in hpcbench("doctor", "--site", "polaris", check=False).stdout


def test_one_allocation_per_variant_sized_for_the_widest_job_and_the_walltime_cap(tmp_path):
    from hpcbench.executors.pack import plan_packs
    from hpcbench.site import load_site
    from tests.test_sched_units import _spec

    site = load_site("frontier")  # 56 cores per node, 120 min cap, cpu and kokkos on one partition
    jobs = [_spec(tmp_path, f"j{i}", ranks=r, limit=600) for i, r in enumerate([1, 2, 4, 100] * 10)]
    jobs.append(_spec(tmp_path, "gpu", ranks=2, variant="kokkos"))
    plans = plan_packs(jobs, site)
    assert sorted((p.shape.variant, len(p.jobs)) for p in plans) == [("cpu", 40), ("kokkos", 1)]
    cpu = next(p for p in plans if p.shape.variant == "cpu")
    assert cpu.nodes == 2 and cpu.cores_per_node == 56  # the 100-rank job: two whole nodes
    assert cpu.walltime_min == 120 and cpu.jobs[0].width == 100  # capped; widest first
    gpu = next(p for p in plans if p.shape.variant == "kokkos")
    assert gpu.shape.gpus == 8 and gpu.walltime_min < 120


def test_dry_run_says_how_the_partitions_own_launcher_binds(tmp_path, monkeypatch):
    """The dry run's binding comment is that of the launcher the jobs run with (variant, else
    partition, else site), not the site-wide one."""
    import yaml

    monkeypatch.setenv("HPCBENCH_ACCOUNT", "myproj")
    site = yaml.safe_load((ROOT / "site-configs" / "polaris.yaml").read_text())
    for part in site["partitions"]:  # the site-wide launcher stays PALS
        part["launcher"] = {"template": "mpiexec -n {ranks}", "binding": "mpich"}
    path = tmp_path / "polaris-hydra.yaml"
    path.write_text(yaml.safe_dump(site))
    text = _dry(str(path), tmp_path / "c")
    said = [ln for ln in text.splitlines() if ln.startswith("# at run time each run is also bound")]
    assert said and all(ln.endswith("-bind-to user:<its CPUs>") for ln in said), said
    assert re.search(r"r1 instrumented +mpiexec -n 1 -f \S+node0\.hosts -bind-to user:\d+\+\d+ <app>", text)


def test_a_packed_allocation_runs_at_most_max_steps_jobs_at_once(tmp_path):
    """Each job of the allocation runs one step (a build or a run) at a time; the driver keeps at
    most the site's `batch.max_steps` of them in flight (OLCF: no more than 100 simultaneous
    srun's). Before, up to four jobs a core ran: 16 on this 4-core allocation."""
    import subprocess
    import time
    from types import SimpleNamespace

    from hpcbench.jobs.pack import PackDriver, PackManifest
    from hpcbench.schedulers.base import view_for
    from hpcbench.site import load_site

    assert load_site("frontier").batch.max_steps == 100  # the default
    m = PackManifest(scheduler="local", variant="cpu", specs=[], cores_per_node=4, work_dir=str(tmp_path),
                     summary=str(tmp_path / "s.json"), max_steps=3)
    d = PackDriver(m, view_for("local", {}))
    widest: list[int] = []

    def start(path, spec, hosts):  # a job: a short process that leaves its record
        widest.append(len(d.running) + 1)
        d.running[spec.job_id] = (subprocess.Popen(["sh", "-c", f"sleep 0.3; : > {spec.record_path}"]), spec)

    d._start = start  # type: ignore[method-assign]
    specs = [("p", SimpleNamespace(job_id=f"j{i}", width=1, span=0, variant=SimpleNamespace(name="cpu"),
                                   record_path=str(tmp_path / f"j{i}.json"))) for i in range(10)]
    t0 = time.monotonic()
    try:
        d.run(specs)  # type: ignore[arg-type]
    finally:
        shutil.rmtree(d.slots_root, ignore_errors=True)
    assert len(widest) == 10 and max(widest) == 3, widest
    assert time.monotonic() - t0 < 60
