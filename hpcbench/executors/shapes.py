"""Pure planning for batch schedulers: a job's walltime, its resource shape, and the
arrays a campaign becomes (one per shape, split at the site's max array size)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from hpcbench.errors import HpcbenchError
from hpcbench.executors.queues import QueueRefused, capped_walltime, check_user_limit, pick_queue
from hpcbench.jobs.records import JobSpec
from hpcbench.site import GPU_FEATURES, Partition, SiteConfig

ACCOUNT_ENV = "HPCBENCH_ACCOUNT"
NULL_RUN_S = 60.0  # the job's own limit on one launcher-overhead calibration run


def job_walltime_s(spec: JobSpec) -> float:
    """Upper bound of what the job can take with every run at its own limit: the build,
    per case one instrumented and `timing_repeats` timed runs plus as many null runs,
    one valgrind run (30x the case limit), and start-up slack."""
    t = spec.build_timeout_s + 60.0
    for r in spec.runs:
        t += r.time_limit_s * (1 + spec.repeats_of(r)) + NULL_RUN_S * spec.repeats_of(r)
    if spec.valgrind and spec.runs:
        t += 30 * min(r.time_limit_s for r in spec.runs) + 10
    return t


def job_work(spec: JobSpec) -> float:
    """Core-seconds of its runs, each at its limit (an upper bound, used only to order jobs)."""
    return sum(r.time_limit_s * spec.cores_for(r.ranks) * (1 + spec.repeats_of(r)) for r in spec.runs)


def start_order(jobs: list[JobSpec]) -> list[JobSpec]:
    """The most work first, then the widest (longest-processing-time-first list scheduling): each
    job's place is also its core-slot priority (jobs/slots.py), so the longest job's runs go
    first and the short jobs fill the cores around them instead of a long job finishing alone."""
    return sorted(jobs, key=lambda j: (-job_work(j), -j.width, j.job_id))


@dataclass(frozen=True)
class Shape:
    """What the scheduler is asked for, per job: jobs with equal shapes share an array."""

    partition: str
    cpus: int
    gpus: int
    variant: str


@dataclass
class ArrayPlan:
    shape: Shape
    jobs: list[JobSpec]
    walltime_min: int
    partition: Partition | None
    setup: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"hpcbench-{self.shape.variant}-c{self.shape.cpus}" + (f"-g{self.shape.gpus}" if self.shape.gpus else "")

    def node_count(self) -> int:
        """Nodes of one batch job of this plan (an array task takes one)."""
        return 1

    def node_hours(self) -> float:
        """What the plan may charge at most: every batch job of it for its whole walltime (node-
        exclusive sites charge whole nodes; elsewhere the figure is an upper bound)."""
        return len(self.jobs) * self.node_count() * self.walltime_min / 60


def shape_of(spec: JobSpec, site: SiteConfig, nodes: int = 1) -> tuple[Shape, Partition | None]:
    """The shape of a job (an array task: one node) and the queue that takes it."""
    part = pick_queue(site, spec.variant.name, nodes)
    cores = part.cores_per_node if part and part.cores_per_node else site.total_cores()
    gpus = part.gpus_per_node if part and _uses_gpus(spec, site) else 0
    # A job wider than a node still gets one node and runs oversubscribed (its timings say so).
    return Shape(partition=part.name if part else "", cpus=min(spec.width, cores), gpus=gpus,
                 variant=spec.variant.name), part


def _uses_gpus(spec: JobSpec, site: SiteConfig) -> bool:
    """GPUs are asked for only by GPU variants (a cpu job on a GPU partition takes none)."""
    return site.is_gpu_variant(spec.variant.name) or bool(set(spec.variant.features) & GPU_FEATURES)


def walltime_min(jobs: list[JobSpec], site: SiteConfig, part: Partition | None, nodes: int = 1) -> int:
    if site.batch.walltime_min:
        want = site.batch.walltime_min
    else:
        want = int(-(-max(job_walltime_s(j) for j in jobs) // 60))
    return capped_walltime(want, part, nodes)


def plan_arrays(jobs: list[JobSpec], site: SiteConfig) -> list[ArrayPlan]:
    groups: dict[Shape, list[JobSpec]] = {}
    parts: dict[Shape, Partition | None] = {}
    for j in sorted(jobs, key=lambda j: j.job_id):
        shape, part = shape_of(j, site)
        per_node = site.ranks_per_node(j.variant.name, part) if part else 0
        # One rank per GPU, and an array task has one node.
        if part is not None and shape.gpus and per_node and j.width > per_node:
            raise QueueRefused(f"job {j.job_id} needs {j.width} ranks of GPU variant {j.variant.name}, a node of "
                               f"queue {part.name} holds {per_node} (one per GPU; docs/sites.md): run it packed "
                               "(without --no-pack), where it spans nodes; nothing was submitted")
        groups.setdefault(shape, []).append(j)
        parts[shape] = part
    out: list[ArrayPlan] = []
    size = max(1, site.batch.max_array_size)
    for shape, members in groups.items():
        part = parts[shape]
        for i in range(0, len(members), size):
            chunk = members[i:i + size]
            out.append(ArrayPlan(shape, chunk, walltime_min(chunk, site, part), part, site.setup_for(shape.variant)))
    per_queue: dict[str, int] = {}
    for plan in out:
        per_queue[plan.shape.partition] = per_queue.get(plan.shape.partition, 0) + len(plan.jobs)
    for plan in out:  # every array task is a job of its own to the queue's per-user limits
        check_user_limit(plan.partition, per_queue[plan.shape.partition],
                         f"--no-pack (one array task per job: {per_queue[plan.shape.partition]} jobs)")
    return out


def resolve_account(site: SiteConfig, given: str | None) -> str:
    """--account, else $HPCBENCH_ACCOUNT; a site that charges allocations refuses neither."""
    acct = (given or os.environ.get(ACCOUNT_ENV, "")).strip()
    if acct and not all(c.isprintable() and not c.isspace() for c in acct):
        where = "--account" if given else ACCOUNT_ENV
        raise HpcbenchError(f"{where}: {acct!r} holds a space, newline or control character: it would write "
                            "more than an account into the batch script (nothing was submitted)")
    if not acct and site.batch.account_required:
        raise HpcbenchError(
            f"site {site.name!r} charges an allocation: give --account PROJECT or set {ACCOUNT_ENV} "
            "(nothing was submitted)")
    return acct
