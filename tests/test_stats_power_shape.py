"""The power figure where the problems' differences are not normal (hpcbench.stats.power:
shape_factor), and the one plan() the report's power summary and `hpcbench plan-power` share.

A gap between two agents on problems near 0 or near 1 is carried by a few problems: the
problems' differences are skewed toward the better agent and the estimated standard error rises
with the estimated difference, so the paired t test finds the gap more often than the t form
of the power says (bench/stats_coverage.py: extremes 18x1 and weak 18x5 were 6-8 points
conservative). A seeded simulation of that model checks the figure against the t test itself."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from hpcbench.stats import power
from hpcbench.stats.intervals import Settings

S = Settings()


def _extremes_campaigns(problems: int, shift: float, campaigns: int, seed: int):
    """bench/stats_coverage.py's `extremes` model, 2 agents `shift` apart on the logit scale, one
    attempt each: (cells and passes per campaign, the true gap in composite points)."""
    rng = np.random.default_rng(seed)
    shape = (campaigns, 1, problems)
    p = np.clip(np.where(rng.random(shape) < 0.5, rng.beta(1, 30, shape), rng.beta(30, 1, shape)), 1e-9, 1 - 1e-9)
    q = 1 / (1 + np.exp(-(np.log(p / (1 - p)) + np.array([shift / 2, -shift / 2])[None, :, None]
                          + rng.normal(0, 0.5, (campaigns, 2, problems)))))
    passed = rng.random(q.shape) < q
    comp = np.where(passed, 100.0, 50.0 * rng.beta(2, 2, q.shape))
    out = [({a: {f"p{j}": [float(comp[i, k, j])] for j in range(problems)} for k, a in enumerate("ab")},
            {a: {f"p{j}": [bool(passed[i, k, j])] for j in range(problems)} for k, a in enumerate("ab")})
           for i in range(campaigns)]
    return out, 75 * float((q[:, 0] - q[:, 1]).mean())  # a pass scores 100, a failure 25 on average


def test_the_power_figure_meets_the_t_test_on_skewed_differences():
    """400 campaigns of 18 problems x 1 attempt, 24 points apart (where the campaigns report about
    their minimum detectable difference): the share in which the t test establishes the better
    agent is within 5 points of the power the campaigns report at the true gap (0.783 and 0.775);
    the figure before the shape (the t form, median-unbiased with one attempt each) was 5.5
    points below it (0.728: the old conservative miss)."""
    problems, campaigns = 18, 400
    drawn, gap = _extremes_campaigns(problems, 5.84, campaigns, seed=2)
    crit = stats.t.ppf(0.975, problems - 1)
    found, shaped, plain = 0, [], []
    for cells, passes in drawn:
        d = np.array([cells["a"][p][0] - cells["b"][p][0] for p in cells["a"]])
        found += d.mean() > crit * d.std(ddof=1) / math.sqrt(problems)
        c = power.components(cells, passes=passes)
        shaped.append(power.power_at(c, gap, problems, 1, S))
        c.skew = c.kurtosis = None  # the figure before: the t form, median-unbiased with one attempt each
        plain.append(power.power_at(c, gap, problems, 1, S))
    simulated = found / campaigns
    assert 22 < gap < 26
    assert abs(simulated - np.mean(shaped)) <= 0.05, (simulated, np.mean(shaped))
    assert simulated - np.mean(plain) > 0.05 and np.mean(shaped) - np.mean(plain) > 0.02, (simulated, np.mean(plain))


def test_identical_agents_keep_the_t_form_and_an_established_pair_gives_its_skew_a_direction():
    rng = np.random.default_rng(4)
    level = {a: {f"p{j}": list(rng.normal(50, 10, 3)) for j in range(10)} for a in "abc"}
    c = power.components(level)
    assert c.skew is None and c.kurtosis is None and c.shape_pairs == 0
    d = power.detectable(c, 10, 3, S)
    assert d["shape_factor"] == 1.0 and d["multiplier"] == power.multiplier(9, 0.95, 0.8)
    # b ahead of a: most problems 6 points, two problems 30: skewed toward b, whichever is named first
    gaps = np.array([6.0, 5.0, 7.0, 6.5, 5.5, 6.0, 30.0, 28.0, 6.0, 5.0])
    got = power.established_shape(-gaps, 0.05)
    assert got is not None and got == power.established_shape(gaps, 0.05)
    assert got[0] > 1.5 and got[1] > 3  # right-skewed and long-tailed: the statistic spreads less than t says
    assert power.established_shape(gaps - gaps.mean(), 0.05) is None  # no order: no direction
    skewed = power.Components(within=4.0, within_df=20, interaction=10.0, pairs=1, problems=10, attempts=3,
                              differences=60.0, spread_df=9, skew=got[0], kurtosis=got[1], shape_pairs=1)
    f = power.shape_factor(skewed, 10, 9, 0.95)
    assert 0.5 <= f < 1
    at = power.detectable(skewed, 10, 3, S)
    assert at["shape_factor"] == f and abs(power.power_at(skewed, at["difference"], 10, 3, S) - 0.8) < 1e-6
    # one attempt each: the median-unbiased factor stands in for a shape only where none is measured
    assert power.small_sample(skewed, 10, 1) == 1.0 and power.small_sample(skewed, 5, 1) > 1
    assert power.small_sample(c, 10, 1) == power.median_unbiased(c.spread_df) > 1
    # the same factor at every number of attempts: the detectable difference falls with them
    ds = [power.detectable(skewed, 10, n, S)["difference"] for n in (2, 3, 4, 8)]
    assert ds == sorted(ds, reverse=True)


def test_plan_power_and_the_report_plan_through_one_function():
    """power.needed is plan() on the campaign's problems; plan-power's line on --problems is
    plan() on those; one attempt each says more attempts cannot be planned instead of failing."""
    from hpcbench.cli.stats import _plan_line

    rng = np.random.default_rng(9)
    hard = rng.normal(0, 15, 8)
    cells = {a: {f"p{j}": list(50 + 4 * i + hard[j] + rng.normal(0, 12, 3)) for j in range(8)}
             for i, a in enumerate("abc")}
    c = power.components(cells)
    assert power.needed(c, [10.0], S, pairs=3) == [power.plan(c, 10.0, c.problems, S, pairs=3)]
    row = power.plan(c, 10.0, 20, S, pairs=3)
    assert row["attempts"] == power.attempts_needed(c, 10.0, 20, S, pairs=3)
    line = _plan_line(c, 10.0, 20, S, 0.8, 3)
    assert (f"{row['attempts']} attempts per agent and problem" in line if row["attempts"]
            else "no number of attempts on 20 problems" in line), line
    one = power.components({a: {p: [v[0]] for p, v in per.items()} for a, per in cells.items()})
    row = power.plan(one, 10.0, 8, S, pairs=3)
    assert row["attempts"] is None and "spread of attempts is unknown" in row["note"]
    assert "more attempts cannot be planned: too few repeated attempts" in _plan_line(one, 10.0, 8, S, 0.8, 3)


def test_explain_shows_the_shape_the_figure_used():
    from hpcbench.report.stats_explain import StatsView
    from hpcbench.stats import analysis
    from hpcbench.stats.analysis import Attempt, by_agent

    rng = np.random.default_rng(3)
    att = [Attempt(a, f"p{j}", str(k), float(np.clip(50 + 20 * (a == "A") + rng.normal(0, 15), 0, 100)),
                   bool(rng.random() < 0.5)) for a in "AB" for j in range(8) for k in range(3)]
    view = StatsView.__new__(StatsView)  # what explain derives, without a stored scoring
    view.sid, view.doc, view.stored, view.earlier, view.settings = "s", {}, False, False, S
    view.groups = by_agent(att)
    text = "\n".join(view.power())
    c = power.components({a: analysis.cells(m, analysis.COMPOSITE) for a, m in view.groups.items()})
    assert c.shape_pairs == 1 and c.skew is not None
    f = power.shape_factor(c, 8, 7, 0.95)
    assert f"over 1 established pair(s): skew {c.skew:+.3f}" in text and f"spreads {f:.3f} x" in text, text
    assert f"{power.multiplier(7, 0.95, 0.8, f):.4f}" in text, text
