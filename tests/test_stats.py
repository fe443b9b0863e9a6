"""hpcbench.stats on small cases whose answers are known: pass@k against brute-force
enumeration and over the same problems for every k, the scope rules (too few to say, wide,
problems like these), bounded intervals that cannot collapse onto 0, paired intervals,
Holm's orders and rank ranges, the common problems and missing attempts, the judge's share
and the detectable difference."""

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
from hpcbench.stats.intervals import (
    PROBLEMS,
    THESE,
    TOO_FEW,
    Settings,
    holm,
    holm_adjusted,
    mean_interval,
    paired_interval,
)
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


def test_pass_at_k_of_an_agent_is_over_every_problem_for_every_k_and_never_falls():
    """k only up to the fewest attempts on a problem: every k averages the same problems (the old
    table's pass@3 came from the one problem with 3 attempts, and fell from pass@1 to pass@2)."""
    cells = {"a": [True, False, False], "b": [False, False], "c": [True, True], "d": [False, True, False]}
    got = passk.agent_table(cells)
    assert [t["k"] for t in got] == [1, 2] and all(t["problems"] == 4 for t in got)
    assert got[0]["value"] == pytest.approx((1 / 3 + 0 + 1 + 1 / 3) / 4)
    assert got[1]["value"] == pytest.approx((brute_pass_at_k([True, False, False], 2) + 0 + 1
                                             + brute_pass_at_k([False, True, False], 2)) / 4)
    assert got[0]["value"] <= got[1]["value"]
    assert all(t["low"] <= t["value"] <= t["high"] and 0 < t["high"] for t in got)
    assert [t["k"] for t in passk.agent_table(cells, most_k=1)] == [1]
    with pytest.raises(ValueError, match="1 <= k <= n"):
        passk.pass_at_k(3, 1, 4)


def test_scope_follows_the_number_of_problems_only():
    """One estimand at every size: problems like these from 3 problems up (wide below 6), nothing
    below; many attempts on one problem never make an interval (a percentile over attempts
    covered 38-62% of the time)."""
    one_problem = {"p": [100.0, 50.0, 100.0, 50.0, 100.0, 50.0, 100.0, 50.0]}
    iv = mean_interval(one_problem, FAST, "k")
    assert iv.scope == TOO_FEW and iv.low is None and "too few to say" in iv.note and iv.estimate == 75.0
    two = {"p": [100.0, 50.0], "q": [60.0] * 10}
    assert mean_interval(two, FAST, "k").scope == TOO_FEW
    three = {f"p{i}": [float(10 * i), float(10 * i + 2)] for i in range(3)}
    iv = mean_interval(three, FAST, "k")
    assert iv.scope == PROBLEMS and iv.note.startswith("wide") and iv.low < 11.0 < iv.high
    many = {f"p{i}": [float(10 * i)] for i in range(6)}  # one attempt each, six problems
    iv = mean_interval(many, FAST, "k")
    assert iv.scope == PROBLEMS and iv.note == "" and iv.low < 25.0 < iv.high and iv.estimate == 25.0
    # every problem counts once, however many attempts it got
    assert mean_interval({"a": [0.0] * 6, "b": [100.0] * 12}, FAST, "k").estimate == 50.0


def test_a_difference_gets_students_t_on_the_problems_differences():
    cells = {f"p{i}": [v, v + 4.0] for i, v in enumerate([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])}
    zero = {p: [0.0] for p in cells}
    iv = paired_interval(cells, zero, FAST, "k")
    means = np.array([12.0, 22, 32, 42, 52, 62])
    half = 2.5706 * np.std(means, ddof=1) / math.sqrt(6)
    assert iv.scope == PROBLEMS and iv.estimate == 37.0
    assert iv.low == pytest.approx(37 - half, rel=1e-4) and iv.high == pytest.approx(37 + half, rel=1e-4)
    assert iv.standard_error == pytest.approx(np.std(means, ddof=1) / math.sqrt(6))
    assert iv.p_value == pytest.approx(2 * (1 - __import__("scipy").stats.t.cdf(37 / iv.standard_error, 5)))


def test_a_bounded_measure_never_collapses_onto_its_bound():
    """An agent that failed every attempt on 6 problems: its pass rate is not [0, 0] (that held a
    true 6% rate 30% of the time) but [0, h] with h what 6 problems allow; likewise at the top."""
    zeros = {f"p{i}": [0.0, 0.0, 0.0] for i in range(6)}
    iv = mean_interval(zeros, FAST, "k", (0.0, 1.0))
    assert iv.estimate == 0.0 and iv.low == 0.0 and 0.3 < iv.high < 0.8
    ones = {f"p{i}": [100.0] for i in range(12)}
    iv = mean_interval(ones, FAST, "k", (0.0, 100.0))
    assert iv.high == 100.0 and 60.0 < iv.low < 90.0
    # more problems, a narrower bound: 18 problems of zeros
    assert mean_interval({f"p{i}": [0.0] for i in range(18)}, FAST, "k", (0.0, 1.0)).high < iv.high / 100 + 0.3
    # a mixed agent: inside (0, 1), around the estimate, near the t interval where it is symmetric
    mixed = {f"p{i}": [float(i % 2), float((i // 2) % 2)] for i in range(12)}
    b = mean_interval(mixed, FAST, "k", (0.0, 1.0))
    t = paired_interval(mixed, {p: [0.0] for p in mixed}, FAST, "k")
    assert 0 < b.low < b.estimate < b.high < 1 and b.high - b.low == pytest.approx(t.high - t.low, rel=0.35)


def test_adding_an_agent_on_the_same_problems_leaves_an_interval_alone():
    rng = np.random.default_rng(2)
    vals = {f"p{i}": list(rng.normal(50, 10, 2)) for i in range(7)}
    att = [Attempt("x", p, str(j), v, True) for p, vs in vals.items() for j, v in enumerate(vs)]
    more = att + [Attempt("y", p, "1", 3.0, False) for p in vals]
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


def test_holm_step_down_by_hand():
    # m = 4: 0.01 <= 0.05/4; 0.015 <= 0.05/3; 0.03 > 0.05/2 stops; 0.04 not reached
    assert holm([0.04, 0.01, 0.03, 0.015], 0.05) == [False, True, False, True]
    assert holm_adjusted([0.04, 0.01, 0.03, 0.015]) == pytest.approx([0.06, 0.04, 0.06, 0.045])
    assert holm([None, 0.001], 0.05) == [False, True]  # untested pairs neither count nor are rejected


def agents_on(problems: int, rights: dict[str, int], attempts: int = 6) -> list[Attempt]:
    return [Attempt(agent, f"p{j}", str(i + 1), 100.0 if i < right else 50.0, i < right)
            for agent, right in rights.items() for j in range(problems) for i in range(attempts)]


def test_orders_are_holms_over_all_pairs_and_one_pair_alone_keeps_its_own():
    """Three agents 4 points apart on 6 problems: top above low survives Holm's step-down over
    the 3 pairs; low vs mid, whose own interval excludes 0 (p 0.027), is established alone but
    not among all pairs (Holm p 0.054); ranks follow Holm's orders."""
    rng = np.random.default_rng(1)
    att = []
    for agent, mean in (("top", 80.0), ("mid", 76.0), ("low", 72.0)):
        for j in range(6):
            att += [Attempt(agent, f"p{j}", str(i), float(mean + 3 * (j % 3) + x), True)
                    for i, x in enumerate(rng.normal(0, 4, 3))]
    doc = analyse_uncertainty(att, Settings(), "s", [])
    pairs = {(p["a"], p["b"]): p for p in doc["pairs"]}
    assert doc["family"] == {"pairs": 3, "method": "holm", "level": 0.95}
    ps = [p["composite"]["p_value"] for p in doc["pairs"]]
    assert [p["p_holm"] for p in doc["pairs"]] == pytest.approx(holm_adjusted(ps))
    assert pairs[("low", "top")]["established"] == -1 and pairs[("low", "top")]["p_holm"] < 0.01
    low_mid = pairs[("low", "mid")]
    assert low_mid["composite"]["p_value"] == pytest.approx(0.0268, abs=1e-3) and low_mid["composite"]["high"] < 0
    assert low_mid["established_alone"] == -1 and low_mid["established"] == 0
    ranks = {a: (v["rank"]["best"], v["rank"]["worst"]) for a, v in doc["agents"].items()}
    assert ranks == {"top": (1, 2), "mid": (1, 3), "low": (2, 3)}


def test_eight_identical_agents_rarely_establish_any_order():
    """The family-wise error over 28 pairs: of 40 campaigns of 8 identical agents (6 problems,
    3 attempts) at most a few call any pair established (uncorrected: about half did)."""
    rng = np.random.default_rng(11)
    hits = alone = 0
    for _ in range(40):
        diff = rng.normal(0, 15, 6)
        att = [Attempt(f"a{k}", f"p{j}", str(i), float(np.clip(50 + diff[j] + rng.normal(0, 5) + rng.normal(0, 15),
                                                               0, 100)), False)
               for k in range(8) for j in range(6) for i in range(3)]
        doc = analyse_uncertainty(att, FAST, "s", [])
        hits += any(p["established"] for p in doc["pairs"])
        alone += any(p["established_alone"] for p in doc["pairs"])
    assert hits <= 5 and alone > hits


def test_one_problem_establishes_nothing_however_many_attempts():
    doc = analyse_uncertainty(agents_on(1, {"6of6": 6, "3of6": 3}), Settings(), "s", [])
    assert all(p["established"] == 0 and p["established_alone"] == 0 for p in doc["pairs"])
    assert all(v["composite"]["scope"] == TOO_FEW and v["rank"]["label"] == "1-2" for v in doc["agents"].values())


def test_missing_attempts_leaderboard_means_and_paired_differences_agree():
    """B is better than A on every problem, but A skipped the two hardest: A's mean over its own
    problems is higher (the old leaderboard put A first); over the common problems the means,
    their order and the paired difference all say B, and A's missing attempts are named and
    flagged as falling on hard problems."""
    hardness = {f"p{j}": 90.0 - 12 * j for j in range(6)}  # p5 hardest
    att = []
    for agent, edge in (("A", 0.0), ("B", 5.0)):
        for p, base in hardness.items():
            if agent == "A" and p in ("p4", "p5"):
                continue  # lost to infrastructure errors
            att += [Attempt(agent, p, str(i), base + edge + d, base + edge + d > 60) for i, d in enumerate((-1, 0, 1))]
    att += [Attempt("C", p, str(i), base + 1.0 + d, False) for p, base in hardness.items()
            for i, d in enumerate((-2, 0, 2)) if p != "p0"]
    own = {a: np.mean([np.mean([x.composite for x in att if x.agent == a and x.problem == p])
                       for p in {x.problem for x in att if x.agent == a}]) for a in "AB"}
    assert own["A"] > own["B"]  # the defect: means over different problem sets
    doc = analyse_uncertainty(att, Settings(), "s", [])
    pr = doc["problems"]
    assert pr["common"] == ["p1", "p2", "p3"] and pr["left_out"] == ["p0", "p4", "p5"]
    means = {a: doc["agents"][a]["composite"]["estimate"] for a in "ABC"}
    pairs = {(p["a"], p["b"]): p for p in doc["pairs"]}
    for (a, b), p in pairs.items():
        assert np.sign(means[a] - means[b]) == np.sign(p["composite"]["estimate"]), (a, b)
        assert means[a] - means[b] == pytest.approx(p["composite"]["estimate"])
    assert means["B"] > means["A"] and pairs[("A", "B")]["composite"]["estimate"] == pytest.approx(-5.0)
    a = pr["agents"]["A"]
    assert a["not_attempted"] == ["p4", "p5"] and a["missing"] == 6 and a["hard"]
    assert any(w.startswith("A:") and "hard problems" in w for w in pr["warnings"])
    assert not pr["agents"]["C"]["hard"]  # C missed the easiest problem: no warning
    assert not any(w.startswith("C:") for w in pr["warnings"])
    # the leaderboard the report prints: ordered by those means, B above A, its own-problem mean kept aside
    from types import SimpleNamespace

    from hpcbench.report.data import leaderboard

    rows = [{"agent": x.agent, "problem": x.problem, "composite": x.composite, "categories": {}, "gates_passed": True,
             "partial": False, "left_out": []} for x in att]
    board = leaderboard(SimpleNamespace(scored=rows, stats=doc, sid="s", categories=[], explain=lambda p: p))
    assert [r["agent"] for r in board].index("B") < [r["agent"] for r in board].index("A")
    assert {r["agent"]: r["composite_mean"] for r in board} == pytest.approx(means)
    assert next(r for r in board if r["agent"] == "A")["composite_mean_own"] == pytest.approx(own["A"])
    # pass@k over the same problems for every agent
    assert {t["problems"] for e in doc["agents"].values() for t in e["pass_at_k"]} == {3}


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
    cells = {a: {f"p{i}": list(np.random.default_rng(100 * "xyz".index(a) + i).normal(50 + 5 * (a == "x"), 10, 3))
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
    same = power.components({a: {p: [0.0, 0.0, 0.0] for p in "pqr"} for a in "ab"})
    with pytest.raises(ValueError, match="differ"):
        power.detectable(same, 3, 3, Settings())
    with pytest.raises(ValueError, match="fewer than 3"):
        power.detectable(same, 2, 3, Settings())
    one = power.components({"a": {"p": [0.0, 10.0]}, "b": {"q": [5.0]}})
    with pytest.raises(ValueError, match="unknown"):
        power.detectable(one, 3, 2, Settings())


def test_the_report_names_the_problems_left_out_and_the_missing_attempts():
    from types import SimpleNamespace

    from hpcbench.report.uncertainty import problems_lines

    hard = [Attempt(a, f"p{j}", str(i), 90.0 - 15 * j, False) for a in "AB" for j in range(5) for i in range(2)
            if not (a == "A" and j >= 3)]
    text = "\n".join(problems_lines(SimpleNamespace(stats=analyse_uncertainty(hard, FAST, "s", []))))
    assert "over the 3 problems every listed agent attempted; left out: p3, p4." in text
    assert "| `A` | 4 | p3, p4 | 0.12 ⚠ |" in text and "⚠ A: 4 attempts missing, mostly on hard problems" in text
    # disjoint problem sets: nothing common, and the report says the means are not compared
    apart = [Attempt("A", "p0", "1", 50.0, False), Attempt("B", "p1", "1", 60.0, False)]
    doc = analyse_uncertainty(apart, FAST, "s", [])
    assert doc["problems"]["common"] == [] and doc["problems"]["warnings"] == []
    assert "No problem was attempted by every listed agent" in "\n".join(problems_lines(SimpleNamespace(stats=doc)))


def _campaign_cells(agents: str, problems: int, attempts: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    hard = rng.normal(0, 15, problems)
    return {a: {f"p{j}": list(50 + 4 * i + hard[j] + rng.normal(0, 6) + rng.normal(0, 12, attempts))
                for j in range(problems)} for i, a in enumerate(agents)}


def test_power_at_inverts_the_detectable_difference_and_the_own_design_uses_its_differences():
    """The power the report implies at a difference is what detectable() solves for (80% at its
    figure, rising with the gap); at the campaign's own attempts the standard error is the pooled
    variance of the problems' differences itself, not the components with s_g^2 clipped at 0."""
    s = Settings()
    comp = power.components(_campaign_cells("abcd", 10, 3, 7))
    d = power.detectable(comp, 10, 3, s, pairs=6)
    assert d["level_standard_error"] == pytest.approx(math.sqrt(comp.differences / 10))
    assert power.power_at(comp, d["difference"], 10, 3, s, pairs=6) == pytest.approx(0.8, abs=1e-6)
    assert power.power_at(comp, d["difference"] / 2, 10, 3, s, pairs=6) < 0.8 < power.power_at(
        comp, d["difference"] * 1.5, 10, 3, s, pairs=6)
    # other attempts: scaled from the measured variance, monotone, and the same at the own design
    assert [power.detectable(comp, 10, n, s)["difference"] for n in (2, 3, 4)] == sorted(
        (power.detectable(comp, 10, n, s)["difference"] for n in (2, 3, 4)), reverse=True)
    # one attempt each: the small-sample factor (the t test on single attempts finds less)
    one = power.components(_campaign_cells("abcd", 10, 1, 7))
    assert power.detectable(one, 10, 1, s)["level_standard_error"] == pytest.approx(
        math.sqrt(one.differences / 10) * power.median_unbiased(one.spread_df))


def test_the_power_summary_and_the_report_say_what_ten_points_need():
    from types import SimpleNamespace

    from hpcbench.report.uncertainty import power_sentence

    cells = _campaign_cells("abc", 8, 3, 11)
    att = [Attempt(a, p, str(i), v, v > 60) for a, per in cells.items() for p, vals in per.items()
           for i, v in enumerate(vals)]
    doc = analyse_uncertainty(att, FAST, "s", [])
    pw = doc["power"]
    need = {r["difference"]: r for r in pw["needed"]}
    assert set(need) == {2.0, 5.0, 10.0}
    comp = power.components({a: {p: v for p, v in per.items()} for a, per in cells.items()})
    ten = need[10.0]
    assert ten["problems"] == power.problems_needed(comp, 10.0, 3, FAST, pairs=3)
    assert power.detectable(comp, ten["problems"], 3, FAST, pairs=3)["difference"] <= 10.0
    assert power.detectable(comp, ten["problems"] - 1, 3, FAST, pairs=3)["difference"] > 10.0
    assert need[2.0]["problems"] > need[5.0]["problems"] > ten["problems"] > 8
    text = power_sentence(SimpleNamespace(stats=doc, campaign="C"))
    assert f"10 points would need {ten['problems']} problems at 3 attempts" in text
    assert f"2 points would need {need[2.0]['problems']} problems" in text
