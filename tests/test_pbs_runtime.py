"""The run-time conformance suite of the PBS sites (Polaris, Aurora): what each run sees when
it runs, not what the script says. For each site, cpu and GPU variants, packed on one node and
on the widest allocation its queues take, and unpacked, the real driver, core slots, placement,
binding and per-rank GPU choice run in the environment OpenPBS's MoM gives the batch script
(tests/pbs_runtime.py; the stand-in stands only for the PBS server and MoM, which cannot run
here), and the runs that share a node must get disjoint cores and GPUs (tiles on Aurora), each
rank its GPU's nearest cores, and the node count they asked for.

Failures seen on main at 1e0203d (before the fixes of issue 37): Aurora kokkos packed, every
concurrent run on the template's `--cpu-bind list:1-8:...` and gpu_tile_compact.sh's tiles 0.0,
0.1, ... ("share CPUs", "share GPUs"; the layout had 6 GPU slots and no ZE_AFFINITY_MASK);
Polaris cuda, rank 0 of GPU 0 on cores 0-2 ("far from its GPU 0")."""

from __future__ import annotations

import re

import pytest

from hpcbench.site import load_site
from tests.pbs_runtime import GPU_SLOTS, Allocation, flaws, host_lines, hostfile_of, spec_for, unpacked_run
from tests.test_sites_conformance import job_spec, rendered

CASES = [(s, v) for s in ("polaris", "aurora") for v in (("cpu", "cuda") if s == "polaris" else ("cpu", "kokkos"))]


def _script(site: str, label: str):
    r = rendered(site)
    return next(s for s in r.scripts if s.label == label)


def _allocation(site_name: str, variant: str, wide: bool, tmp):
    site = load_site(site_name)
    r = rendered(site_name)
    labels = [s.label for s in r.scripts if s.label.startswith(f"{variant} submit packed ")]
    label = max(labels, key=lambda lb: int(lb.split()[3])) if wide else f"{variant} submit packed 1 node"
    s = _script(site_name, label)
    return site, s, Allocation.start(site, s.plan, s.text, tmp)


@pytest.mark.parametrize("site_name,variant", CASES)
@pytest.mark.parametrize("wide", [False, True], ids=["1-node", "widest"])
def test_packed_runs_side_by_side_get_their_own_cores_and_gpus(site_name, variant, wide, tmp_path):
    site, s, alloc = _allocation(site_name, variant, wide, tmp_path)
    d = alloc.driver
    part = site.partition_for(variant)
    assert part is not None
    # the allocation as the MoM gives it: every node of the select, every core of a node
    assert len(d.hosts) == s.plan.nodes and d.cpn == part.cores_per_node, (d.hosts[:3], d.cpn, alloc.env["NCPUS"])
    spec = spec_for(site, job_spec(site, tmp_path, f"{variant}-j", variant, [1]))
    gpus = GPU_SLOTS[site_name] if site.is_gpu_variant(variant) else 0
    # a GPU slot per GPU (per tile on Aurora), each runs are given of their own
    assert len(site.node_layout(variant).gpus) == GPU_SLOTS[site_name] and site.node_layout(variant).gpu_env
    rpn = site.ranks_per_node(variant)
    hosts_used = min(2, len(d.hosts))  # narrow jobs go round the nodes: two nodes' worth
    for ranks in (1, 2):
        per_node = (gpus // ranks) if gpus else min(8, d.cpn // ranks)
        spec = spec.model_copy(update={"cores": ranks})
        runs = alloc.runs(spec, ranks, per_node * hosts_used)
        bad = flaws(site, variant, runs, 1, rpn)
        assert not bad, f"{site_name} {variant} {s.label}, {ranks}-rank runs:\n  " + "\n  ".join(bad)
    if wide:  # a job as wide as four nodes runs on four nodes, a node's full share on each
        n = min(4, len(d.hosts))
        spec = spec.model_copy(update={"cores": rpn * n})
        run = alloc.runs(spec, rpn * n, 1)
        assert not flaws(site, variant, run, n, rpn), flaws(site, variant, run, n, rpn)
        assert host_lines(hostfile_of(run[0].argv)) == d.hosts[:n]


@pytest.mark.parametrize("site_name,variant", CASES)
def test_an_unpacked_run_on_a_whole_node_keeps_ranks_apart_and_near_their_gpus(site_name, variant, tmp_path):
    site = load_site(site_name)
    rpn = site.ranks_per_node(variant)
    spec = spec_for(site, job_spec(site, tmp_path, f"{variant}-u", variant, [rpn]))
    for ranks in sorted({1, 2, rpn}):
        run = unpacked_run(site, spec, ranks)
        bad = flaws(site, variant, [run], 1, rpn)
        assert not bad, f"{site_name} {variant} unpacked at {ranks} ranks:\n  " + "\n  ".join(bad)
        if site.is_gpu_variant(variant):
            assert all(r.gpu for r in run.ranks), run.argv


@pytest.mark.parametrize("site_name,threads", [("polaris", 64), ("aurora", 208)])
def test_the_select_asks_the_whole_node_so_the_moms_ncpus_is_the_nodes(site_name, threads, tmp_path):
    """main at 1e0203d asked `select=N:system=polaris` (no ncpus): the MoM's NCPUS was 1 (the
    chunk's ncpus). Now the chunk asks the node's hardware threads (ALCF's ncpus) and NCPUS is the
    node's; a script without it still runs on the site's cores, and the driver says NCPUS is wrong."""
    site, s, alloc = _allocation(site_name, "cpu", False, tmp_path)
    assert alloc.env["NCPUS"] == str(threads) and not [w for w in alloc.driver.warnings if "NCPUS" in w]
    old = re.sub(r":ncpus=\d+", "", s.text)
    before = Allocation.start(site, s.plan, old, tmp_path)
    assert before.env["NCPUS"] == "1" and before.driver.cpn == site.partition_for("cpu").cores_per_node
    assert any(w.startswith("NCPUS is 1 where a whole node has") for w in before.driver.warnings)
    assert before.driver.summary["warnings"] == before.driver.warnings


def test_a_build_of_a_job_on_another_node_runs_there_on_its_own_cpus(tmp_path):
    """A packed job on node k runs its driver process on the allocation's first node; main at
    1e0203d built there too, bound to CPU ids of node k's slots (so on cores node 0's runs held).
    The build is now one rank of the site's launcher on node k bound to its slot's CPUs; a job on
    the driver's node builds in place."""
    from hpcbench.jobs.placement import PackContext, build_launch

    site = load_site("polaris")
    ctx = PackContext("pbs", ("x4001c0s0b0n0",), 32, str(tmp_path / "hosts"), driver_host="x4000c0s0b0n0")
    for variant in ("cpu", "cuda"):
        argv = build_launch(site.launcher_for(variant), [5, 37], ctx)
        hf = argv[argv.index("--hostfile") + 1]
        assert argv[:5] == ["mpiexec", "--np", "1", "--ppn", "1"] and host_lines(hf) == ["x4001c0s0b0n0"], argv
        assert argv[-2:] == ["--cpu-bind", "list:5,37"] and "gpu_bind" not in " ".join(argv), argv
    here = PackContext("pbs", ("x4000c0s0b0n0",), 32, str(tmp_path / "hosts"), driver_host="x4000c0s0b0n0")
    assert build_launch(site.launcher_for("cpu"), [5], here) == []
    assert build_launch(site.launcher_for("cpu"), [5], None) == []  # unpacked: the job's own node


def test_a_build_started_through_pals_on_its_node_builds(tmp_path, monkeypatch):
    """The build line above, run: `make` of a PETSc program behind the PALS stand-in (PALS cannot run
    here; tests/fake_pbs/pals_mpiexec.py starts the rank with Open MPI on its --cpu-bind entry)."""
    import os
    from pathlib import Path

    from hpcbench.jobs.build import BINARY_NAME, build_submission
    from hpcbench.jobs.capture import Confinement
    from hpcbench.jobs.placement import PackContext, build_launch
    from hpcbench.jobs.records import Isolation
    from hpcbench.petsc_env import find_petsc

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "mpiexec").symlink_to(Path(__file__).parent / "fake_pbs" / "pals_mpiexec.py")
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.c").write_text('#include <petscsys.h>\nint main(int argc, char **argv) {\n'
                                '  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));\n'
                                '  PetscCall(PetscFinalize());\n  return 0;\n}\n')
    cpu = sorted(os.sched_getaffinity(0))[0]
    ctx = PackContext("pbs", ("nodek",), 1, str(tmp_path / "hosts"), driver_host="node0")
    launch = build_launch(load_site("polaris").launcher_for("cpu"), [cpu], ctx)
    res = build_submission(src, ["main.c"], "main.c", find_petsc(), isolation=Isolation(level="none"),
                           confinement=Confinement(None, [cpu], launch))
    assert res.exit_code == 0 and (src / BINARY_NAME).is_file(), res.stderr[-800:]
    assert res.command.startswith("mpiexec --np 1 --ppn 1") and f"list:{cpu}" in res.command


def test_the_dry_run_shows_the_build_line_each_packed_job_runs(tmp_path):
    """`submit --dry-run` on a PBS site prints each packed job's build as it runs: a job on another
    node than the driver's builds through one rank of PALS there (the line build_launch gives the
    job at run time, its core slot's CPUs), one on the driver's node in place on its slot's CPUs
    (main at 4d5f038 printed no build line for PBS; the Slurm dry run shows its build step)."""
    from hpcbench.executors import executor_for
    from hpcbench.executors.pack import plan_launch_lines
    from hpcbench.jobs.placement import PackContext, build_launch
    from hpcbench.plan.campaign import Campaign
    from tests.test_sites_conformance import job_spec

    site = load_site("polaris")
    jobs = [job_spec(site, tmp_path, f"cpu-{i}", "cpu", [1, 2]) for i in range(3)]
    jobs.append(job_spec(site, tmp_path, "wide", "cpu", [32 * 10]))  # ten nodes: prod's least
    ex = executor_for(site, Campaign(tmp_path / "c"), account="p", pack=True, baseline_ranks=None)
    (plan, _), = ex.dry_run(jobs)
    lines = plan_launch_lines(plan, site)
    builds = {ln.split(":")[0].split()[2]: nxt.split(None, 2)[2] for ln, nxt in zip(lines, lines[1:], strict=False)
              if ln.startswith("# job ") and "build" in nxt}
    assert set(builds) == {"wide", "cpu-0", "cpu-1", "cpu-2"}, lines
    ctx = PackContext("pbs", ("node1",), 32, str(tmp_path / "hosts"), driver_host="node0")
    runs_with = build_launch(site.launcher_for("cpu"), [0, 32], ctx)
    shown = builds["cpu-1"].split()
    assert shown[:len(runs_with)] == [a.replace(str(tmp_path / "hosts"), "$PACK_HOSTS") for a in runs_with], shown
    assert shown[-3:] == ["<sandbox>", "make", "app"]
    assert builds["cpu-0"].startswith("[on the driver's node node0, CPUs 0,32]"), builds["cpu-0"]
    slurm = [ln for ln in plan_launch_lines(next(s for s in rendered("frontier").scripts
                                                 if s.label == "cpu submit packed 1 node").plan, load_site("frontier"))
             if "hpcbench-build" in ln]
    assert slurm and all("srun --exact" in ln for ln in slurm)
