"""Which time-outs load may explain (CampaignProfile.retry_starved): a run killed at its time
limit while it waited for a CPU says nothing about the program. On a loaded machine (two-rank
runs of other jobs competing for the cores) correct programs hit limits meant for an idle one."""

from __future__ import annotations

from hpcbench.jobs.records import JobResult, JobSpec, RunResult
from hpcbench.plan import Campaign

# A rank that waited for a CPU over this share of a timed-out run's wall time was held back by
# load. Measured 2026-12-06 (validate-checks, every problem, 40 generated mutants each): all 8
# jobs whose runs timed out on the 4x retry (robertson, allen-cahn-imex, bratu-fold: loops that
# never converge) had 96-100% of their 120-240 s on a CPU and waited 0.005-4.9 s for one; each
# retry cost 2-4 minutes and changed no verdict.
STARVED_SHARE = 0.1


def starved_at_limit(run: RunResult) -> bool:
    """Whether load may explain a run's time-out: a rank waited for a CPU over STARVED_SHARE of
    the run (/proc/<pid>/schedstat, jobs/affinity.py), or some rank was not watched there (a
    batch site's probes measure no wait): unknown counts as held back."""
    watched = [a for a in run.affinity if a.source == "proc"]
    if len(watched) < run.ranks:
        return True
    return max(a.cpu_wait_s for a in watched) > STARVED_SHARE * run.wall_s


def timed_out_starved(campaign: Campaign, jobs: list[JobSpec]) -> list[JobSpec]:
    """Jobs with a run killed at its time limit while the machine may have held it back. A run
    that had its CPU for nearly all of its limit was not slowed by load; its time-out is its own."""
    out = []
    for spec in jobs:
        path = campaign.record_path(spec.job_id)
        if path.is_file() and any(r.timed_out and starved_at_limit(r)
                                  for r in JobResult.model_validate_json(path.read_text()).runs):
            out.append(spec)
    return out
