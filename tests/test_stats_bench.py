"""bench/stats_coverage.py at a small size, asserting the targets of docs/report.md: on
synthetic campaigns of known truth drawn through analyse_uncertainty (8 identical agents,
pass/fail attempts with partial credit, heterogeneous problems), every agent's composite
and pass-rate intervals cover 93% or more, the family-wise false-positive rate over the 28
pairs is 5% or less, and at a true gap near what such campaigns report as their minimum
detectable difference the simulated power is within 5 points of the power they report at
that gap, less twice the binomial noise of the small run (slow tier: a few minutes of
arithmetic, no PETSc). And the script's smallest run prints every figure (a second)."""

from __future__ import annotations

import math

import pytest

from bench.stats_coverage import main, run

CAMPAIGNS = 100


def test_the_benchmark_prints_coverage_fwer_and_simulated_against_reported_power(capsys):
    main(["--campaigns", "4", "--models", "weak", "--sizes", "6x5", "--seed", "2"])
    out = capsys.readouterr().out.splitlines()
    head = [c.strip() for c in next(x for x in out if x.startswith("| model")).strip("|").split("|")]
    assert head == ["model", "P", "n", "comp", "pass", "cwidth", "pwidth", "FWER", "gap", "MDD", "power", "rep"]
    row = [c.strip() for c in next(x for x in out if x.startswith("| weak")).strip("|").split("|")]
    assert row[:3] == ["weak", "6", "5"]
    figures = [float(x) for x in row[3:]]  # every column a number: no "—" at 5 attempts
    assert all(0 <= f <= 1 for f in figures[:2] + figures[3:5] + figures[7:])


@pytest.mark.slow
@pytest.mark.parametrize("model,size", [("weak", (6, 1)), ("extremes", (12, 3)), ("mixed", (18, 5))])
def test_intervals_cover_orders_hold_and_power_is_what_is_reported(model, size):
    row = run([model], [size], campaigns=CAMPAIGNS, seed=3, resamples=100, out=lambda _: None)[0]
    assert row.composite >= 0.93 and row.passed >= 0.93, row
    assert row.fwer <= 0.05, row
    assert row.mdd is not None and row.power is not None and row.reported is not None, row
    noise = 2 * math.sqrt(0.8 * 0.2 / CAMPAIGNS)
    assert abs(row.power - row.reported) <= 0.05 + noise, row
