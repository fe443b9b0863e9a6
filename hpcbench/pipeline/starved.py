"""Which time-outs load may explain (CampaignProfile.retry_starved): a run killed at its time
limit while it waited for a CPU says nothing about the program. On a loaded machine (two-rank
runs of other jobs competing for the cores) correct programs hit limits meant for an idle one."""

from __future__ import annotations

from hpcbench.jobs.affinity import STARVED_SHARE, wait_share
from hpcbench.jobs.records import JobResult, JobSpec, RunResult
from hpcbench.plan import Campaign


def starved_at_limit(run: RunResult, unmeasured: bool = True) -> bool:
    """Whether load may explain a run's time-out: a rank waited for a CPU over STARVED_SHARE of
    the run; where the waits were not measured, `unmeasured` (validation: held back)."""
    share = wait_share(run)
    return unmeasured if share is None else share > STARVED_SHARE


def timed_out_starved(campaign: Campaign, jobs: list[JobSpec], unmeasured: bool = True) -> list[JobSpec]:
    """Jobs with a run killed at its time limit while the machine may have held it back. A run
    that had its CPU for nearly all of its limit was not slowed by load; its time-out is its own."""
    out = []
    for spec in jobs:
        path = campaign.record_path(spec.job_id)
        if path.is_file() and any(r.timed_out and starved_at_limit(r, unmeasured)
                                  for r in JobResult.model_validate_json(path.read_text()).runs):
            out.append(spec)
    return out
