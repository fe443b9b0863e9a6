"""Which queue takes an allocation, and how many allocations a queue lets one user have.

The rules come from each site's documentation (docs/sites.md, "queues"): a queue takes jobs of
`min_nodes`..`max_nodes` nodes, gives them at most the walltime of their node-count bin, and
lets a user have `max_running_per_user` / `max_queued_per_user` jobs at once. The planner asks
the variant's own queue first, then the site's other queues on the same kind of node; where
none takes the allocation it refuses before anything is submitted, naming each queue's rule."""

from __future__ import annotations

from hpcbench.errors import HpcbenchError
from hpcbench.site import Partition, SiteConfig


class QueueRefused(HpcbenchError):
    """No queue of the site takes an allocation of this shape (nothing was submitted)."""


def pick_queue(site: SiteConfig, variant: str, nodes: int) -> Partition | None:
    """The first queue (the variant's own, then its kind's) that takes `nodes` nodes; None on a
    site without queues (local)."""
    candidates = site.queues_for(variant)
    if not candidates:
        return None
    for p in candidates:
        if not p.refuses(nodes):
            return p
    why = "; ".join(p.refuses(nodes) for p in candidates)
    raise QueueRefused(f"site {site.name}: no queue takes a {nodes}-node allocation of variant {variant} ({why}; "
                       "docs/sites.md, queues): nothing was submitted")


def capped_walltime(want_min: int, part: Partition | None, nodes: int) -> int:
    """The walltime asked for: what the work needs, capped by the queue's bin for `nodes` nodes."""
    return max(1, min(want_min, part.walltime_cap(nodes) if part else want_min))


def check_user_limit(part: Partition | None, count: int, what: str) -> None:
    """Refuse `count` jobs in one queue beyond what it lets one user have (qsub/sbatch would
    reject the extra ones, or they would wait for the first)."""
    if part is None or not part.user_job_limit or count <= part.user_job_limit:
        return
    raise QueueRefused(f"queue {part.name} lets one user have {part.user_job_limit} job(s) at once; {what} would "
                       f"need {count} (docs/sites.md, queues): nothing was submitted")
