"""What a run sees at run time on a PBS site (Polaris, Aurora): the real packed allocation's driver
(jobs/pack.py), core slots (jobs/slots.py), placement and binding (jobs/placement.py,
jobs/binding.py) and per-rank GPU choice (jobs/gpu_bind.py), started in the environment
OpenPBS's MoM gives the batch script (tests/clusters.mom_env: NCPUS from the select's first
chunk, PBS_NODEFILE a line per chunk, PBS_JOBID).

The stand-in is only for what cannot be reached here, a PBS Pro server and its MoM on ALCF's
nodes; everything a run's placement goes through is hpcbench's own code, run as on the node.
PALS mpiexec cannot run here either: what it does with the options is read from ALCF's pages
(`--cpu-bind list:a:b` one entry per local rank; `--cpu-bind depth --depth d`: local rank r on
the d logical processors after the first r*d of the node's, in order, its reserved cores left out:
on Aurora `--depth 1` puts rank 0 on CPU 1, docs.alcf.anl.gov/aurora/running-jobs-aurora "Binding
MPI ranks and threads to cores", Example 1; PALS_LOCAL_RANKID the rank's index on its node)."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from hpcbench.executors.pack import PackPlan, manifest_for
from hpcbench.jobs import binding, gpu_bind
from hpcbench.jobs.cores import parse_cpu_list
from hpcbench.jobs.pack import PackDriver
from hpcbench.jobs.placement import ENV as PACK_ENV
from hpcbench.jobs.placement import place, placed_launcher
from hpcbench.jobs.records import JobSpec
from hpcbench.jobs.slots import CoreSlots
from hpcbench.schedulers.base import view_for
from hpcbench.site import SiteConfig
from tests.clusters import mom_env


@dataclass
class Rank:
    host: str
    cpus: set[int]
    gpu: str  # "" where the run has no GPU


@dataclass
class Run:
    label: str
    nodes: list[str]
    ranks: list[Rank] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)

    @property
    def cpus(self) -> set[tuple[str, int]]:
        return {(r.host, c) for r in self.ranks for c in r.cpus}

    @property
    def gpus(self) -> set[tuple[str, str]]:
        return {(r.host, r.gpu) for r in self.ranks if r.gpu}


@contextlib.contextmanager
def environ(extra: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def pals_rank_cpus(argv: list[str], local: int, reserved: set[int] = frozenset()) -> set[int]:  # type: ignore[assignment]
    """The CPUs PALS binds local rank `local` to, from the launch's own options."""
    end = binding.option_end(argv)
    opts = argv[:end]
    for i, a in enumerate(opts):
        val = a.split("=", 1)[1] if a.startswith("--cpu-bind=") else (opts[i + 1] if a == "--cpu-bind" else "")
        if val.startswith("list:"):
            entries = val[5:].split(":")
            return set(parse_cpu_list(entries[local % len(entries)]))
        if val == "depth":
            d = int(next((opts[j + 1] for j, b in enumerate(opts) if b in ("--depth", "-d")), "1"))
            free = [c for c in range(4096) if c not in reserved]
            return set(free[local * d:local * d + d])
    return set()


def _gpu_of(argv: list[str], env: dict[str, str], local: int) -> str:
    if any(a.endswith("gpu_tile_compact.sh") for a in argv):  # ALCF's script: the local rank alone
        return f"{local // 2 % 6}.{local % 2}"
    if "hpcbench.jobs.gpu_bind" not in argv:
        return env.get("CUDA_VISIBLE_DEVICES", env.get("ZE_AFFINITY_MASK", ""))
    at = argv.index("hpcbench.jobs.gpu_bind")
    variable, order = argv[at + 1], argv[at + 2]
    return gpu_bind.device_for(order, {**env, "PALS_LOCAL_RANKID": str(local)}, variable)


def reserved_cpus(site: SiteConfig) -> set[int]:
    """The CPU ids (every hardware thread) of the node's reserved cores."""
    part = site.partitions[0]
    physical = part.cores_per_node + len(part.reserved_cores)
    return {k + t * physical for k in part.reserved_cores for t in range(part.threads_per_core)}


def _ranks(site: SiteConfig, argv: list[str], env: dict[str, str], ranks: int, hosts: list[str]) -> list[Rank]:
    ppn = -(-ranks // len(hosts))
    skip = reserved_cpus(site)
    return [Rank(hosts[r // ppn], pals_rank_cpus(argv, r % ppn, skip), _gpu_of(argv, env, r % ppn))
            for r in range(ranks)]


def spec_for(site: SiteConfig, spec: JobSpec) -> JobSpec:
    """The spec as the planner makes it for a GPU variant: a GPU per rank (plan/campaign.py)."""
    return spec.model_copy(update={"gpus_per_rank": int(site.is_gpu_variant(spec.variant.name))})


@dataclass
class Allocation:
    """A packed allocation's driver started as the batch script starts it, in the MoM's environment."""

    site: SiteConfig
    driver: PackDriver
    env: dict[str, str]
    tmp: Path

    @classmethod
    def start(cls, site: SiteConfig, plan: PackPlan, script_text: str, tmp: Path) -> Allocation:
        tmp = Path(tempfile.mkdtemp(dir=tmp))
        _, m = manifest_for(plan, SimpleNamespace(root=tmp, specs_dir=tmp, work_dir=tmp), site, "k", None, "python3")
        script = tmp / "job.sh"
        script.write_text(script_text)
        hosts = [f"x{4000 + i}c0s0b0n0" for i in range(plan.nodes)]
        env = {**mom_env(script, tmp, "1.pbs", hosts), "PBS_JOBID": "1.pbs", "HPCBENCH_SCHEDULER": "pbs"}
        driver = PackDriver(m, view_for(site.scheduler, env))
        # the driver's slots live in node-local memory (/dev/shm): a real driver removes them at its
        # end (jobs/pack.main), this one is never run to its end
        atexit.register(shutil.rmtree, driver.slots_root, True)
        return cls(site, driver, env, tmp)

    def runs(self, spec: JobSpec, ranks: int, count: int) -> list[Run]:
        """`count` runs of `spec` at `ranks` ranks started side by side as the driver starts them:
        each job on its node set (HPCBENCH_PACK), its run holding its core (and GPU) slots there."""
        d = self.driver
        out: list[Run] = []
        with contextlib.ExitStack() as stack:
            for i in range(count):
                width = d.per_node(spec.variant.name)
                n = max(1, min(len(d.hosts), -(-ranks // width)))
                hosts = d.hosts[:n] if n > 1 else [d.hosts[i % len(d.hosts)]]
                ctx = d._context(hosts, spec.variant.name)  # noqa: SLF001 (the driver's own, as _start sets it)
                slots = CoreSlots(d._slots_dir(hosts[0]), d.cpn * len(hosts))  # noqa: SLF001
                with environ({**self.env, PACK_ENV: ctx.to_env()}):
                    held = stack.enter_context(slots.hold(spec.cores_for(ranks), gpus=spec.gpus_for(ranks)))
                    launch = place(spec.launcher, ranks, spec.cores, ["app"], held=binding.of_held(held),
                                   files=self.tmp / f"files{i}")
                argv = launch.argv
                out.append(Run(f"{spec.job_id}#{i}", launch.placement.nodes,
                               _ranks(self.site, argv, launch.env, ranks, launch.placement.nodes), argv))
        return out


def unpacked_run(site: SiteConfig, spec: JobSpec, ranks: int) -> Run:
    """A run of an array subjob (the site's template as is: a subjob is one node)."""
    argv, _, where = placed_launcher(spec.launcher, ranks, None)
    hosts = ["x4000c0s0b0n0"]
    return Run(spec.job_id, hosts, _ranks(site, argv, {}, ranks, hosts), argv)


def _span(lo: int, hi: int, physical: int) -> set[int]:
    return {c + t * physical for c in range(lo, hi + 1) for t in (0, 1)}


# Per GPU slot, the CPU ids (both hardware threads) of its nearest cores, as ALCF documents them
# (not read from the site file under test). Polaris: docs.alcf.anl.gov/polaris/running-jobs/using-gpus
# ("ranks 0-7 on CPUs 24-31 and using GPU 0 ... nvidia-smi topo -m ... pairs CPUs with the closest
# GPU"). Aurora: running-jobs-aurora, the tile compact example's --cpu-bind list:1-8:9-16:...
# (rank i on tile i, GPUs 0-2 on socket 0).
_AURORA_LISTS = [(1, 8), (9, 16), (17, 24), (25, 32), (33, 40), (41, 48), (53, 60), (61, 68), (69, 76),
                 (77, 84), (85, 92), (93, 100)]
NEAREST = {
    "polaris": {"0": _span(24, 31, 32), "1": _span(16, 23, 32), "2": _span(8, 15, 32), "3": _span(0, 7, 32)},
    "aurora": {f"{i // 2}.{i % 2}": _span(lo, hi, 104) for i, (lo, hi) in enumerate(_AURORA_LISTS)},
}
# How many GPU slots a node has, as ALCF documents it: Polaris 4 A100, Aurora 6 PVC of 2 tiles (a
# rank per tile: "Explicit Scaling")
GPU_SLOTS = {"polaris": 4, "aurora": 12}


def near_cpus(site: SiteConfig, variant: str) -> dict[str, set[int]]:
    return NEAREST.get(site.name, {})


def shared_with_later(runs: list, i: int) -> list[str]:
    """The CPUs and GPUs run i shares with the runs after it (both run-time suites: PBS, Slurm)."""
    a, bad = runs[i], []
    for b in runs[i + 1:]:
        if a.cpus & b.cpus:
            bad.append(f"{a.label} and {b.label} share CPUs {sorted(c for _, c in a.cpus & b.cpus)[:8]}")
        if a.gpus & b.gpus:
            bad.append(f"{a.label} and {b.label} share GPUs {sorted(g for _, g in a.gpus & b.gpus)}")
    return bad


def flaws(site: SiteConfig, variant: str, runs: list[Run], nodes_asked: int, rpn: int) -> list[str]:
    """What is wrong with runs that ran side by side: a CPU or GPU shared by two runs, two ranks of a
    run on one GPU where it holds enough, a reserved core, a rank far from its GPU, a run on another
    node count than asked."""
    bad = []
    for i, a in enumerate(runs):
        if len(a.nodes) != nodes_asked:
            bad.append(f"{a.label}: on {len(a.nodes)} nodes, asked {nodes_asked}: {' '.join(a.argv)}")
        if not all(r.cpus for r in a.ranks):
            bad.append(f"{a.label}: a rank with no CPUs: {' '.join(a.argv)}")
        bad += shared_with_later(runs, i)
    reserved = reserved_cpus(site)
    gpu_run = any(r.gpu for run in runs for r in run.ranks)
    near = near_cpus(site, variant) if gpu_run else {}
    for run in runs:
        per_node = [r for r in run.ranks if r.host == run.nodes[0]]
        if len(per_node) <= len(site.node_layout(variant).cores):
            seen: set[int] = set()
            for k, r in enumerate(per_node):
                if r.cpus & seen:
                    bad.append(f"{run.label}: rank {k} shares CPUs {sorted(r.cpus & seen)[:8]} with another rank")
                seen |= r.cpus
        if gpu_run and len(per_node) <= rpn and len({r.gpu for r in per_node}) != len(per_node):
            bad.append(f"{run.label}: ranks share a GPU ({[r.gpu for r in per_node]})")
        for k, r in enumerate(run.ranks):
            if r.cpus & reserved:
                bad.append(f"{run.label}: rank {k} on reserved CPUs {sorted(r.cpus & reserved)}")
            if near and r.gpu and not r.cpus <= near[r.gpu]:
                bad.append(f"{run.label}: rank {k} on CPUs {sorted(r.cpus)[:8]}, far from its GPU {r.gpu} "
                           f"(nearest: {sorted(near[r.gpu])[:8]}...)")
    return bad


def host_lines(path: str) -> list[str]:
    return [ln for ln in Path(path).read_text().split() if ln]


def hostfile_of(argv: list[str]) -> str:
    m = re.search(r"--hostfile (\S+)", " ".join(argv))
    return m.group(1) if m else ""
