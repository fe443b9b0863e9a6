"""Plan: turn problems, a site and submissions into a campaign folder that any
executor can run: campaign.json (manifest), specs/<job>.json, read-only staged
copies of the submissions (staging.py) and snapshot/ of the problems and PETSc
API facts as planned (snapshot.py). Which submissions: gather.py (agents, trees,
the bundled references); which PETSc: installs.py. run/submit hold the campaign
lock (locking.py) from planning to their end."""

from hpcbench.plan.campaign import (
    Campaign,
    Plan,
    PlanRequest,
    choose_variant,
    create_campaign,
    pending,
    resolve_variant,
)
from hpcbench.plan.gather import Gathered, GatherOptions, Planned, gather, request_for
from hpcbench.plan.installs import declared_installs, resolve_installs
from hpcbench.plan.locking import CampaignBusy, campaign_lock
from hpcbench.plan.options import RunOptions, load_options, save_options

__all__ = ["Campaign", "CampaignBusy", "GatherOptions", "Gathered", "Plan", "PlanRequest", "Planned", "RunOptions",
           "campaign_lock", "choose_variant", "create_campaign", "declared_installs", "gather", "load_options",
           "pending", "request_for", "resolve_installs", "resolve_variant", "save_options"]
