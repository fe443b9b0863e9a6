"""The run-time conformance suite of the Slurm sites (Frontier, Perlmutter): what each run sees when
it runs, not what the script says. For each site, cpu and GPU variants, packed on one node and on the
widest allocation its queues take, unpacked, and the sweep's points across node counts, the real
driver, core slots, placement, binding and build steps run in the environment sbatch and slurmstepd
give the batch script (tests/slurm_runtime.py, each variable's form from Slurm's man pages and
source), and their srun lines are placed by the srun stand-in (tests/fake_slurm/srun_standin.py,
srun's documented behaviour: --exact, -c, --cpu-bind, --gpus-per-task, --gpu-bind, core
specialization, and the options it reads from the environment). Steps that run side by side must
start side by side (none waits for another's resources), get disjoint cores and GPUs, never a
specialized core, each Frontier rank its GCD's L3 region ([frontier-gpu-bind]: closest), and the
node count asked for.

The forms of the batch script's variables and their sources (sbatch(1) OUTPUT ENVIRONMENT
VARIABLES, src/common/env.c, src/common/hostlist.c, src/plugins/gres/common/gres_common.c): the
docstring of tests/slurm_runtime.py; the node facts (OLCF's and NERSC's pages): the same.

Failures seen on main at 4d5f038 (before slurm-step-gpus): every GPU run and every build of a
packed Frontier or Perlmutter GPU allocation "would wait": the jobs' steps inherited sbatch's
SLURM_GPUS_PER_NODE, which srun reads as --gpus-per-node, so each step asked all 8 GCDs (4 A100) of
its node and no two ran at once; with that dropped, a build (asking no GPUs) was still given all the
job's GPUs (srun's default) until it said --gres=none; an array task's one-rank Frontier run saw
all 8 GCDs from a core of L3 region 0 ("far from its GPU 0"); and, where scontrol could not run, the
driver of a 9472-node allocation saw one node (slurm-nodelist)."""

from __future__ import annotations

import pytest

from hpcbench.jobs.pack import PackDriver
from hpcbench.schedulers.base import view_for
from hpcbench.schedulers.slurm import expand_hostlist
from hpcbench.site import load_site
from tests.fake_slurm.srun_standin import Steps
from tests.pbs_runtime import spec_for
from tests.slurm_runtime import NODES, Allocation, flaws, host_names, hostlist, unpacked_run
from tests.test_doctor_machine import LOGIN_DEFAULTS
from tests.test_sites_conformance import job_spec, rendered

CASES = [("frontier", "cpu"), ("frontier", "kokkos"), ("perlmutter", "cpu"), ("perlmutter", "cuda")]


def _script(site_name: str, label: str):
    return next(s for s in rendered(site_name).scripts if s.label == label)


def _allocation(site_name: str, label: str, tmp, **kw):
    site = load_site(site_name)
    s = _script(site_name, label)
    return site, s, Allocation.start(site, s.plan, s.text, tmp, LOGIN_DEFAULTS[site_name], **kw)


def _widest(site_name: str, variant: str) -> str:
    labels = [s.label for s in rendered(site_name).scripts if s.label.startswith(f"{variant} submit packed ")]
    return max(labels, key=lambda lb: int(lb.split()[3]))


@pytest.mark.parametrize("site_name,variant", CASES)
@pytest.mark.parametrize("wide", [False, True], ids=["1-node", "widest"])
def test_packed_runs_and_builds_side_by_side_get_their_own_cores_and_gpus(site_name, variant, wide, tmp_path):
    label = _widest(site_name, variant) if wide else f"{variant} submit packed 1 node"
    site, s, alloc = _allocation(site_name, label, tmp_path)
    try:
        d = alloc.driver
        part = site.partition_for(variant)
        assert part is not None
        # the allocation as sbatch gives it: every node of the hostlist, the partition's usable cores
        assert len(d.hosts) == s.plan.nodes and d.cpn == part.cores_per_node, (d.hosts[:3], d.cpn)
        spec = spec_for(site, job_spec(site, tmp_path, f"{variant}-j", variant, [1]))
        gpus = part.gpus_per_node if site.is_gpu_variant(variant) else 0
        hosts_used = min(2, len(d.hosts))  # narrow jobs go round the nodes: two nodes' worth
        for ranks in (1, 2):
            per_node = (gpus // ranks) if gpus else min(8, d.cpn // ranks)
            spec = spec.model_copy(update={"cores": ranks})
            runs = alloc.runs(spec, ranks, per_node * hosts_used)
            builds = [alloc.build(spec, h) for h in d.hosts[:hosts_used]]  # a job compiling beside them
            if gpus and site_name == "frontier":  # cpu and kokkos share queues: one allocation may hold both
                cpu = spec_for(site, job_spec(site, tmp_path, "cpu-beside", "cpu", [1]))
                builds += alloc.runs(cpu, 1, 1)
            bad = flaws(site, variant, runs, 1) + flaws(site, variant, runs + builds, None)
            assert not bad, f"{site_name} {variant} {s.label}, {ranks}-rank runs:\n  " + "\n  ".join(bad)
            # what srun and the ranks inherit: the variant's GPU-aware MPI, nothing of the other kind
            gpu_mpi = {r.env.get("MPICH_GPU_SUPPORT_ENABLED") for r in runs}
            assert gpu_mpi == ({"1"} if gpus else {None}), gpu_mpi
            assert gpus or not any("CRAY_ACCEL_TARGET" in r.env for r in runs)
            alloc.release()
        if wide:  # a job as wide as four nodes runs on four nodes, a node's full share on each
            n = min(4, len(d.hosts))
            rpn = site.ranks_per_node(variant)
            wide_spec = spec_for(site, job_spec(site, tmp_path, f"{variant}-w", variant, [rpn * n]))
            run = alloc.runs(wide_spec, rpn * n, 1)
            assert not flaws(site, variant, run, n), flaws(site, variant, run, n)
            assert run[0].nodes == d.hosts[:n] and len(run[0].ranks) == rpn * n
    finally:
        alloc.close()


@pytest.mark.parametrize("site_name,variant", CASES)
def test_an_unpacked_run_on_a_whole_node_keeps_ranks_apart_and_near_their_gpus(site_name, variant, tmp_path):
    site = load_site(site_name)
    s = _script(site_name, f"{variant} submit unpacked 1 job")
    rpn = site.ranks_per_node(variant)
    spec = spec_for(site, job_spec(site, tmp_path, f"{variant}-u", variant, [rpn]))
    for ranks in sorted({1, 2, rpn}):
        run = unpacked_run(site, s.text, spec, ranks, LOGIN_DEFAULTS[site_name])
        bad = flaws(site, variant, [run], 1)
        assert not bad, f"{site_name} {variant} unpacked at {ranks} ranks:\n  " + "\n  ".join(bad)


@pytest.mark.parametrize("site_name,variant", CASES)
def test_sweep_points_run_on_the_nodes_they_are_labelled_with(site_name, variant, tmp_path):
    """[sweep-nodes] at run time: each point of the sweep's allocation (the strong-scaling points up
    to two nodes' ranks; for the first variant also `--nodes 1,2` at 2 ranks), one after another as
    the driver runs a wide job, is a step on the node count it is labelled with (else the fewest
    that hold it), its ranks spread over them, each holding its GPU on GPU variants."""
    site = load_site(site_name)
    rpn = site.ranks_per_node(variant)
    points = [(f"{variant} sweep", [1, 2, rpn, 2 * rpn], [0, 0, 0, 0])]
    if variant == site.variants[0].name:
        points.append((f"{variant} sweep labelled nodes", [2, 2], [1, 2]))
    for label, ranks, nodes in points:
        _, s, alloc = _allocation(site_name, label, tmp_path)
        try:
            spec = spec_for(site, job_spec(site, tmp_path, "sweep", variant, ranks, nodes=nodes))
            assert alloc.driver.nodes_for(spec) == 2 == len(alloc.driver.hosts), (label, alloc.driver.hosts)
            for case in spec.runs:
                want = case.nodes or -(-case.ranks // rpn)
                run = alloc.runs(spec, case.ranks, 1, nodes=case.nodes)
                assert not flaws(site, variant, run, want), flaws(site, variant, run, want)
                assert {r.host for r in run[0].ranks} == set(alloc.driver.hosts[:want]), run[0].step.argv
                alloc.release()
        finally:
            alloc.close()


def test_the_driver_reads_slurms_hostlist_itself_and_the_cores_it_was_given(tmp_path, monkeypatch):
    """SLURM_JOB_NODELIST in Slurm's hostlist form is read without scontrol (main at 4d5f038 ran
    `scontrol show hostnames`, and where that failed took this host alone: a wide allocation ran on
    one node); SLURM_CPUS_ON_NODE in hardware threads (112 on Frontier) or cores (56, where Slurm
    counts one a core under --threads-per-core=1) leaves the site's usable cores."""
    assert expand_hostlist("frontier[00001-00003,00010],login01") == \
        ["frontier00001", "frontier00002", "frontier00003", "frontier00010", "login01"]
    assert expand_hostlist("nid[001000-001001]") == ["nid001000", "nid001001"] and expand_hostlist("x[1-") is None
    hosts = host_names(load_site("frontier"), 9472)
    with monkeypatch.context() as m:
        m.setenv("PATH", str(tmp_path))  # no scontrol to be found
        assert view_for("slurm", {"SLURM_JOB_NODELIST": hostlist(hosts)}).hosts() == hosts
    for cpus in ("112", "56"):
        _, _, alloc = _allocation("frontier", "cpu submit packed 1 node", tmp_path, cpus_on_node=cpus)
        assert isinstance(alloc.driver, PackDriver) and alloc.driver.cpn == 56, (cpus, alloc.driver.cpn)
        alloc.close()


def test_the_srun_stand_in_places_steps_as_olcf_shows_them_on_frontier():
    """The stand-in against the placements OLCF prints for Frontier (frontier_user_guide at
    olcf/olcf-user-docs 2745903): "srun -N1 -n8 -c1 --cpu-bind=threads" puts rank i on HWT 8i+1 (CPU
    Mapping, 8 ranks round-robin); Example 1 (-n8 -c7 --gpus-per-task=1 --gpu-bind=closest): rank i
    on HWT 8i+1..8i+7 with GPU 4, 5, 2, 3, 6, 7, 0, 1; Example 2 (-n1 -c7): HWT 049-055 and GPU 0;
    Example 9, eight simultaneous one-rank steps: HWT 049/GPU 0, 057/1, 017/2, 025/3, 001/4, 009/5,
    033/6, 041/7."""
    node, hosts = NODES[("frontier", "")], ["frontier00001"]
    placed = lambda step: [(sorted(t.cpus), sorted(t.gpus)) for t in step.tasks]  # noqa: E731
    step = Steps(node, hosts).srun("srun -N1 -n8 -c1 --cpu-bind=threads app".split(), {})
    assert placed(step) == [([8 * i + 1], []) for i in range(8)]
    step = Steps(node, hosts, 8).srun("srun -N1 -n8 -c7 --gpus-per-task=1 --gpu-bind=closest app".split(), {})
    assert placed(step) == [(list(range(8 * i + 1, 8 * i + 8)), [g]) for i, g in enumerate((4, 5, 2, 3, 6, 7, 0, 1))]
    step = Steps(node, hosts, 8).srun("srun -N1 -n1 -c7 --gpus-per-task=1 --gpu-bind=closest app".split(), {})
    assert placed(step) == [(list(range(49, 56)), [0])]
    steps = Steps(node, hosts, 8)
    ex9 = [steps.srun("srun -u --gpus-per-task=1 --gpu-bind=closest -N1 -n1 -c1 app".split(), {}) for _ in range(8)]
    olcf = ((49, 0), (57, 1), (17, 2), (25, 3), (1, 4), (9, 5), (33, 6), (41, 7))
    assert [p for s in ex9 for p in placed(s)] == [([c], [g]) for c, g in olcf]
    # a ninth waits (srun: "Step creation temporarily disabled"), and a step given the batch
    # script's SLURM_GPUS_PER_NODE asks every GPU of the node (srun(1) INPUT ENVIRONMENT VARIABLES)
    assert steps.srun("srun -n1 -c1 --gpus-per-task=1 app".split(), {}).blocked
    alone = Steps(node, hosts, 8).srun("srun -n1 -c1 --gpus-per-task=1 app".split(), {"SLURM_GPUS_PER_NODE": "8"})
    assert len(alone.gpus[hosts[0]]) == 8


@pytest.mark.parametrize("site_name", ["frontier", "perlmutter"])
def test_sweep_nodes_1_2_4_8_runs_each_point_on_its_labelled_node_count(site_name, tmp_path):
    """Issue 37's `sweep --nodes 1,2,4,8` through the stand-ins: the sweep's one allocation holds
    eight nodes (sbatch's nodelist), and each point of 8 ranks is a step on the 1, 2, 4 or 8 nodes
    it is labelled with, its ranks spread over them, never on the nodes of the label before."""
    from tests.test_sites_conformance import Rendered, render

    site = load_site(site_name)
    variant = site.variants[0].name
    out = Rendered(site)
    spec = spec_for(site, job_spec(site, tmp_path, "nodes", variant, [8] * 4, nodes=[1, 2, 4, 8]))
    render(site, tmp_path, "sweep --nodes 1,2,4,8", [spec], True, [8], out)
    (s,) = out.scripts
    assert "#SBATCH --nodes=8" in s.text, s.text[:600]
    alloc = Allocation.start(site, s.plan, s.text, tmp_path, LOGIN_DEFAULTS[site_name])
    try:
        assert len(alloc.driver.hosts) == 8 and alloc.driver.nodes_for(spec) == 8
        for case in spec.runs:
            run = alloc.runs(spec, case.ranks, 1, nodes=case.nodes)
            assert not flaws(site, variant, run, case.nodes), flaws(site, variant, run, case.nodes)
            per_host = [sum(r.host == h for r in run[0].ranks) for h in alloc.driver.hosts[:case.nodes]]
            assert per_host == [8 // case.nodes] * case.nodes, (case.case, per_host, run[0].step.argv)
            alloc.release()
    finally:
        alloc.close()
