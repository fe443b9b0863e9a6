"""bench/stats_coverage.py at a small size, asserting the targets of docs/report.md: on
synthetic campaigns of known truth drawn through analyse_uncertainty (8 identical agents,
pass/fail attempts with partial credit, heterogeneous problems), every agent's composite
and pass-rate intervals cover 93% or more, the family-wise false-positive rate over the 28
pairs is 5% or less, and at a true gap of what such campaigns report as their minimum
detectable difference the better agent is established at least 75% of the time (nominal
80%, 5 points below it) less twice the binomial noise of the small run. Slow tier: a few
minutes of arithmetic, no PETSc."""

from __future__ import annotations

import math

import pytest

from bench.stats_coverage import run

pytestmark = pytest.mark.slow

CAMPAIGNS = 100


@pytest.mark.parametrize("model,size", [("weak", (6, 1)), ("extremes", (12, 3)), ("mixed", (18, 5))])
def test_intervals_cover_orders_hold_and_power_is_not_optimistic(model, size):
    row = run([model], [size], campaigns=CAMPAIGNS, seed=3, resamples=100, out=lambda _: None)[0]
    assert row.composite >= 0.93 and row.passed >= 0.93, row
    assert row.fwer <= 0.05, row
    assert row.mdd is not None and row.power is not None, row
    noise = 2 * math.sqrt(0.8 * 0.2 / CAMPAIGNS)
    assert row.power >= 0.75 - noise, row
