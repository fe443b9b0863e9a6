"""What a run sees at run time on a Slurm site (Frontier, Perlmutter): the real packed allocation's
driver (jobs/pack.py: its hosts, cores a node, each job's environment), core slots (jobs/slots.py),
placement and binding (jobs/placement.py, jobs/binding.py: the `srun --exact` line of each run and
each build), started in the environment sbatch and slurmstepd give the batch script of the
allocation hpcbench's script asks for, and the steps placed by a stand-in for srun
(tests/fake_slurm/srun_standin.py: srun and Slurm's step manager cannot run here with the centres'
nodes) that reads the step's options from its command line and from the environment it inherits,
as srun does.

The batch script's environment (`sbatch_env`), each variable in the form Slurm writes it:
- SLURM_JOB_ID, SLURM_JOBID, SLURM_JOB_NAME, SLURM_JOB_PARTITION, SLURM_JOB_QOS, SLURM_JOB_ACCOUNT,
  SLURM_SUBMIT_DIR, SLURM_CLUSTER_NAME, SLURMD_NODENAME, SLURM_NODEID, SLURM_PROCID, SLURM_LOCALID,
  SLURM_GTIDS (0 in the batch step): sbatch(1) OUTPUT ENVIRONMENT VARIABLES (doc/man/man1/sbatch.1 at
  SchedMD/slurm 284c3b9), src/common/env.c env_array_for_batch_job.
- SLURM_JOB_NODELIST and SLURM_NODELIST: "List of nodes allocated to the job" in Slurm's hostlist
  form (`frontier[00001-00004]`, one host bare; src/common/hostlist.c), SLURM_JOB_NUM_NODES and
  SLURM_NNODES their count.
- SLURM_CPUS_ON_NODE: "Number of CPUs allocated to the batch step ... For the cons/tres plugin, this
  number indicates the number of CPUs on this node allocated to the step": whole nodes on both sites
  ([frontier-exclusive], [perlmutter-exclusive]), every CPU (hardware thread) of the node less the
  specialized cores' (Frontier's -S 8). SLURM_JOB_CPUS_PER_NODE the same count in its
  `CPU_count[(xnumber_of_nodes)]` form ("SLURM_JOB_CPUS_PER_NODE='72(x2),36'";
  env.c uint32_compressed_to_str), SLURM_TASKS_PER_NODE likewise.
- SLURM_NTASKS and SLURM_NPROCS ("if any of the --ntasks-per-* options are specified, set to the
  number of tasks in the job"; "This is also an input variable for srun"), SLURM_NTASKS_PER_NODE,
  SLURM_CPUS_PER_TASK ("Only set if ... --cpus-per-task"), SLURM_TRES_PER_TASK (`cpu=N`: "If
  --cpus-per-task or --gpus-per-task is specified, it is also set in SLURM_TRES_PER_TASK").
- Where the script asks GPUs: SLURM_GPUS_PER_NODE ("Requested GPU count per allocated node. Only
  set if the --gpus-per-node option is specified"; env.c set_env_from_opts, which sbatch.c calls),
  SLURM_GPUS_ON_NODE ("Number of GPUs allocated to the batch step") and SLURM_JOB_GPUS ("The global
  GPU IDs of the GPUs allocated to this job"; src/plugins/gres/common/gres_common.c).
- The login environment sbatch exports (sbatch(1) `--export`, ALL by default), the site's documented
  login defaults (tests/test_doctor_machine.LOGIN_DEFAULTS: Perlmutter's gpu module with
  CRAY_ACCEL_TARGET and, to be safe either way, GPU-aware MPI on), through the script's own setup
  lines run by bash (`module` is a no-op here: there is no Lmod; the lines' exports and unsets are
  what this shows).

The node of each site is the centres' (not read from the site file under test): Frontier 64 cores
of 2 hardware threads in 8 L3 regions of 8, the first core of each kept by core specialization
(-S 8: 56 usable), 8 GCDs each on one L3 region (frontier_user_guide at olcf/olcf-user-docs
2745903, "Note on NUMA domains": "hardware threads 000-007, 064-071 | GPU 4 ... 056-063, 120-127 |
GPU 1"; "Low-noise Mode Layout"); Perlmutter's GPU node one AMD EPYC 7763 (64 cores, 2 threads)
and 4 A100, its CPU node two (128 cores) (docs.nersc.gov/systems/perlmutter/architecture: "GPU ...
1x AMD EPYC 7763 4x NVIDIA A100 ... CPU ... 2x AMD EPYC 7763"; docs/sites.md perlmutter-node)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from hpcbench.executors.pack import PackPlan, manifest_for
from hpcbench.jobs import binding
from hpcbench.jobs.pack import PackDriver
from hpcbench.jobs.placement import ENV as PACK_ENV
from hpcbench.jobs.placement import build_confinement, place, placed_launcher
from hpcbench.jobs.records import JobSpec
from hpcbench.jobs.sandbox import step_env
from hpcbench.jobs.slots import CoreSlots
from hpcbench.schedulers.base import view_for
from hpcbench.site import SiteConfig
from tests.fake_slurm.srun_standin import Node, Step, Steps
from tests.pbs_runtime import environ, shared_with_later

# GPU g's L3 region: frontier_user_guide (olcf/olcf-user-docs 2745903), "Note on NUMA domains": "hardware
# threads 000-007, 064-071 | GPU 4; 008-015, 072-079 | GPU 5; 016-023 | GPU 2; 024-031 | GPU 3;
# 032-039 | GPU 6; 040-047 | GPU 7; 048-055 | GPU 0; 056-063 | GPU 1"
_FRONTIER_GPU_REGION = (6, 7, 2, 3, 0, 1, 4, 5)
# Frontier: 64 cores, 2 threads, -S 8 keeps "the first core in each L3 region ... only 56 allocatable
# cores" ("Low-noise Mode Layout"), -c counts physical cores under the default --threads-per-core=1
# (the srun options table). Perlmutter: docs.nersc.gov/systems/perlmutter/architecture ("GPU ... 1x AMD
# EPYC 7763 4x NVIDIA A100"; "CPU ... 2x AMD EPYC 7763"), 64 cores a 7763, 2 threads a core
# (docs/sites.md perlmutter-node, docs.nersc.gov/jobs/affinity).
NODES = {
    ("frontier", ""): Node(cores=64, threads=2, regions=tuple(tuple(range(8 * r, 8 * r + 8)) for r in range(8)),
                           specialized=frozenset(range(0, 64, 8)), gpus=8, gpu_region=_FRONTIER_GPU_REGION,
                           default_threads=1),
    ("perlmutter", "gpu"): Node(cores=64, threads=2, regions=(tuple(range(64)),), gpus=4),
    ("perlmutter", "cpu"): Node(cores=128, threads=2, regions=(tuple(range(64)), tuple(range(64, 128)))),
}
# Where the site's rule puts each rank on its GPU's nearest cores ([frontier-gpu-bind]: closest);
# Perlmutter's runs see their step's GPUs (--gpu-bind=none) and its rule says no more.
NEAR = {"frontier"}
HOSTS = {"frontier": ("frontier", 5), "perlmutter": ("nid", 6)}  # node names: frontier00001, nid001000


def node_for(site: SiteConfig, variant: str) -> Node:
    part = site.partition_for(variant)
    return NODES[(site.name, part.constraint if part else "")]


def host_names(site: SiteConfig, n: int) -> list[str]:
    prefix, width = HOSTS[site.name]
    return [f"{prefix}{1000 + i if site.name == 'perlmutter' else 1 + i:0{width}d}" for i in range(n)]


def hostlist(hosts: list[str]) -> str:
    """Slurm's form of consecutive hosts of one prefix: `frontier[00001-00004]`, one host bare."""
    if len(hosts) == 1:
        return hosts[0]
    m0, m1 = re.fullmatch(r"(\D+)(\d+)", hosts[0]), re.fullmatch(r"(\D+)(\d+)", hosts[-1])
    assert m0 and m1
    return f"{m0.group(1)}[{m0.group(2)}-{m1.group(2)}]"


def directives(text: str) -> dict[str, str]:
    return dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)$", text, re.M))


def sbatch_env(site: SiteConfig, text: str, hosts: list[str], variant: str, jid: str = "1001") -> dict[str, str]:
    """The SLURM_* variables of the batch script of `text` on `hosts` (see the module's note)."""
    d = directives(text)
    node = node_for(site, variant)
    n = len(hosts)
    cpus = (node.cores - len(node.specialized)) * node.threads
    per_nodes = (lambda v: f"{v}(x{n})" if n > 1 else str(v))  # noqa: E731
    env = {"SLURM_JOB_ID": jid, "SLURM_JOBID": jid, "SLURM_JOB_NAME": d.get("job-name", "sbatch"),
           "SLURM_JOB_NODELIST": hostlist(hosts), "SLURM_NODELIST": hostlist(hosts),
           "SLURM_JOB_NUM_NODES": str(n), "SLURM_NNODES": str(n), "SLURM_CPUS_ON_NODE": str(cpus),
           "SLURM_JOB_CPUS_PER_NODE": per_nodes(cpus), "SLURM_JOB_PARTITION": d.get("partition", "regular"),
           "SLURM_JOB_QOS": d.get("qos", "normal"), "SLURM_JOB_ACCOUNT": d.get("account", ""),
           "SLURM_SUBMIT_DIR": "/ccs/home/u", "SLURM_CLUSTER_NAME": site.name, "SLURMD_NODENAME": hosts[0],
           "SLURM_NODEID": "0", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_GTIDS": "0"}
    if "ntasks-per-node" in d:
        tpn = int(d["ntasks-per-node"])
        env.update(SLURM_NTASKS_PER_NODE=str(tpn), SLURM_NTASKS=str(tpn * n), SLURM_NPROCS=str(tpn * n),
                   SLURM_TASKS_PER_NODE=per_nodes(tpn))
    if "cpus-per-task" in d:
        env.update(SLURM_CPUS_PER_TASK=d["cpus-per-task"], SLURM_TRES_PER_TASK=f"cpu={d['cpus-per-task']}")
    if "gpus-per-node" in d:
        env.update(SLURM_GPUS_PER_NODE=d["gpus-per-node"], SLURM_GPUS_ON_NODE=d["gpus-per-node"],
                   SLURM_JOB_GPUS=",".join(str(g) for g in range(int(d["gpus-per-node"]))))
    return env


def batch_env(text: str, login: dict[str, str], slurm: dict[str, str]) -> dict[str, str]:
    """The environment the script's command starts in: the login environment and sbatch's
    variables, through the script's setup lines (bash; `module` a no-op: no Lmod here)."""
    setup = text.split("# setup\n", 1)[1].split("\n# command", 1)[0]
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), **login, **slurm}
    out = subprocess.run(["bash", "-c", "module() { :; }\n" + setup + "\nenv -0"], env=base, capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return dict(kv.split("=", 1) for kv in out.split("\0") if "=" in kv)


@dataclass
class Rank:
    host: str
    cpus: set[int]
    gpus: frozenset[int]


@dataclass
class Run:
    label: str
    step: Step
    env: dict[str, str]  # what srun (and so the ranks) inherit
    gpu: bool = False  # a GPU variant's run (a rank a GPU); a build or a CPU run uses none

    @property
    def nodes(self) -> list[str]:
        return self.step.hosts

    @property
    def ranks(self) -> list[Rank]:
        return [Rank(t.host, t.cpus, t.gpus) for t in self.step.tasks]

    @property
    def cpus(self) -> set[tuple[str, int]]:
        return {(r.host, c) for r in self.ranks for c in r.cpus}

    @property
    def gpus(self) -> set[tuple[str, int]]:
        return {(h, g) for h, gs in self.step.gpus.items() for g in gs}


@dataclass
class Allocation:
    """A packed allocation's driver started as the batch script starts it, in sbatch's environment,
    its steps placed by the srun stand-in."""

    site: SiteConfig
    driver: PackDriver
    env: dict[str, str]
    steps: Steps
    tmp: Path
    _held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    @classmethod
    def start(cls, site: SiteConfig, plan: PackPlan, text: str, tmp: Path, login: dict[str, str],
              cpus_on_node: str = "") -> Allocation:
        tmp = Path(tempfile.mkdtemp(dir=tmp))
        _, m = manifest_for(plan, SimpleNamespace(root=tmp, specs_dir=tmp, work_dir=tmp), site, "k", None, "python3")
        variant = plan.jobs[0].variant.name
        hosts = host_names(site, plan.nodes)
        slurm = sbatch_env(site, text, hosts, variant)
        if cpus_on_node:
            slurm["SLURM_CPUS_ON_NODE"] = cpus_on_node
        env = batch_env(text, login, slurm)
        driver = PackDriver(m, view_for("slurm", env))
        job_gpus = int(directives(text).get("gpus-per-node", "0"))
        return cls(site, driver, env, Steps(node_for(site, variant), driver.hosts, job_gpus), tmp)

    def release(self) -> None:
        """End every live step and give back the slots their runs held."""
        self._held.close()
        self._held = contextlib.ExitStack()
        self.steps.live.clear()

    def close(self) -> None:
        self.release()
        shutil.rmtree(self.driver.slots_root, ignore_errors=True)

    def _slots(self, hosts: list[str]) -> CoreSlots:
        d = self.driver
        return CoreSlots(d._slots_dir(hosts[0]), d.cpn * len(hosts))  # noqa: SLF001 (the driver's own, as job_env says)

    def runs(self, spec: JobSpec, ranks: int, count: int, nodes: int = 0) -> list[Run]:
        """`count` runs of `spec` at `ranks` ranks (on `nodes` nodes: a sweep point's label) started
        side by side as the driver starts them: each job on its node set, its run holding its core
        (and GPU) slots, its srun line given to the stand-in with the job's environment. They stay
        live (holding their steps) until `close`."""
        d = self.driver
        out = []
        for i in range(count):
            k = d.nodes_for(spec)
            hosts = d.hosts[:k] if k > 1 else [d.hosts[i % len(d.hosts)]]
            job_env = d.job_env(spec, hosts, base=self.env)
            with environ({PACK_ENV: job_env[PACK_ENV]}):  # as the job reads its node set
                held = self._held.enter_context(self._slots(hosts).hold(
                    spec.cores_for(ranks), gpus=spec.gpus_for(ranks)))
                launch = place(spec.launcher, ranks, spec.cores, ["app"], held=binding.of_held(held),
                               files=self.tmp / f"files{i}", nodes=nodes)
            srun_env = step_env(launch.env, base=job_env)  # jobs/launch.run_env: what the launcher sees
            out.append(Run(f"{spec.job_id}#{len(self.steps.live)}", self.steps.srun(launch.argv, srun_env), srun_env,
                           self.site.is_gpu_variant(spec.variant.name)))
        return out

    def build(self, spec: JobSpec, host: str) -> Run:
        """A job's build on `host` as the job starts it beside the runs: its own step (build_confinement)."""
        job_env = self.driver.job_env(spec, [host], base=self.env)
        with environ({PACK_ENV: job_env[PACK_ENV]}):
            held = self._held.enter_context(self._slots([host]).hold(1))
            where = build_confinement(spec.limits, held, spec.launcher, self.tmp / "build.cpus")
        env = step_env({}, base=job_env)
        return Run(f"build of {spec.job_id} on {host}", self.steps.srun(list(where.launch), env), env)


def unpacked_run(site: SiteConfig, text: str, spec: JobSpec, ranks: int, login: dict[str, str]) -> Run:
    """A run of an array task (one node, the site's template as is), in its batch script's environment."""
    variant = spec.variant.name
    hosts = host_names(site, 1)
    env = batch_env(text, login, {**sbatch_env(site, text, hosts, variant), "SLURM_ARRAY_TASK_ID": "0",
                                  "SLURM_ARRAY_JOB_ID": "1001"})
    argv, _, _ = placed_launcher(spec.launcher, ranks, None)
    srun_env = step_env({}, base=env)
    steps = Steps(node_for(site, variant), hosts, int(directives(text).get("gpus-per-node", "0")))
    return Run(spec.job_id, steps.srun([*argv, "app"], srun_env), srun_env, site.is_gpu_variant(variant))


def reserved_cpus(node: Node) -> set[int]:
    return {cpu for c in node.specialized for cpu in node.cpus(c, node.threads)}


def flaws(site: SiteConfig, variant: str, runs: list[Run], nodes_asked: int | None) -> list[str]:
    """What is wrong with steps that run side by side: one srun would wait for (Slurm could not
    start it beside the others), a CPU or GPU shared by two steps, ranks of one step on one CPU, a
    GPU rank without a GPU of its own, a specialized core, a rank far from its GPU where the site's
    rule binds closest, a step on another node count than asked (None: not asked)."""
    node = node_for(site, variant)
    bad = []
    for i, a in enumerate(runs):
        cmd = " ".join(a.step.argv)
        if a.step.blocked:
            bad.append(f"{a.label}: srun would wait ({a.step.blocked}): {cmd}")
            continue
        if nodes_asked is not None and len(a.nodes) != nodes_asked:
            bad.append(f"{a.label}: on {len(a.nodes)} nodes, asked {nodes_asked}: {cmd}")
        if not all(r.cpus for r in a.ranks):
            bad.append(f"{a.label}: a rank with no CPUs: {cmd}")
        bad += shared_with_later(runs, i)
    for run in (r for r in runs if not r.step.blocked):
        cmd = " ".join(run.step.argv)
        seen: set[tuple[str, int]] = set()
        for k, r in enumerate(run.ranks):
            mine = {(r.host, c) for c in r.cpus}
            if mine & seen:
                bad.append(f"{run.label}: rank {k} shares CPUs {sorted(c for _, c in mine & seen)[:8]} "
                           "with another rank")
            seen |= mine
            if r.cpus & reserved_cpus(node):
                bad.append(f"{run.label}: rank {k} on specialized cores' CPUs {sorted(r.cpus & reserved_cpus(node))}")
            if run.gpu and not r.gpus:
                bad.append(f"{run.label}: rank {k} sees no GPU: {cmd}")
            if site.name in NEAR and run.gpu and r.gpus:
                # the GPU it uses: the runtime's device 0, the lowest id it sees ("The HIP runtime
                # relabels the GPUs each rank can access starting at 0", frontier_user_guide)
                g, region = min(r.gpus), {c % node.cores for c in r.cpus}
                if not region <= set(node.regions[node.gpu_region[g]]):
                    bad.append(f"{run.label}: rank {k} on cores {sorted(region)}, far from its GPU {g} "
                               f"(its L3 region: cores {node.regions[node.gpu_region[g]]})")
        if run.gpu:
            for host in run.nodes:
                on = [r for r in run.ranks if r.host == host]
                if len(run.step.gpus.get(host, ())) < len(on):
                    bad.append(f"{run.label}: {len(on)} ranks on {host} hold {len(run.step.gpus.get(host, ()))} GPUs")
        if not run.gpu:
            if any(run.step.gpus.get(h) for h in run.nodes):
                bad.append(f"{run.label}: holds GPUs {sorted(run.gpus)[:8]} it does not use: {cmd}")
    return bad
