"""The scalability metric's input: every sweep point of the campaign, read once per scoring
and handed to each submission's EvalContext (the evaluators never open a store themselves:
forked scoring workers would each read the sweeps again, and wait on the store lock)."""

from __future__ import annotations

from pathlib import Path

from hpcbench.evaluators.base import ScalingPoint
from hpcbench.sweep.tables import PointRow, sweeps_of

Key = tuple[str, str, str]  # (agent, problem, attempt)


def scaling_points(campaign_dir: Path) -> dict[Key, list[ScalingPoint]]:
    """Per submission, its points in the campaign's own /sweep and in <campaign>/sweeps/*."""
    out: dict[Key, list[ScalingPoint]] = {}
    for sw in sweeps_of(Path(campaign_dir)):
        for p in sw.analysis.points:
            out.setdefault((p.agent, p.problem, p.attempt), []).append(as_scaling_point(str(sw.path), p))
    return out


def as_scaling_point(sweep: str, p: PointRow) -> ScalingPoint:
    return ScalingPoint(sweep=sweep, path=p.path, mode=p.mode, size=p.size, ranks=p.ranks, base_ranks=p.base_ranks,
                        status=p.status, oversubscribed=p.oversubscribed, rel_clean=p.rel_clean,
                        efficiency=p.efficiency, ref_efficiency=p.ref_efficiency, rel_efficiency=p.rel_efficiency)
