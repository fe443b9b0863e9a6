"""bench/stats_coverage.py at a small size, asserting the targets of docs/report.md: on
synthetic campaigns of known truth drawn through analyse_uncertainty (8 identical agents,
pass/fail attempts with partial credit, heterogeneous problems), every agent's composite
and pass-rate intervals cover 93% or more, the family-wise false-positive rate over the 28
pairs is 5% or less, and the detectable difference is found at least 75% of the time at a
true gap of what the campaigns report (nominal 80%; the check errs toward conservative).
Slow tier: a minute or two of arithmetic, no PETSc."""

from __future__ import annotations

import pytest

from bench.stats_coverage import run

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("model,size", [("weak", (6, 1)), ("extremes", (12, 3)), ("beta", (18, 5))])
def test_intervals_cover_orders_hold_and_power_is_not_optimistic(model, size):
    row = run([model], [size], campaigns=80, seed=3, resamples=100, out=lambda _: None)[0]
    assert row.composite >= 0.93 and row.passed >= 0.93, row
    assert row.fwer <= 0.05, row
    if row.mdd is not None:
        assert row.power is not None and row.power >= 0.75, row
