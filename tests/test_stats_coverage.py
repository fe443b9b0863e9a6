"""The leaderboard's 95% intervals hold the truth 93-97% of the time: 1,000 synthetic
campaigns whose true agent means are known (a random effect per problem shared by the
agents, an agent-by-problem effect, noise per attempt), drawn through the production
interval code (hpcbench.stats.intervals) with the default resamples, for each agent's
mean and for the paired difference. Vectorised over campaigns: a few seconds on 2 cores.

The sizes: 10 problems of 3 attempts. bench/stats_coverage.py measures more (6 problems,
the bundled suite's size; pass/fail attempts; the percentile and two-stage alternatives
this method was chosen over)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from hpcbench.stats import intervals
from hpcbench.stats.intervals import PROBLEMS, Settings

TRUE_MEANS = (60.0, 55.0)
CAMPAIGNS, PROBLEM_COUNT, ATTEMPTS = 1000, 10, 3


def test_intervals_contain_the_true_means_and_difference_93_to_97_percent():
    rng = np.random.default_rng(20231)
    c, p, n = CAMPAIGNS, PROBLEM_COUNT, ATTEMPTS
    difficulty = rng.normal(0, 10, (c, 1, p, 1))  # the same problems are hard for both agents
    affinity = rng.normal(0, 5, (c, 2, p, 1))  # an agent suits some problems better than others
    scores = np.array(TRUE_MEANS)[None, :, None, None] + difficulty + affinity + rng.normal(0, 20, (c, 2, p, n))
    settings = Settings()
    kind, _ = intervals.scope([n] * p, settings)
    assert kind == PROBLEMS
    stream = np.random.default_rng(7)
    per_problem = [[scores[:, a, j, :] for j in range(p)] for a in (0, 1)]  # (campaigns, attempts) each
    got = {}
    for a in (0, 1):
        lo, hi, _ = intervals.mean_bounds(per_problem[a], kind, settings, stream)
        assert lo.shape == (c,)
        got[a] = float(np.mean((lo <= TRUE_MEANS[a]) & (TRUE_MEANS[a] <= hi)))
    lo, hi, _ = intervals.paired_bounds(per_problem[0], per_problem[1], kind, settings, stream)
    truth = TRUE_MEANS[0] - TRUE_MEANS[1]
    got["difference"] = float(np.mean((lo <= truth) & (truth <= hi)))
    assert all(0.93 <= v <= 0.97 for v in got.values()), got
    # and no wider than they need be: Student's t interval on the problems' differences
    d = scores[:, 0].mean(axis=2) - scores[:, 1].mean(axis=2)
    t_width = 2 * stats.t.ppf(0.975, p - 1) * d.std(axis=1, ddof=1) / np.sqrt(p)
    ratio = float(np.median((hi - lo) / t_width))
    assert 0.97 < ratio < 1.03, ratio
