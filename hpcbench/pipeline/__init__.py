"""How campaigns run: `execute` (plan, jobs, escalations, collect, score, report) under a
CampaignProfile, and the verbs' compositions of it (run/submit, the sweep's gating and points,
dry runs, collect's accounting). The CLI and the validation drivers call these; none of them
assembles a campaign by hand."""

from hpcbench.pipeline.execute import Stages, collect_and_score, execute, run_jobs
from hpcbench.pipeline.outcome import (
    BatchScripts,
    CampaignOutcome,
    Reporter,
    ScoringProgress,
    judge_errors,
    not_scored,
)
from hpcbench.pipeline.verbs import (
    ask_accounting,
    batch_scripts,
    dry_run_campaign,
    gate_campaign,
    plan_campaign,
    profile_of,
    run_campaign,
    run_sweep,
    sweep_again,
)

__all__ = ["BatchScripts", "CampaignOutcome", "Reporter", "ScoringProgress", "Stages", "ask_accounting",
           "batch_scripts", "collect_and_score", "dry_run_campaign", "execute", "gate_campaign", "judge_errors",
           "not_scored", "plan_campaign", "profile_of", "run_campaign", "run_jobs", "run_sweep", "sweep_again"]
