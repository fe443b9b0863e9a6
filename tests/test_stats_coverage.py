"""The leaderboard's 95% intervals hold the truth 93-97% of the time: 1,000 synthetic
campaigns whose true agent means are known (a random effect per problem shared by the
agents, an agent-by-problem effect, noise per attempt), drawn through the production
interval code (hpcbench.stats.intervals), for each agent's mean and for the paired
difference; the bounded interval of a composite in [0, 100] at least 93%. Vectorised over
campaigns: a few seconds on 2 cores.

The sizes: 10 problems of 3 attempts. bench/stats_coverage.py measures more (6-18
problems, 1-5 attempts, pass/fail attempts on beta, mixed, near-0/near-1 and weak
difficulty models, the family-wise error over 28 pairs and the power)."""

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
    per_problem = [[scores[:, a, j, :] for j in range(p)] for a in (0, 1)]  # (campaigns, attempts) each
    got = {}
    for a in (0, 1):
        lo, hi, _ = intervals.mean_bounds(per_problem[a], settings)
        assert lo.shape == (c,)
        got[a] = float(np.mean((lo <= TRUE_MEANS[a]) & (TRUE_MEANS[a] <= hi)))
        lo, hi, _ = intervals.mean_bounds([np.clip(x, 0, 100) for x in per_problem[a]], settings, (0.0, 100.0))
        clipped = float(np.mean(np.clip(scores[:, a], 0, 100).mean(axis=(1, 2))))  # near the truth: few clipped
        assert 0.93 <= float(np.mean((lo <= clipped) & (clipped <= hi))) <= 1.0
    lo, hi, _ = intervals.paired_bounds(per_problem[0], per_problem[1], settings)
    truth = TRUE_MEANS[0] - TRUE_MEANS[1]
    got["difference"] = float(np.mean((lo <= truth) & (truth <= hi)))
    assert all(0.93 <= v <= 0.97 for v in got.values()), got
    # and exactly Student's t interval on the problems' differences
    d = scores[:, 0].mean(axis=2) - scores[:, 1].mean(axis=2)
    t_width = 2 * stats.t.ppf(0.975, p - 1) * d.std(axis=1, ddof=1) / np.sqrt(p)
    assert np.allclose(hi - lo, t_width)
