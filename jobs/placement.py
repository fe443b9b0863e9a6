"""Where a run's ranks go, and the launch line that puts them there.

Unpacked (one job per allocation, or local), the site's launcher template is used as is.
Packed (many jobs in one allocation, hpcbench/executors/pack.py), the allocation's driver
(jobs/pack.py) hands each job its node set in HPCBENCH_PACK and the launch line says
where the ranks go: the scheduler's view (hpcbench/schedulers/) starts a step on those hosts,
by default in the launcher's own terms (jobs/launchers.py: srun --exact --nodelist, PALS,
Open MPI or Hydra host files). A run uses the fewest nodes of its job's set that hold its ranks, so the strong-scaling
points of one program run on the same nodes, one after another."""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from hpcbench.jobs.affinity import probe_prefix
from hpcbench.jobs.binding import Binding, option_end
from hpcbench.jobs.capture import Confinement
from hpcbench.jobs.cores import cpu_list
from hpcbench.jobs.launchers import launcher_for, rank_variables
from hpcbench.jobs.records import Launcher, Limits, Placement
from hpcbench.jobs.sandbox import Step
from hpcbench.jobs.slots import Held
from hpcbench.schedulers.base import view_for

ENV = "HPCBENCH_PACK"
# Run first in a build's own step: it writes the CPUs the scheduler gave the step ($0), then
# becomes the sandboxed build (same pid), so what is recorded is the step's, not a guess.
_CPUS_PROBE = 'grep "^Cpus_allowed_list:" /proc/self/status > "$0"; exec "$@"'


@dataclass(frozen=True)
class PackContext:
    scheduler: str  # whose allocation view places its steps (hpcbench/schedulers/)
    hosts: tuple[str, ...]  # this job's node set
    cores_per_node: int
    hostfile_dir: str = ""
    driver_host: str = ""  # the node the allocation's driver (and so this job's process) runs on

    def to_env(self) -> str:
        return json.dumps({"scheduler": self.scheduler, "hosts": list(self.hosts),
                           "cores_per_node": self.cores_per_node, "hostfile_dir": self.hostfile_dir,
                           "driver_host": self.driver_host})

    @classmethod
    def from_env(cls) -> PackContext | None:
        raw = os.environ.get(ENV, "")
        if not raw:
            return None
        d = json.loads(raw)
        return cls(d["scheduler"], tuple(d["hosts"]), int(d["cores_per_node"]), d.get("hostfile_dir", ""),
                   d.get("driver_host", ""))

    @property
    def elsewhere(self) -> bool:
        """The job's nodes are not the driver's: its process runs on the driver's node, its work
        (runs, and builds) on its own."""
        return bool(self.driver_host) and self.hosts[0] != self.driver_host


def binding_of(argv: list[str]) -> str:
    for i, a in enumerate(argv):
        if a in ("--rankfile", "-rf") and i + 1 < len(argv):
            return f"{a} {argv[i + 1]} (physical CPUs)"
        if a == "--cpu-list" and i + 1 < len(argv):
            return f"--cpu-list {argv[i + 1]} --bind-to cpu-list:ordered"
        for flag in ("--cpu-bind", "--bind-to", "--cpu_bind", "-bind-to"):
            if a == flag and i + 1 < len(argv):
                return f"{flag} {argv[i + 1]}"
            if a.startswith(flag + "="):
                return a
    return "none"


def hostfile(ctx: PackContext, hosts: list[str]) -> Path:
    """PALS hostfile: one host per line (written once per node subset)."""
    path = Path(ctx.hostfile_dir) / ("+".join(hosts) + ".hosts")
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{h}\n" for h in hosts))
    return path


def placed_launcher(launcher: Launcher, ranks: int, ctx: PackContext | None,
                    hostfile_for=hostfile, nodes: int = 0) -> tuple[list[str], bool, Placement]:
    """The launcher part of the argv (program not included), whether it oversubscribes,
    and the placement it asks for: on `nodes` nodes of the job's set where the run asks for them
    (a sweep point's; never more than the set or the ranks), else the fewest that hold it."""
    if ctx is None:
        argv = launcher.argv(ranks, ranks)
        return argv, False, Placement(nodes=[socket.gethostname()], ranks_per_node=ranks, binding=binding_of(argv))
    cpn = max(1, ctx.cores_per_node)
    n = max(1, min(len(ctx.hosts), max(-(-ranks // cpn), min(nodes, ranks))))
    use = list(ctx.hosts[:n])
    ppn = -(-ranks // n)
    over = ranks > n * cpn
    argv = launcher.argv(ranks, ppn)
    part = launcher_for(launcher.binding, argv)
    argv = view_for(ctx.scheduler).step(part, argv, use, over, lambda: hostfile_for(ctx, use))
    return argv, over, Placement(nodes=use, ranks_per_node=ppn, binding=binding_of(argv), oversubscribed=over,
                                 packed=True)


def build_launch(launcher: Launcher, cpus: list[int], ctx: PackContext | None = None,
                 hostfile_for=hostfile) -> list[str]:
    """The launch that puts a job's build on its own node, bound to the CPUs its core slot gave it,
    where the job's node is not the one its process runs on (a packed allocation's job on node k;
    the slots are node k's, so a build run here would take CPUs of another node's runs): one rank of
    the site's launcher on that node (`mpiexec -n 1 --ppn 1 --hostfile k --cpu-bind list:<cpus>`, as
    ALCF runs a script a node with `mpiexec -n NNODES --ppn 1 ./enable_mps_polaris.sh`). [] where
    the build runs here."""
    ctx = ctx if ctx is not None else PackContext.from_env()
    if ctx is None or not ctx.elsewhere:
        return []
    host = [ctx.hosts[0]]
    argv = launcher.argv(1, 1)
    argv = argv[:option_end(argv)]  # the launcher alone: a GPU wrapper is a run's, not a build's
    part = launcher_for(launcher.binding, argv)
    argv = view_for(ctx.scheduler).step(part, argv, host, False, lambda: hostfile_for(ctx, host))
    if cpus:  # one rank on every CPU the build holds (make -j runs its jobs there)
        argv, _ = part.bind(argv, 1, Binding(cores=(tuple(sorted(cpus)),)), None, host)
    return argv


@dataclass
class Launch:
    """One run's launch: the argv, whether it oversubscribes its cores, where it goes, what to
    add to its environment (its GPUs), the CPUs to start the launcher on (locally), and the
    folder its ranks' probes write into (batch sites: jobs/affinity.py)."""

    argv: list[str]
    oversubscribed: bool
    placement: Placement
    env: dict[str, str]
    cpus: list[int]
    probes: Path | None = None


def place(launcher: Launcher, ranks: int, cores: int, program: list[str], step: Step | None = None,
          held: Binding | None = None, files: Path | None = None, nodes: int = 0) -> Launch:
    """The launch of `program` at `ranks` ranks where this job's allocation puts it, bound to
    the cores and GPUs `held` (the run's core slots; None or empty: the launcher's or the
    scheduler's own placement). With a per-rank `step` (batch schedulers) each rank is wrapped
    in its sandbox here, behind a probe that records its affinity into `files`/probes."""
    ctx = PackContext.from_env()
    argv, over, where = placed_launcher(launcher, ranks, ctx, nodes=nodes)
    if ctx is None:
        over = ranks > cores
        where.oversubscribed = over
    env: dict[str, str] = {}
    if held is not None and (held.cores or held.gpus):
        argv, env = launcher_for(launcher.binding, argv).bind(argv, ranks, held, files, where.nodes)
        where.gpus = list(held.gpus)
        if held.cores:
            where.binding, where.cpus = binding_of(argv), cpu_list(held.cpus)
    if over and launcher.oversubscribe_flag:
        argv.append(launcher.oversubscribe_flag)
    per_rank = step is not None and step.isolation.per_rank
    probes = None
    if per_rank:
        program = step.wrap(program)  # type: ignore[union-attr]
        if files is not None:
            probes = files / "probes"
            program = probe_prefix(probes, rank_variables(launcher_for(launcher.binding, argv))) + program
    cpus = held.cpus if held is not None and not per_rank else []
    return Launch(argv + program, over, where, env, cpus, probes)


def build_confinement(limits: Limits | None, held: Held, launcher: Launcher, probe: Path) -> Confinement:
    """Where a build runs: started on the CPUs of the cores it holds (`held`, its core slots); in a
    packed allocation whose scheduler places steps itself (Slurm: srun --exact steps), as a step of
    its own on as many cores of the job's first node (`depth` CPUs a core, as the launcher counts
    them: srun -c), so that Slurm never puts a timed step on a compiler's core, behind a probe
    that writes into `probe` the CPUs the step was given (build_cpus reads it); in one whose job is
    on another node than its driver (PBS), as one rank of the site's launcher there, bound to the
    slot's CPUs (build_launch)."""
    cpus = [c for core in held.cores for c in core]
    ctx = PackContext.from_env()
    step = view_for(ctx.scheduler).own_step(max(1, len(held.cores)) * launcher.depth, ctx.hosts[0]) if ctx else []
    if not step:
        return Confinement(limits, cpus, tuple(build_launch(launcher, cpus, ctx)) if ctx else ())
    probe.parent.mkdir(parents=True, exist_ok=True)
    probe.unlink(missing_ok=True)
    return Confinement(limits, cpus, (*step, "sh", "-c", _CPUS_PROBE, str(probe)))


def build_cpus(where: Confinement, probe: Path, planned: str) -> str:
    """The CPUs a build ran on: what its own step's probe wrote, else `planned` (its slots')."""
    if not where.launch:
        return planned
    try:
        return probe.read_text().split(":", 1)[1].strip()
    except (OSError, IndexError):
        return planned
