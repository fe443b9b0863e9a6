"""Packed allocations: all jobs of a variant in ONE batch job, which runs them inside itself.

On node-exclusive machines (Polaris, Aurora, Frontier, Perlmutter's regular QOS) a job
array of one-node jobs queues dozens of whole-node allocations one after another; users
there pack many runs into one allocation. With packing on (`submit --pack`, the default
where the site says `exclusive_nodes: true`; sweeps always), the executor asks for one
allocation per variant, sized for its widest job (nodes) and for the total work (walltime,
capped at the partition's), and the batch script `exec`s jobs/pack.py, which starts the
jobs inside it: Slurm job steps (`srun --exact`), PALS `mpiexec --hostfile` on subsets of
$PBS_NODEFILE (jobs/placement.py). Jobs left when the allocation ends have no record:
the executor records them as not run (cancelled) and `submit --resume` runs them.

    <campaign>/scheduler/pack/<name>-<n>.json          the manifest the driver reads
    <campaign>/scheduler/pack/<name>-<n>.summary.json  what it ran and left (written at its end)
    <campaign>/machine/baseline-<variant>.json         the mpi4py baseline, when asked for"""

from __future__ import annotations

import functools
import shlex
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from hpcbench.executors.queues import capped_walltime
from hpcbench.executors.shapes import ArrayPlan, job_walltime_s, shape_of, start_order
from hpcbench.jobs.binding import Binding
from hpcbench.jobs.cores import NodeLayout, cpu_list
from hpcbench.jobs.instruments import EVERY_RUN, OPTIONS_FILE, LogViewProbe, MallocProbe, SolverMonitorProbe
from hpcbench.jobs.launchers import launcher_for
from hpcbench.jobs.pack import BaselineRequest, PackManifest
from hpcbench.jobs.placement import PackContext, build_launch, placed_launcher
from hpcbench.jobs.records import JobSpec, Launcher
from hpcbench.jobs.slots import CoreSlots
from hpcbench.problem import language_of
from hpcbench.schedulers.base import view_for
from hpcbench.site import SiteConfig

BASELINE_S = 120.0  # walltime kept for the machine baseline and the driver's start


@dataclass
class PackPlan(ArrayPlan):
    """One allocation: `nodes` nodes with `cores_per_node` cores each for every job in `jobs`;
    `ranks_per_node`: per variant, the ranks a node holds for one run (GPU variants: one per
    GPU); `variant_setup`: per variant, the lines its jobs start with when the allocation holds
    more than one variant (a queue's per-user limit merged them; docs/sites.md, queues)."""

    nodes: int = 1
    cores_per_node: int = 1
    ranks_per_node: dict[str, int] = field(default_factory=dict)
    variant_setup: dict[str, list[str]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"hpcbench-pack-{self.shape.variant}"

    def node_count(self) -> int:
        return self.nodes

    def node_hours(self) -> float:
        return self.nodes * self.walltime_min / 60


def _pack_walltime(members: list[JobSpec], site: SiteConfig, part, nodes: int, cores: int) -> int:
    total = cores * nodes
    work_s = sum(job_walltime_s(j) * min(j.width, total) for j in members) / total
    want_s = BASELINE_S + max(work_s, max(job_walltime_s(j) for j in members))
    return capped_walltime(site.batch.walltime_min or int(-(-want_s // 60)), part, nodes)


def _variant_pack(variant: str, members: list[JobSpec], site: SiteConfig) -> PackPlan:
    rpn = site.ranks_per_node(variant)
    # Nodes only where the site declares what a node holds; else one node (this machine,
    # a test cluster) on which a wider job runs oversubscribed, as unpacked.
    nodes = max(max(-(-j.width // rpn), j.span) for j in members) if rpn else 1
    shape, part = shape_of(members[0], site, nodes)
    cpn = part.cores_per_node if part and part.cores_per_node else site.total_cores()
    # Cores asked per node: a whole node on node-exclusive sites or when the pack
    # fills one; otherwise what the jobs would use side by side.
    cores = cpn if (site.exclusive_nodes or nodes > 1) else min(cpn, max(sum(min(j.width, cpn) for j in members),
                                                                       max(j.width for j in members)))
    sh = type(shape)(partition=shape.partition, cpus=cores, gpus=shape.gpus, variant=variant)
    return PackPlan(sh, members, _pack_walltime(members, site, part, nodes, cores), part, site.setup_for(variant),
                    nodes=nodes, cores_per_node=cores, ranks_per_node={variant: rpn or cores})


def _merged(plans: list[PackPlan], site: SiteConfig) -> PackPlan:
    """The plans of one queue as one allocation: the widest node count, every job, each variant's
    setup run before its own jobs (the allocation itself gets only the site's lines)."""
    first = plans[0]
    nodes = max(p.nodes for p in plans)
    members = start_order([j for p in plans for j in p.jobs])
    variants = [p.shape.variant for p in plans]
    sh = type(first.shape)(partition=first.shape.partition, cpus=max(p.cores_per_node for p in plans),
                           gpus=max(p.shape.gpus for p in plans), variant="-".join(variants))
    return PackPlan(sh, members, _pack_walltime(members, site, first.partition, nodes, sh.cpus), first.partition,
                    site.setup_for(""), nodes=nodes, cores_per_node=sh.cpus,
                    ranks_per_node={k: v for p in plans for k, v in p.ranks_per_node.items()},
                    variant_setup={v: site.setup_for(v)[len(site.setup_for("")):] for v in variants})


def plan_packs(jobs: list[JobSpec], site: SiteConfig) -> list[PackPlan]:
    """One plan per variant, every job of it in one allocation on a queue that takes its shape;
    the variants of one queue share an allocation where the queue's per-user limit needs it."""
    groups: dict[str, list[JobSpec]] = {}
    for j in start_order(jobs):  # the driver starts them in this order, and gives their runs cores in it
        groups.setdefault(j.variant.name, []).append(j)
    plans = [_variant_pack(v, members, site) for v, members in groups.items()]
    by_queue: dict[str, list[PackPlan]] = {}
    for p in plans:
        by_queue.setdefault(p.shape.partition, []).append(p)
    out = []
    for queue_plans in by_queue.values():
        part = queue_plans[0].partition
        if part is not None and part.user_job_limit and len(queue_plans) > part.user_job_limit:
            queue_plans = [_merged(queue_plans, site)]
        out += queue_plans
    return out


def job_steps(job: JobSpec) -> int:
    """Scheduler steps a job starts in a packed allocation: its build, and every run (instrumented,
    timed, null, valgrind, the performance case's with its reference's build)."""
    n = 1 + sum(1 + job.repeats_of(c) for c in job.runs)
    if job.null_program_dir:
        n += job.timing_repeats * len({c.ranks for c in job.runs if job.repeats_of(c)})
    n += int(job.valgrind and bool(job.runs))
    if job.perf is not None:
        n += 1 + len(job.perf.runs) * (2 * job.perf.repeats + 3)
    return n


def planned_steps(plan: PackPlan, baseline_ranks: list[int] | None = None) -> int:
    """Steps the whole allocation starts: its jobs', the shared null program's build, the baseline's."""
    return sum(job_steps(j) for j in plan.jobs) + len(set(baseline_ranks or [])) + 1


def steps_refusal(plan: PackPlan, planned: int, max_step_count: int) -> str:
    """Why the allocation cannot run all its steps ("": it can): Slurm refuses every step past
    the cluster's MaxStepCount (slurm.conf(5): 'The maximum number of steps that any job can
    initiate', 40000 by default), and the jobs left would end as not run."""
    if max_step_count <= 0 or planned <= max_step_count:
        return ""
    return (f"allocation {plan.name} would start {planned} job steps ({len(plan.jobs)} jobs), more than the "
            f"cluster's MaxStepCount {max_step_count} (scontrol show config): submit the campaign in parts "
            "(fewer --problems or agents at a time), or with fewer timing repeats")


# ----------------------------------------------------------------------------- launch lines


def _dry_hostfile(ctx: PackContext, hosts: list[str]) -> Path:
    return Path("$PACK_HOSTS") / ("+".join(hosts) + ".hosts")


def lone_binding(job: JobSpec, site: SiteConfig, ppn: int) -> Binding:
    """What a packed run holds on each of its nodes when it is alone there (`ppn` ranks a node): the
    core (and GPU) slots the driver's slots give it first (jobs/slots.py on the site's node layout),
    so a dry run shows the binding the run really gets (runs beside it get other cores and GPUs)."""
    layout = site.node_layout(job.variant.name)
    held = _first_held(layout.model_dump_json(), min(job.cores_for(ppn), len(layout.cores)),
                       min(job.gpus_for(ppn), len(layout.gpus)))
    return replace(held, notes=[])  # binding adds notes to its own copy


@functools.lru_cache(maxsize=256)
def _first_held(layout_json: str, cores: int, gpus: int) -> Binding:
    """The slots a lone holder of `cores` cores and `gpus` GPUs gets on an idle node of this layout
    (the same every time: a dry run of many jobs asks each once)."""
    layout = NodeLayout.model_validate_json(layout_json)
    with tempfile.TemporaryDirectory(prefix="hpcbench-dry-slots-") as d:
        layout.save(Path(d))
        with CoreSlots(Path(d), len(layout.cores)).hold(cores, gpus=gpus) as held:
            return Binding(tuple(tuple(c) for c in held.cores), tuple(held.gpus), held.gpu_env)


def build_line(job: JobSpec, site: SiteConfig, ctx: PackContext) -> str:
    """A packed job's build as it runs: where the scheduler places steps itself, a step of its own
    (jobs/placement.build_confinement), one core of the job's first node; elsewhere (PBS), on another
    node than the driver's, one rank of the site's launcher there bound to its core slot's CPUs
    (build_launch, pbs-build-on-its-node), and on the driver's node in place on those CPUs."""
    step = view_for(ctx.scheduler).own_step(job.launcher.depth, ctx.hosts[0])
    if step:
        return f"{'build':<26s} {' '.join(step)} <probe> <sandbox> make app"
    cpus = lone_binding(job.model_copy(update={"gpus_per_rank": 0}), site, 1).cpus
    remote = build_launch(job.launcher, cpus, ctx, hostfile_for=_dry_hostfile)
    where = " ".join(remote) if remote else f"[on the driver's node {ctx.driver_host}, CPUs {cpu_list(cpus)}]"
    return f"{'build':<26s} {where} <sandbox> make app"


def launch_lines(job: JobSpec, site: SiteConfig, ctx: PackContext | None) -> list[str]:
    """Every launch command the job will run (program shown as <app>, the calibration
    program as <null>); `ctx` None: unpacked (the template as is); packed, bound as the run is
    when it is alone on its node (its own --cpu-bind list:, its GPUs' variable before it)."""
    lines = []
    bound: dict[int, Binding] = {}

    def line(what: str, ranks: int, program: list[str], nodes: int = 0) -> None:
        argv, over, where = placed_launcher(job.launcher, ranks, ctx, hostfile_for=_dry_hostfile, nodes=nodes)
        env: dict[str, str] = {}
        if ctx is None:
            over = ranks > job.cores
        elif job.launcher.binding != "auto":  # `auto` is resolved on the node (the launcher found there)
            ppn = where.ranks_per_node
            b = bound.setdefault(ppn, lone_binding(job, site, ppn))
            argv, env = launcher_for(job.launcher.binding, argv).bind(argv, ppn, b, None, where.nodes)
        if over and job.launcher.oversubscribe_flag:
            argv.append(job.launcher.oversubscribe_flag)
        wrap = " [each rank in its sandbox]" if job.isolation.per_rank and job.isolation.level != "none" else ""
        words = [f"{k}={v}" for k, v in env.items()] + argv + program
        shown = " ".join(shlex.quote(a) if any(c.isspace() for c in a) else a for a in words)
        lines.append(f"{what:<26s} {shown}{wrap}")

    if ctx is not None:
        lines.append(build_line(job, site, ctx))
    # every run of the program names its instruments in one options file, the same argv for all
    # (jobs/instruments.py options_argv): the file holds -log_view, and for the instrumented run
    # the allocator's checks too
    opts = [*job.variant.runtime_options, *EVERY_RUN, "-options_file", f"<log>/{OPTIONS_FILE}"]
    seen_null = set()
    log = Path("<log>")
    every = " ".join(a for a in [*LogViewProbe().options(log),
                                 *(SolverMonitorProbe().options(log) if job.solver_monitor else [])]
                     if a.startswith("-"))
    held = " ".join(a for a in MallocProbe(job.malloc_debug).options(log) if a.startswith("-")) + " " + every
    # a C program's runs but valgrind's preload the malloc recorder (jobs/raw_malloc.py)
    recorder = [] if language_of(job.entry) == "python" else ["[malloc recorder preloaded]"]
    for c in job.runs:
        prog = ["<app>", *c.args, *opts]
        line(f"{c.case} r{c.ranks} instrumented", c.ranks, [*prog, f"[file: {held}]", *recorder], c.nodes)
        if job.repeats_of(c):
            line(f"{c.case} r{c.ranks} timing x{job.repeats_of(c)}", c.ranks, [*prog, f"[file: {every}]", *recorder],
                 c.nodes)
        if job.null_program_dir and c.ranks not in seen_null and job.repeats_of(c):
            seen_null.add(c.ranks)
            line(f"null r{c.ranks} x{job.timing_repeats}", c.ranks, ["<null>"], c.nodes)
    if job.valgrind and job.runs:
        c = min(job.runs, key=lambda r: r.ranks)  # the case itself is drawn as the job runs (valgrind_target)
        line(f"a case's r{c.ranks} valgrind", c.ranks, ["<valgrind>", "<app>", *c.args, *opts, f"[file: {every}]"])
    perf = job.perf
    pairs = zip(perf.runs, perf.reference_runs, strict=True) if perf is not None else iter(())
    repeats = perf.repeats if perf is not None else 0
    for c, rc in pairs:
        # the performance case: these, alternately, on one set of cores (jobs/perf.py)
        line(f"perf r{c.ranks} x{repeats}", c.ranks,
             ["<app>", *c.args, *opts, f"[file: {every}]"])
        line(f"perf r{rc.ranks} reference x{repeats}", rc.ranks,
             ["<reference>", *rc.args, *opts, f"[file: {every}]"])
    return lines


_BINDS = {"pals": "its own --cpu-bind list:<CPUs>", "srun": "its own --cpu-bind=cores --mem=0",
          "openmpi": "a rankfile of its CPUs", "mpich": "-bind-to user:<its CPUs>",
          "none": "started on its CPUs, its ranks inherit them"}


def _binding_words(launcher: Launcher) -> str:
    """How a launcher binds a run (the kind is resolved on the node for `auto`)."""
    kind = launcher.binding
    if kind == "auto":
        head = Path(launcher.argv(1, 1)[0]).name
        return "by the launcher found there (" + ("its own --cpu-bind=cores --mem=0" if head == "srun"
                                                  else "a rankfile or -bind-to list of its CPUs") + ")"
    return _BINDS.get(kind, kind)


def binding_words(plan: ArrayPlan, site: SiteConfig) -> str:
    """How the plan's runs are bound: by each job's own launcher (its variant's, else its
    partition's, else the site's), named per variant where they differ."""
    by_variant = {j.variant.name: _binding_words(j.launcher) for j in plan.jobs}
    if len(set(by_variant.values())) > 1:
        return "; ".join(f"variant {v}: {words}" for v, words in by_variant.items())
    return next(iter(by_variant.values()), _binding_words(site.launcher))


def plan_launch_lines(plan: ArrayPlan, site: SiteConfig) -> list[str]:
    """The launch commands of every job of a plan (packed: placed as jobs/pack.py places them)."""
    out = [f"# at run time each run is also bound to the cores (and GPUs) it holds (jobs/binding.py): "
           f"{binding_words(plan, site)}"]
    if isinstance(plan, PackPlan):
        hosts = [f"node{i}" for i in range(plan.nodes)]
        narrow = 0
        for j in plan.jobs:
            rpn = min(plan.cores_per_node, plan.ranks_per_node.get(j.variant.name) or plan.cores_per_node)
            n = max(1, min(len(hosts), max(-(-j.width // rpn), j.span)))
            if n > 1:
                mine = hosts[:n]
            else:
                mine = [hosts[narrow % len(hosts)]]
                narrow += 1
            ctx = PackContext(site.scheduler, tuple(mine), rpn, "$PACK_HOSTS", driver_host=hosts[0])
            out.append(f"# job {j.job_id} on {','.join(mine)}:")
            out += [f"#   {ln}" for ln in launch_lines(j, site, ctx)]
    else:
        for j in plan.jobs:
            out.append(f"# job {j.job_id}:")
            out += [f"#   {ln}" for ln in launch_lines(j, site, None)]
    return out


# ----------------------------------------------------------------------------- scripts


def manifest_for(plan: PackPlan, campaign, site: SiteConfig, key: str, baseline_ranks: list[int] | None,
                 python: str) -> tuple[Path, PackManifest]:
    folder = campaign.root / "scheduler" / "pack"
    base = None
    if baseline_ranks:
        base = BaselineRequest(out=str(campaign.root / "machine" / f"baseline-{plan.shape.variant}.json"),
                               ranks=sorted(set(baseline_ranks)), launcher=site.launcher_for(plan.shape.variant),
                               python=python)
    m = PackManifest(scheduler=site.scheduler, variant=plan.shape.variant,
                     specs=[str(campaign.specs_dir / f"{j.job_id}.json") for j in plan.jobs],
                     cores_per_node=plan.cores_per_node, work_dir=str(campaign.work_dir),
                     summary=str(folder / f"{key}.summary.json"), baseline=base,
                     layout=site.node_layout(plan.shape.variant, plan.cores_per_node),
                     ranks_per_node=plan.ranks_per_node, variant_setup=plan.variant_setup,
                     whole_nodes=bool(getattr(site.batch, "whole_nodes", False)), max_steps=site.batch.max_steps,
                     node_threads=part.hardware_threads if (part := site.partition_for(plan.shape.variant)) else 0)
    return folder / f"{key}.json", m


def driver_command(python: str, manifest: Path) -> str:
    """exec: the scheduler's signals (USR2 warning, SIGTERM) reach the driver itself."""
    return f"exec {shlex.quote(python)} -u -m hpcbench.jobs.pack {shlex.quote(str(manifest))}"


def next_key(folder: Path, name: str) -> str:
    n = 0
    while (folder / f"{name}-{n}.json").exists():
        n += 1
    return f"{name}-{n}"
