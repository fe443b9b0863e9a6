"""Score: campaign.h5 (written by collect) -> a new scores/<id>.h5. Evaluators run
in stage order, a failed gate ends a submission at 0, categories are weighted by
confidence into a composite (scoring.py); a problem without a usable reference run
is not scored (reference_status.py); two scorings are compared per judged evaluator
(agreement.py). Scoring never rewrites campaign.h5."""

from hpcbench.score import agreement  # the module: its agreement() shares its name
from hpcbench.score.reference_status import NOT_SCORED
from hpcbench.score.scoring import SubmissionScore, aggregate, checks_passed, score, score_campaign, tier

__all__ = ["NOT_SCORED", "SubmissionScore", "aggregate", "agreement", "checks_passed", "score", "score_campaign",
           "tier"]
