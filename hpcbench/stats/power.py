"""How small a difference a campaign's design can detect, and how many attempts a
wanted difference needs, from the variance the campaign shows.

Two agents compared over P shared problems with n attempts each: the paired
difference of their means has variance

    (2 s_g^2 + 2 s_w^2 / n) / P

where s_w^2 is the spread of attempts within a problem and s_g^2 the agent-by-problem
interaction (how much two agents' gap changes from problem to problem), both estimated
by the method of moments from every agent and pair of the campaign. The minimum
detectable difference at power 1-beta and two-sided level alpha is
(t_{1-alpha/2} + t_{1-beta}) x its standard error (Bloom 1995, "Minimum detectable
effects", Evaluation Review 19(5): 547-556), at the level a pair is tested at among all
the leaderboard's pairs: alpha / pairs (Bonferroni, Holm's first step; Holm rejects at
least what it does, so the figure is conservative for the leaderboard's orders). Nothing is
established from fewer than 3 problems, so no design of fewer has a detectable difference.
At the campaign's own attempts the pooled variance of the problems' differences gives the
standard error directly (it estimates that sum without clipping s_g^2 at 0); another number
of attempts scales it by the ratio the components give. With one attempt each the standard
error (where no established pair measured the shape below), and below 6 problems with any, is
made median-unbiased for the degrees of freedom it rests on (small_sample: there the t test
finds less than the normal theory says), and every design's
is scaled for how a pass/fail measure spreads more as two agents part (spread_factor).

The test's statistic, (mean difference - t_crit x its estimated standard error), spreads as
Student's t says only where the problems' differences are normal. A gap near the boundary of a
pass/fail measure (most problems near 0 or near 1) is carried by a few problems: the
differences are skewed toward the better agent and the estimated standard error rises with the
estimated difference, so the statistic spreads less and the test finds the gap more often than
the t form says (4-7 points more at 12-18 problems on the near-0/near-1, weak and rare models of
bench/stats_coverage.py; the variance itself was right within 2%). shape_factor scales the
statistic's spread by the delta method's ratio for the skew and kurtosis of one problem's
difference, measured on the pairs the campaign establishes (a pair's skew only has a direction
where its order is known; none established: the t form).
power_at gives the power a design has at a difference (at the detectable difference, exactly
the power asked for); bench/stats_coverage.py compares it with simulated campaigns."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from hpcbench.stats.intervals import MIN_UNITS, PROBLEMS, WIDE, Settings

MAX_ATTEMPTS = 1000
# Stored with the figure: explain compares a stored figure only when it was drawn the same way.
METHOD = ("pooled differences at the campaign's attempts; spread at the gap; shaped by the established pairs' skew "
          "and kurtosis, median-unbiased with one attempt each where none is established")


@dataclass
class Components:
    within: float | None  # s_w^2, pooled over every (agent, problem) with 2 or more attempts
    within_df: int
    interaction: float | None  # s_g^2 (clipped at 0), pooled over pairs with 2 or more shared problems
    pairs: int
    problems: int  # the design: problems in the campaign's largest shared set
    attempts: int  # the design: median attempts per agent and problem
    differences: float | None = None  # pooled variance of the problems' paired differences (2 s_g^2 + 2 s_w^2/n)
    pass_rate: float | None = None  # the campaign's share of attempts that passed
    pass_slope: float | None = None  # composite points between a passing and a failing attempt, on average
    spread_df: int = 0  # degrees of freedom of the pooled spread of the problems' differences
    skew: float | None = None  # of one problem's difference, toward the better agent, over the established pairs
    kurtosis: float | None = None  # of one problem's difference (3 where normal), over the same pairs
    shape_pairs: int = 0  # the established pairs (4 or more shared problems) skew and kurtosis rest on

    def as_dict(self) -> dict:
        return asdict(self)


def components(cells: Mapping[str, Mapping[str, Sequence[float]]], max_agents: int = 100,
               passes: Mapping[str, Mapping[str, Sequence[bool]]] | None = None, level: float = 0.95) -> Components:
    """`cells`: agent -> problem -> attempt values; `passes`: whether each of those attempts
    passed (the same shape), for how the spread grows with a gap (spread_factor). The
    interaction is pooled over the pairs of the `max_agents` agents with the most attempts
    (pairs grow with the square of the agents); the shape of the differences over the pairs
    whose t test rejects at (1 - `level`) / pairs (Bonferroni: Holm's first step)."""
    ss = df = 0.0
    for per in cells.values():
        for vals in per.values():
            if len(vals) >= 2:
                ss += float(np.var(vals, ddof=1)) * (len(vals) - 1)
                df += len(vals) - 1
    within = ss / df if df else None
    num = den = dss = 0.0
    most = 0
    busiest = sorted(cells, key=lambda a: (-sum(len(v) for v in cells[a].values()), a))[:max_agents]
    alpha = (1 - level) / max(1, len(busiest) * (len(busiest) - 1) // 2)
    shapes: list[tuple[float, float, int]] = []
    for a, b in itertools.combinations(sorted(busiest), 2):
        shared = sorted(set(cells[a]) & set(cells[b]))
        most = max(most, len(shared))
        if len(shared) < 2:
            continue
        d = [np.mean(cells[a][p]) - np.mean(cells[b][p]) for p in shared]
        if (got := established_shape(np.asarray(d, dtype=float), alpha)) is not None:
            shapes.append((*got, len(shared) - 1))
        dss += float(np.var(d, ddof=1)) * (len(shared) - 1)
        if within is None:
            den += len(shared) - 1
            continue
        noise = within * float(np.mean([1 / len(cells[a][p]) + 1 / len(cells[b][p]) for p in shared]))
        num += (float(np.var(d, ddof=1)) - noise) / 2 * (len(shared) - 1)
        den += len(shared) - 1
    counts = [len(v) for per in cells.values() for v in per.values()]
    if len(cells) == 1:  # no pair: the design is the one agent's problems
        most = len(next(iter(cells.values())))
    interaction = max(0.0, num / den) if den and within is not None else None
    rate, slope = _pass_scale(cells, passes or {})
    weight = sum(w for _, _, w in shapes)
    skew = sum(g * w for g, _, w in shapes) / weight if shapes else None
    kurtosis = sum(k * w for _, k, w in shapes) / weight if shapes else None
    return Components(within, int(df), interaction, len(busiest) * (len(busiest) - 1) // 2,
                      most, int(np.median(counts)) if counts else 0, dss / den if den else None, rate, slope,
                      int(den), skew, kurtosis, len(shapes))


def established_shape(d: np.ndarray, alpha: float) -> tuple[float, float] | None:
    """(skew, kurtosis) of one pair's problems' differences `d`, the skew toward the better
    agent, where its two-sided t test rejects at `alpha` (None otherwise, or under 4 problems):
    the small-sample adjusted G1 and G2 + 3 (Joanes & Gill 1998, The Statistician 47: 183-189).
    Only an established order gives the skew its direction: oriented by the sign of a mean
    that is not established, symmetric long-tailed differences read as skewed (+0.3 to +1.3 on
    identical agents, bench/stats_coverage.py's models)."""
    p = len(d)
    if p < 4:
        return None
    x = d - d.mean()
    m2 = float(np.mean(x ** 2))  # the standard error of the mean is sqrt(m2 / (p - 1))
    if m2 <= 0 or abs(d.mean()) <= _critical(alpha, p - 1) * math.sqrt(m2 / (p - 1)):
        return None
    x *= 1.0 if d.mean() > 0 else -1.0
    g1 = float(np.mean(x ** 3)) / m2 ** 1.5 * math.sqrt(p * (p - 1)) / (p - 2)
    g2 = ((p + 1) * (float(np.mean(x ** 4)) / m2 ** 2 - 3) + 6) * (p - 1) / ((p - 2) * (p - 3))
    return g1, g2 + 3


def _pass_scale(cells: Mapping[str, Mapping[str, Sequence[float]]],
                passes: Mapping[str, Mapping[str, Sequence[bool]]]) -> tuple[float | None, float | None]:
    """(share passed, mean composite of passing attempts - of failing ones), None where unknown."""
    good: list[float] = []
    bad: list[float] = []
    for a, per in passes.items():
        for p, flags in per.items():
            for v, ok in zip(cells.get(a, {}).get(p, ()), flags):
                (good if ok else bad).append(v)
    if not good or not bad:
        return None, None
    slope = float(np.mean(good) - np.mean(bad))
    return len(good) / (len(good) + len(bad)), slope if slope > 0 else None


@functools.lru_cache(maxsize=256)
def _critical(alpha: float, df: int) -> float:
    """Two-sided t critical value (cached: components tests every pair, up to thousands)."""
    from scipy import stats

    return float(stats.t.ppf(1 - alpha / 2, df))


@functools.lru_cache(maxsize=256)
def median_unbiased(df: int) -> float:
    """The factor that makes a standard error estimated on `df` degrees of freedom median-unbiased:
    a variance from few problems is below the truth more often than above (its median is
    chi2_median(df)/df of it: 0.87 at 5 df), and a detectable difference from it is then found
    less often than it says (69-78% at 6 problems, bench/stats_coverage.py)."""
    from scipy import stats

    return math.sqrt(df / float(stats.chi2.median(df))) if df >= 1 else 1.0


def spread_factor(c: Components, difference: float) -> float:
    """How much the variance of a paired difference changes when the two agents are
    `difference` composite points apart instead of level. A pass/fail measure spreads most at
    a pass rate of 1/2 and least near 0 or 1 (Bernoulli's p(1-p)): two agents `difference`
    apart pass at rates difference / pass_slope apart around the campaign's rate (shifted
    inside [0, 1]), and the variance scales with their mean p(1-p) over the campaign's, never
    below 1 (a figure that errs, errs large). Without passes and failures both seen: 1."""
    if c.pass_rate is None or c.pass_slope is None or not 0 < c.pass_rate < 1:
        return 1.0
    gap = min(1.0, difference / c.pass_slope)
    lo, hi = c.pass_rate - gap / 2, c.pass_rate + gap / 2
    if lo < 0:
        lo, hi = 0.0, gap
    if hi > 1:
        lo, hi = 1.0 - gap, 1.0
    return max(1.0, (lo * (1 - lo) + hi * (1 - hi)) / (2 * c.pass_rate * (1 - c.pass_rate)))


def standard_error(c: Components, problems: int, attempts: int, settings: Settings) -> tuple[float, int, str]:
    """(standard error of a paired difference, degrees of freedom, scope) for a design. At the
    campaign's own attempts: the pooled variance of the problems' differences itself (unbiased;
    the components' interaction, clipped at 0, is biased up where it is small, and the figure
    was then 4-8 points conservative, bench/stats_coverage.py). At other attempts: that variance
    scaled by what the components say the change of attempts does."""
    least = max(settings.min_units, MIN_UNITS)
    if problems < least:
        raise ValueError(f"{problems} shared problem{'s' * (problems != 1)}: nothing is established from fewer than "
                         f"{least}")
    if c.within is not None and c.within_df >= 2 and c.within <= 0:
        raise ValueError(f"no two attempts by one agent on one problem differ (over {c.within_df} df): the spread "
                         "of attempts is not measured")
    measured = c.differences is not None and c.differences > 0
    if measured and attempts == c.attempts:  # the campaign's own design
        return math.sqrt(float(c.differences or 0) / problems), problems - 1, PROBLEMS
    if c.within is None or c.within_df < 2:
        raise ValueError("too few repeated attempts (by one agent on one problem): the spread of attempts is unknown")
    if c.interaction is None:
        raise ValueError("no two agents share two problems: how their gap varies by problem is unknown")
    planned = 2 * c.interaction + 2 * c.within / attempts
    if measured and c.attempts >= 1:
        planned *= float(c.differences or 0) / (2 * c.interaction + 2 * c.within / c.attempts)
    return math.sqrt(planned / problems), problems - 1, PROBLEMS


def small_sample(c: Components, problems: int, attempts: int) -> float:
    """The factor on a design's standard error where the normal theory it rests on fails and
    nothing measured says how: below 6 problems (2-4 df) the power figure was 4-6 points
    optimistic with any attempts; with one attempt each a problem's difference is of two single
    attempts (a pass/fail composite gives a few distinct values) and, skewed away from the better
    agent at a wide gap, the t test on 6 of them finds a difference less often than the t form
    says (4-9 points, bench/stats_coverage.py). Where an established pair measured that skew,
    shape_factor takes it (with both, 6x1 was 2-6 points conservative); where none did, one attempt
    each keeps this factor. median_unbiased over the spread's degrees of freedom; 1 otherwise."""
    unseen = attempts == 1 and (c.skew is None or c.kurtosis is None)
    return median_unbiased(c.spread_df) if unseen or problems < WIDE else 1.0


def shape_factor(c: Components, problems: int, df: int, pair_level: float) -> float:
    """How much the test's statistic D - t_crit x se-hat spreads, in units of the standard error,
    relative to normal differences (whose spread Student's t gives). For one problem's
    difference of skew g and kurtosis k the delta method gives a variance
        v = 1 + t_crit^2 V / 4 - t_crit g / sqrt(P),   V = k / P - (P - 3) / (P (P - 1))
    (V: the variance of s^2 / sigma^2, Cramer 1946 27.4; the last term: the estimated standard
    error rising with the estimated difference), normal v0 = 1 + t_crit^2 / (2 (P - 1)); the
    factor is sqrt(v / v0), at least 1/2. The shape is the campaign's at every design: at other
    attempts a problem's difference is more normal the more attempts it averages, but the part
    the skew comes from where attempts are many (a gap carried by a few problems) does not change
    with them, and one factor for every number of attempts keeps the detectable difference
    falling with the attempts (attempts_needed's bisection). Without an established pair: 1
    (the t form)."""
    if c.skew is None or c.kurtosis is None:
        return 1.0
    from scipy import stats

    p = problems
    crit = float(stats.t.ppf(1 - (1 - pair_level) / 2, df))
    var_s2 = max(0.0, c.kurtosis / p - (p - 3) / (p * (p - 1)))
    v = 1 + crit ** 2 * var_s2 / 4 - crit * c.skew / math.sqrt(p)
    v0 = 1 + crit ** 2 / (2 * (p - 1))
    return max(0.5, math.sqrt(max(v, 0.0) / v0))


def design_error(c: Components, difference: float, problems: int, attempts: int,
                 settings: Settings) -> tuple[float, float, int, str]:
    """(standard error at `difference`, of two level agents, df, scope) with every correction."""
    se0, df, kind = standard_error(c, problems, attempts, settings)
    se0 *= small_sample(c, problems, attempts)
    return se0 * math.sqrt(spread_factor(c, difference)), se0, df, kind


@functools.lru_cache(maxsize=1024)
def multiplier(df: int, level: float, power: float, shape: float = 1.0) -> float:
    """t_crit + t_power x `shape` (shape_factor: the test's statistic spreads `shape` times what t says)."""
    from scipy import stats  # here: importing scipy.stats costs every hpcbench command ~1-3 s

    return float(stats.t.ppf(1 - (1 - level) / 2, df) + stats.t.ppf(power, df) * shape)


def power_at(c: Components, difference: float, problems: int, attempts: int, settings: Settings,
             pairs: int = 1) -> float:
    """The chance that a design establishes a true `difference` as one of `pairs` pairs: the
    figure detectable() inverts (at its difference, exactly its power), t.cdf((D / se(D) - t_crit)
    / shape) with the same corrected standard error and shape_factor."""
    from scipy import stats

    se, _, df, _ = design_error(c, difference, problems, attempts, settings)
    level = 1 - (1 - settings.level) / max(1, pairs)
    shape = shape_factor(c, problems, df, level)
    return float(stats.t.cdf((difference / se - stats.t.ppf(1 - (1 - level) / 2, df)) / shape, df))


def detectable(c: Components, problems: int, attempts: int, settings: Settings, power: float = 0.8,
               pairs: int = 1) -> dict:
    """The minimum detectable difference of a design, with what it rests on; `pairs`: how
    many pairs the leaderboard tests (the level is shared among them)."""
    _, se0, df, kind = design_error(c, 0.0, problems, attempts, settings)
    level = 1 - (1 - settings.level) / max(1, pairs)
    shape = shape_factor(c, problems, df, level)
    m = multiplier(df, level, power, shape)
    lo, hi = 0.0, max(1.0, 4 * m * se0 * 10)
    for _ in range(60):  # the difference d with d = m x se0 x sqrt(spread_factor(d))
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid < m * se0 * math.sqrt(spread_factor(c, mid)) else (lo, mid)
    d = hi
    factor = spread_factor(c, d)
    return {"difference": d, "standard_error": se0 * math.sqrt(factor), "df": df, "multiplier": m, "scope": kind,
            "problems": problems, "attempts": attempts, "power": power, "level": settings.level, "pairs": pairs,
            "pair_level": level, "spread_factor": factor, "level_standard_error": se0, "shape_factor": shape}


def attempts_needed(c: Components, difference: float, problems: int, settings: Settings,
                    power: float = 0.8, pairs: int = 1) -> int | None:
    """The fewest attempts per problem (per agent) that detect `difference` with `problems`
    problems; None when no number of attempts up to MAX_ATTEMPTS does (the agents' gap
    varies from problem to problem more than attempts can average out: more problems)."""
    def enough(n: int) -> bool:
        return detectable(c, problems, n, settings, power, pairs)["difference"] <= difference

    if enough(1):  # (with one attempt each the spread of attempts is unknown: only n = 1 is planned)
        return 1
    if not enough(MAX_ATTEMPTS):
        return None
    lo, hi = 2, MAX_ATTEMPTS
    while lo < hi:  # the detectable difference falls with the attempts
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid + 1, hi)
    return lo


def plan(c: Components, difference: float, problems: int, settings: Settings, power: float = 0.8,
         pairs: int = 1) -> dict:
    """What detecting `difference` needs: `problems` the problems needed at the campaign's
    attempts, `attempts` the attempts per problem needed on `problems` problems (None: no number
    up to the limits does), `note` why what is left None could not be planned (e.g. one attempt
    each: more problems can be planned, more attempts not). The report's power summary (on the
    campaign's problems) and `hpcbench plan-power` (on --problems) both draw theirs here."""
    row: dict = {"difference": difference, "attempts": None, "problems": None, "note": ""}
    try:
        row["problems"] = problems_needed(c, difference, max(1, c.attempts), settings, power, pairs=pairs)
        row["attempts"] = attempts_needed(c, difference, problems, settings, power, pairs)
    except ValueError as e:
        row["note"] = str(e)
    return row


def needed(c: Components, differences: Sequence[float], settings: Settings, power: float = 0.8,
           pairs: int = 1) -> list[dict]:
    """plan() for each wanted difference on the campaign's own problems."""
    return [plan(c, d, c.problems, settings, power, pairs) for d in differences]


def problems_needed(c: Components, difference: float, attempts: int, settings: Settings,
                    power: float = 0.8, most: int = 100_000, pairs: int = 1) -> int | None:
    """The fewest problems that detect `difference` with `attempts` attempts on each."""
    lo = max(settings.min_units, MIN_UNITS)
    if detectable(c, most, attempts, settings, power, pairs)["difference"] > difference:
        return None
    hi = most
    while lo < hi:  # the detectable difference falls with the problems
        mid = (lo + hi) // 2
        if detectable(c, mid, attempts, settings, power, pairs)["difference"] <= difference:
            hi = mid
        else:
            lo = mid + 1
    return lo
