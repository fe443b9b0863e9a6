"""How sure a leaderboard is (docs/report.md): every agent on the problems every agent
attempted, intervals over problems of each agent's mean (bounded for rates), paired
differences, orders and ranks as ranges by Holm's step-down over all pairs, unbiased pass@k,
the judge's share of an interval, and the smallest difference a campaign's design can
detect. Pure functions of scored attempts; scoring stores what they give
(hpcbench.score.uncertainty), reports show it."""

from hpcbench.stats.analysis import Attempt, analyse_uncertainty
from hpcbench.stats.intervals import Interval, Settings, mean_interval, paired_interval
from hpcbench.stats.passk import pass_at_k

__all__ = ["Attempt", "Interval", "Settings", "analyse_uncertainty", "mean_interval", "paired_interval", "pass_at_k"]
