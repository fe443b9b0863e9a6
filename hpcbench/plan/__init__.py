"""Plan: turn problems, a site and submissions into a campaign folder that any
executor can run: campaign.json (manifest), specs/<job>.json, read-only staged
copies of the submissions (staging.py) and snapshot/ of the problems and PETSc
API facts as planned (snapshot.py). run/submit hold the campaign lock
(locking.py) from planning to their end."""

from hpcbench.plan.campaign import Campaign, Plan, choose_variant, create_campaign, pending, resolve_variant
from hpcbench.plan.locking import CampaignBusy, campaign_lock

__all__ = ["Campaign", "CampaignBusy", "Plan", "campaign_lock", "choose_variant", "create_campaign", "pending",
           "resolve_variant"]
