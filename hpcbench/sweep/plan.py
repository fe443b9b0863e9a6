"""The plan of a scaling sweep: which (size, ranks, nodes) points each problem runs at.

The defaults come from each problem's `scaling` field (problem.json); `--ranks`,
`--nodes`, `--sizes` override them. Everything a site or a problem does not allow
is refused here, before anything is planned or submitted, with every reason at
once: a size outside the problem's range, too few cells per rank, more ranks than
the problem allows, a point wider than the partition, a variant the site lacks.

Strong scaling keeps each size and adds ranks; weak scaling grows the size with the
ranks (size = base * ranks**weak_exponent, rounded to the problem's multiple) so
the work per rank stays put. A point with more ranks than the cores it runs on is
kept and marked oversubscribed (locally only: a batch partition refuses it)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Literal

from pydantic import BaseModel, Field

from hpcbench.errors import HpcbenchError
from hpcbench.problem import ProblemBundle, Scaling, TestCase
from hpcbench.site import SiteConfig

PLAN_SCHEMA = 1
Mode = Literal["strong", "weak"]


class SweepRefused(HpcbenchError):
    """The sweep asks for something the problems or the site do not allow."""

    def __init__(self, reasons: list[str]):
        self.reasons = reasons
        super().__init__("sweep refused before anything was submitted:\n  " + "\n  ".join(reasons))


class SweepPoint(BaseModel):
    mode: Mode
    size: int
    ranks: int
    nodes: int = 1
    case: str  # the case name the program's runs carry ("n1600": one case per size, its ranks as runs)
    oversubscribed: bool = False


class ProblemSweep(BaseModel):
    problem: str
    option: str
    args: list[str]
    outputs: list[str]  # quantities that must agree with the reference at each point
    rtol: float
    time_limit_s: float
    points: list[SweepPoint]

    def cases(self) -> list[TestCase]:
        """One case per size, its rank counts in increasing order: the job runs them one after
        another on the same resources, so the points of one program are comparable."""
        by_case: dict[str, tuple[int, int, set[int]]] = {}
        for p in self.points:
            by_case.setdefault(p.case, (p.size, p.nodes, set()))[2].add(p.ranks)
        # each case's runs span the nodes its points are labelled with (jobs/placement.py)
        return [TestCase(name=c, args=[*self.args, self.option, str(size)], ranks=sorted(rs),
                         time_limit_s=self.time_limit_s, description=f"sweep point {self.option} {size}", nodes=nodes)
                for c, (size, nodes, rs) in sorted(by_case.items(), key=lambda kv: (kv[1][0], kv[1][1]))]


class SweepPlan(BaseModel):
    """What `sweep.json` at the sweep campaign's root holds."""

    schema_version: int = PLAN_SCHEMA
    created: str = Field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
    site: str
    variant: str
    modes: list[Mode]
    repeats: int
    cores: int  # cores of one node (locally: of the machine); wider points are oversubscribed
    nodes: list[int]
    reference: str = "reference"  # the yardstick agent, swept beside every submission
    gated_by: str = ""  # the campaign whose gates chose the submissions
    problems: list[ProblemSweep]
    notes: list[str] = []

    def rank_counts(self) -> list[int]:
        return sorted({p.ranks for ps in self.problems for p in ps.points})

    def problem(self, pid: str) -> ProblemSweep:
        for ps in self.problems:
            if ps.problem == pid:
                return ps
        raise KeyError(pid)


def weak_size(sc: Scaling, base: int, ranks: int) -> int:
    """The size at `ranks` that keeps the work per rank of `base` at one rank."""
    raw = base * ranks ** sc.weak_exponent
    return max(sc.multiple_of, int(round(raw / sc.multiple_of)) * sc.multiple_of)


def _size_problems(pid: str, sc: Scaling, size: int, ranks: int) -> list[str]:
    out = []
    if not sc.min_value <= size <= sc.max_value or size % sc.multiple_of:
        out.append(f"{pid}: {sc.option} {size} is not allowed (an integer in [{sc.min_value}, {sc.max_value}], "
                   f"a multiple of {sc.multiple_of}; problem.json scaling)")
    per_rank = size ** sc.dims / ranks
    if per_rank < sc.min_per_rank:
        out.append(f"{pid}: {ranks} ranks at {sc.option} {size} leave {per_rank:g} cells per rank, below the "
                   f"problem's min_per_rank {sc.min_per_rank:g}")
    if ranks > sc.max_ranks:
        out.append(f"{pid}: {ranks} ranks is above the problem's max_ranks {sc.max_ranks}")
    return out


def _width_problems(site: SiteConfig, variant: str, ranks: int, nodes: int) -> tuple[list[str], bool]:
    """Reasons a point does not fit the site, and whether it is oversubscribed."""
    if site.scheduler == "local":
        if nodes != 1:
            return [f"--nodes {nodes}: the local site is one machine (nodes 1 only)"], False
        return [], ranks > site.total_cores()
    queues = site.queues_for(variant)
    if not queues:
        return [f"variant {variant}: no partition on site {site.name}"], False
    out = []
    if all(q.refuses(nodes) for q in queues):  # the variant's queues and those of its node type (docs/sites.md)
        out.append(f"{nodes} nodes: no queue of site {site.name} takes them ("
                   + "; ".join(q.refuses(nodes) for q in queues) + ")")
    if ranks < nodes:
        out.append(f"{ranks} ranks on {nodes} nodes leaves a node without a rank")
    per_node = site.ranks_per_node(variant)  # cores, or one rank per GPU (tile) for a GPU variant
    if per_node and math.ceil(ranks / nodes) > per_node:
        out.append(f"{ranks} ranks on {nodes} node{'s' * (nodes > 1)} is wider than partition {queues[0].name} "
                   f"({per_node} {'GPUs' if site.is_gpu_variant(variant) else 'cores'} per node; add nodes or "
                   "use fewer ranks)")
    return out, False


def _case(size: int, nodes: int) -> str:
    return f"n{size}" if nodes == 1 else f"n{size}-nodes{nodes}"  # case names are lowercase (TestCase)


def _pairs(rank_list: list[int], nodes: list[int] | None, per_node: int, local: bool,
           reasons: list[str]) -> list[tuple[int, int]]:
    """(ranks, nodes) of each point: without --nodes, the fewest nodes that hold the ranks;
    with it, each node count with the rank counts that fit it (one rank per node at least)."""
    if local:
        return [(r, n) for n in sorted(set(nodes or [1])) for r in rank_list]
    if not nodes:
        return [(r, math.ceil(r / per_node)) for r in rank_list]
    out = [(r, n) for n in sorted(set(nodes)) for r in rank_list if n <= r <= n * per_node]
    for r in rank_list:
        if not any(p[0] == r for p in out):
            reasons.append(f"{r} ranks fit none of --nodes {sorted(set(nodes))} ({per_node} cores per node)")
    return out


def make_plan(problems: dict[str, ProblemBundle], site: SiteConfig, *, modes: list[Mode],
              ranks: list[int] | None = None, nodes: list[int] | None = None, sizes: list[int] | None = None,
              repeats: int = 3, variant: str | None = None) -> SweepPlan:
    """The sweep plan, or SweepRefused naming every point that cannot run and why."""
    reasons: list[str] = []
    names = [v.name for v in site.variants]
    if variant is None:
        variant = names[0]
    elif variant not in names:
        raise SweepRefused([f"--variant {variant}: site {site.name} has no such variant ({', '.join(names)})"])
    if not 1 <= repeats <= 100:
        reasons.append(f"--repeats {repeats}: must be 1..100")
    node_list = sorted(set(nodes or [1]))
    if any(n < 1 for n in node_list):
        reasons.append(f"--nodes {node_list}: node counts must be >= 1")
    part = site.partition_for(variant) if site.scheduler != "local" else None
    per_node = (site.ranks_per_node(variant) if part else 0) or site.total_cores()
    out = []
    for pid, bundle in problems.items():
        sc = bundle.problem.scaling
        if sc is None:
            reasons.append(f"{pid}: problem.json has no `scaling` field: the problem cannot be swept")
            continue
        rank_list = sorted(set(ranks or sc.ranks or [1, 2]))
        if not ranks and nodes and part and site.ranks_per_node(variant):  # whole nodes by default
            rank_list = sorted({n * site.ranks_per_node(variant) for n in node_list})
        size_list = sorted(set(sizes or [int(v) for v in sc.values]))
        points: list[SweepPoint] = []
        for r, n in _pairs(rank_list, nodes, per_node, site.scheduler == "local", reasons):
            width, over = _width_problems(site, variant, r, n)
            reasons += width
            if "strong" in modes:
                for s in size_list:
                    reasons += _size_problems(pid, sc, s, r)
                    points.append(SweepPoint(mode="strong", size=s, ranks=r, nodes=n, case=_case(s, n),
                                             oversubscribed=over))
            if "weak" in modes:
                s = weak_size(sc, size_list[0], r)
                reasons += _size_problems(pid, sc, s, r)
                points.append(SweepPoint(mode="weak", size=s, ranks=r, nodes=n, case=_case(s, n),
                                         oversubscribed=over))
        if not points:
            reasons.append(f"{pid}: no point left (ranks {rank_list}, nodes {node_list})")
        out.append(ProblemSweep(problem=pid, option=sc.option, args=sc.args, outputs=sc.outputs, rtol=sc.rtol,
                                time_limit_s=sc.time_limit_s, points=points))
    if reasons:
        raise SweepRefused(list(dict.fromkeys(reasons)))
    notes = []
    if any(p.oversubscribed for ps in out for p in ps.points):
        notes.append(f"points with more ranks than the {per_node} cores here are run and marked oversubscribed")
    return SweepPlan(site=site.name, variant=variant, modes=modes, repeats=repeats, cores=per_node,
                     nodes=node_list, problems=out, notes=notes)


def sweep_problem(bundle: ProblemBundle, ps: ProblemSweep) -> ProblemBundle:
    """The problem as the sweep campaign plans it: its cases replaced by the sweep's points
    (the hidden checks stay; sweep.analysis decides which of them apply at a sweep size)."""
    # no performance case: a sweep times its own points (and would run it at every rank count)
    prob = bundle.problem.model_copy(update={"cases": ps.cases(), "performance": None})
    return bundle.model_copy(update={"problem": prob})
