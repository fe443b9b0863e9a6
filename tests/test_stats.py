"""hpcbench.stats on small cases whose answers are known: pass@k against brute-force
enumeration, the scope rules (too few to say, these problems only, problems like these),
paired intervals, rank ranges, the judge's share, the detectable difference and the
seeded streams that let `explain` draw one interval again."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from hpcbench.evaluators.base import EvalResult
from hpcbench.score.judge_samples import combine, composites
from hpcbench.score.verdict import passed_every_check
from hpcbench.stats import judge_noise, passk, power
from hpcbench.stats.analysis import Attempt, analyse_uncertainty
from hpcbench.stats.intervals import PROBLEMS, THESE, TOO_FEW, Settings, mean_interval, paired_interval
from hpcbench.stats.ranks import label, rank_ranges

FAST = Settings(resamples=4000)


def brute_pass_at_k(passed: list[bool], k: int) -> float:
    """The definition: the share of k-subsets of the attempts holding at least one pass."""
    subsets = list(itertools.combinations(range(len(passed)), k))
    return sum(any(passed[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_equals_brute_force_enumeration(n):
    for c in range(n + 1):
        flags = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            assert passk.pass_at_k(n, c, k) == pytest.approx(brute_pass_at_k(flags, k), abs=1e-12), (n, c, k)
        assert passk.table(flags) == pytest.approx([brute_pass_at_k(flags, k) for k in range(1, n + 1)])


def test_pass_at_k_of_an_agent_averages_problems_with_enough_attempts():
    got = passk.agent_table({"a": [True, False, False], "b": [False], "c": [True, True]})
    assert got[0] == {"k": 1, "value": pytest.approx((1 / 3 + 0 + 1) / 3), "problems": 3}
    assert got[1] == {"k": 2, "value": pytest.approx((brute_pass_at_k([True, False, False], 2) + 1) / 2),
                      "problems": 2}
    assert got[2] == {"k": 3, "value": 1.0, "problems": 1}
    with pytest.raises(ValueError, match="1 <= k <= n"):
        passk.pass_at_k(3, 1, 4)


def test_scope_follows_the_number_of_problems_and_attempts():
    one_problem = {"p": [100.0, 50.0, 100.0, 50.0, 100.0]}  # 5 attempts: too few
    iv = mean_interval(one_problem, FAST, "k")
    assert iv.scope == TOO_FEW and iv.low is None and "too few to say" in iv.note and iv.estimate == 80.0
    six = {"p": [100.0, 50.0, 100.0, 50.0, 100.0, 50.0]}
    iv = mean_interval(six, FAST, "k")
    assert iv.scope == THESE and iv.low < 75.0 < iv.high and "these problems only" in iv.note
    many = {f"p{i}": [float(10 * i)] for i in range(6)}  # one attempt each, six problems
    iv = mean_interval(many, FAST, "k")
    assert iv.scope == PROBLEMS and iv.low < 25.0 < iv.high and iv.estimate == 25.0
    # every problem counts once, however many attempts it got
    assert mean_interval({"a": [0.0] * 6, "b": [100.0] * 12}, FAST, "k").estimate == 50.0


def test_with_six_problems_the_interval_is_students_t_on_the_problem_means():
    """Problems drawn, each keeping its attempts: the bootstrap's standard error widened by
    sqrt(P/(P-1)) with t(P-1), which for a mean is the t interval on the problem means."""
    cells = {f"p{i}": [v, v + 4.0] for i, v in enumerate([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])}
    iv = mean_interval(cells, Settings(resamples=20000), "k")
    means = np.array([12.0, 22, 32, 42, 52, 62])
    half = 2.5706 * np.std(means, ddof=1) / math.sqrt(6)
    assert iv.scope == PROBLEMS and iv.estimate == 37.0
    assert iv.low == pytest.approx(37 - half, rel=0.02) and iv.high == pytest.approx(37 + half, rel=0.02)
    assert iv.standard_error == pytest.approx(np.std(means, ddof=0) / math.sqrt(6), rel=0.02)
    # near the top of the range it is clipped there, never beyond what a composite can be
    top = {f"p{i}": [v] for i, v in enumerate([100.0, 100.0, 100.0, 100.0, 100.0, 70.0])}
    iv = mean_interval(top, FAST, "k", (0.0, 100.0))
    assert iv.high == 100.0 and iv.low < 95.0


def test_same_seed_same_interval_and_each_item_draws_its_own_stream():
    rng = np.random.default_rng(2)
    vals = {f"p{i}": list(rng.normal(50, 10, 2)) for i in range(7)}
    a, b = mean_interval(vals, FAST, "agent/x/composite"), mean_interval(vals, FAST, "agent/x/composite")
    assert (a.low, a.high) == (b.low, b.high)
    c = mean_interval(vals, Settings(seed=1, resamples=4000), "agent/x/composite")
    assert (a.low, a.high) != (c.low, c.high)
    # an agent's interval does not depend on which other agents the campaign holds
    att = [Attempt("x", p, str(j), v, True) for p, vs in vals.items() for j, v in enumerate(vs)]
    more = att + [Attempt("y", "p0", "1", 3.0, False)]
    assert (analyse_uncertainty(att, FAST, "s", [])["agents"]["x"]["composite"]
            == analyse_uncertainty(more, FAST, "s", [])["agents"]["x"]["composite"])


def test_paired_difference_uses_shared_problems_and_cancels_problem_difficulty():
    rng = np.random.default_rng(5)
    hard = rng.normal(0, 30, 8)  # problem difficulty, shared by both agents
    a = {f"p{i}": [50 + hard[i] + 3 + x for x in rng.normal(0, 1, 2)] for i in range(8)}
    b = {f"p{i}": [50 + hard[i] + x for x in rng.normal(0, 1, 2)] for i in range(8)}
    b["only-b"] = [0.0, 0.0]
    d = paired_interval(a, b, FAST, "pair")
    assert d.problems == 8 and d.scope == PROBLEMS and 0 < d.low < 3 < d.high < 6
    # unpaired, the same 3 points are lost in the problems' spread
    ia, ib = mean_interval(a, FAST, "a"), mean_interval(b, FAST, "b")
    assert ia.low < ib.high
    assert paired_interval(a, {"elsewhere": [1.0]}, FAST, "p").scope == TOO_FEW


def test_rank_ranges_from_established_pairs():
    agents = ["a", "b", "c", "d"]
    order = {("a", "c"): 1, ("a", "d"): 1, ("b", "d"): 1, ("a", "b"): 0, ("b", "c"): 0, ("c", "d"): 0}
    got = rank_ranges(agents, order)
    assert got == {"a": (1, 2), "b": (1, 3), "c": (2, 4), "d": (3, 4)}
    assert label(*got["a"]) == "1-2" and label(1, 1) == "1"
    assert rank_ranges(agents, {}) == {x: (1, 4) for x in agents}  # nothing established: everyone 1-4


def rosenbrock_like(right: int) -> list[Attempt]:
    return [Attempt(f"{right}of6", "rosenbrock", str(i + 1), 100.0 if i < right else 50.0, i < right)
            for i in range(6)]


def test_three_agents_on_one_problem_are_ranked_only_where_the_data_say_so():
    doc = analyse_uncertainty(rosenbrock_like(6) + rosenbrock_like(4) + rosenbrock_like(3), Settings(), "s", [])
    pairs = {(p["a"], p["b"]): p for p in doc["pairs"]}
    assert pairs[("3of6", "6of6")]["established"] == -1  # 6/6 above 3/6
    assert pairs[("3of6", "4of6")]["established"] == 0
    ranks = {a: (v["rank"]["best"], v["rank"]["worst"]) for a, v in doc["agents"].items()}
    assert ranks["6of6"][1] < ranks["3of6"][1] and ranks["6of6"][0] < ranks["3of6"][0]
    for a, v in doc["agents"].items():
        c = v["composite"]
        assert c["scope"] == THESE and c["low"] <= c["estimate"] <= c["high"], a
    assert doc["agents"]["3of6"]["pass"]["estimate"] == 0.5
    assert doc["agents"]["4of6"]["pass_at_k"][1]["value"] == pytest.approx(brute_pass_at_k([True] * 4 + [False] * 2,
                                                                                             2))


def test_judge_share_from_the_spread_of_samples():
    # one problem, 6 attempts; the judge moves each attempt's composite by +-d across 4 samples
    base = [60.0, 70.0, 80.0, 60.0, 70.0, 80.0]
    for d, expect_more in ((0.0, False), (10.0, True)):
        samples = {"p": [[b - d, b + d, b - d, b + d] for b in base]}
        j = judge_noise.judge_variance(samples, ["p"])
        total = judge_noise.interval_variance({"p": base}, ["p"], THESE)
        share = judge_noise.share(j, total)
        assert (share > 0.3) == expect_more and 0.0 <= share <= 1.0
        # by hand: each attempt's sample variance 4d^2/3, over K=4 samples, 6 attempts, one problem
        assert j == pytest.approx(6 * (4 * d * d / 3) / 4 / 36)
    assert judge_noise.judge_variance({"p": [[1.0], [2.0]]}, ["p"]) is None  # one sample: no judge noise known


def test_judge_samples_combine_into_the_mean_and_give_one_composite_per_sample():
    def judged(score: float) -> EvalResult:
        return EvalResult(evaluator="readability", stage="quality", category="code", score=score, confidence=1.0,
                          rationale=f"r{score}", prompt_tokens=10, method="llm_judge")
    got = [judged(0.2), judged(0.6), EvalResult(evaluator="readability", stage="quality", category="code",
                                                 status="unscored", rationale="outage"), judged(1.0)]
    c = combine(got)
    assert c.score == pytest.approx(0.6) and c.prompt_tokens == 30 and len(c.evidence["samples"]) == 4
    assert "mean of 3 of 4 judge samples" in c.rationale
    comps = composites([c], {0: got}, lambda rs: 100 * rs[0].score)
    assert comps == pytest.approx([20.0, 60.0, 60.0, 100.0])  # the unscored sample keeps the mean


def test_pass_means_every_gate_and_every_hidden_check():
    def acc(score, unscored=()):
        return EvalResult(evaluator="numerical_accuracy", stage="metric", category="correctness", score=score,
                          evidence={"unscored": list(unscored)})
    assert passed_every_check([acc(1.0)], "")
    assert not passed_every_check([acc(0.999)], "")
    assert not passed_every_check([acc(1.0)], "memory_safety")
    assert not passed_every_check([acc(1.0, ["solution (case n6): no reference value"])], "")
    assert not passed_every_check([], "")  # no hidden check ran: not established


def test_detectable_difference_shrinks_with_attempts_and_problems():
    cells = {a: {f"p{i}": list(np.random.default_rng(hash(a) % 1000 + i).normal(50 + 5 * (a == "x"), 10, 3))
                 for i in range(8)} for a in ("x", "y", "z")}
    comp = power.components(cells)
    assert comp.within == pytest.approx(100, rel=0.5) and comp.problems == 8 and comp.attempts == 3
    s = Settings()
    d3 = power.detectable(comp, 8, 3, s)["difference"]
    assert power.detectable(comp, 8, 12, s)["difference"] < d3 < power.detectable(comp, 8, 1, s)["difference"]
    assert power.detectable(comp, 30, 3, s)["difference"] < d3
    n = power.attempts_needed(comp, d3 * 0.8, 8, s)
    assert n is not None and n > 3 and power.detectable(comp, 8, n, s)["difference"] <= d3 * 0.8
    assert power.detectable(comp, 8, n - 1, s)["difference"] > d3 * 0.8
    # a gap that varies by problem more than attempts can average out needs problems, not attempts
    wide = power.Components(within=100.0, within_df=40, interaction=400.0, pairs=3, problems=8, attempts=3)
    assert power.attempts_needed(wide, 10.0, 8, s) is None
    p = power.problems_needed(wide, 10.0, 3, s)
    assert p is not None and power.detectable(wide, p, 3, s)["difference"] <= 10.0


def test_no_detectable_difference_from_attempts_that_never_differ():
    same = power.components({"a": {"p": [0.0, 0.0, 0.0]}, "b": {"p": [0.0, 0.0, 0.0]}})
    with pytest.raises(ValueError, match="differ"):
        power.detectable(same, 1, 3, Settings())
    one = power.components({"a": {"p": [0.0, 10.0]}, "b": {"q": [5.0]}})
    with pytest.raises(ValueError, match="unknown"):
        power.detectable(one, 1, 2, Settings())
