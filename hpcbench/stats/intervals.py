"""95% intervals of an agent's mean and of the paired difference of two agents, over
problems (the units a leaderboard generalises over), and the rule for when there are too
few problems for an interval to mean anything.

An agent's mean is the mean over its problems of its mean over each problem's attempts:
every problem counts once, however many attempts it got. One estimand at every size: the
mean on problems like these, from 3 problems up (marked wide below 6); below 3 there is no
interval and nothing is established.

- A difference (paired, unbounded in effect): Student's t on the problems' differences,
  t(P-1) x sd / sqrt(P) (exact for normal problem effects; measured bench/stats_coverage.py).
- A bounded measure (a pass rate, a category, the composite, scaled to [0, 1]): a
  Clopper-Pearson interval on an effective sample size (Korn & Graubard 1998, "Confidence
  intervals for proportions with small expected number of positive counts estimated from
  survey data", Survey Methodology 24(2)): n_eff = p(1-p) / var(mean over problems), times
  (z / t(P-1))^2 for the degrees of freedom, at most 3 per problem and 1 per attempt, and P
  where nothing varies. It cannot collapse onto 0 or 1: an agent that failed every attempt
  on 6 problems gets [0, 0.65], not [0, 0]. The cap: a spread estimated from few problems
  misses a rare kind of problem (a quarter near 1, the rest near 0) as often as not, and
  the uncapped interval then covered 84-94% (bench/stats_coverage.py, model `rare`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

# Problems an interval needs; below WIDE the report marks it wide. The design's minimum is
# 3 (a t on 2 degrees of freedom); nothing is established from fewer.
MIN_UNITS = 3
WIDE = 6
UNITS_PER_PROBLEM = 3  # the cap on the effective sample size of a bounded mean, per problem
# PROBLEMS: problems like these. THESE: the percentile over attempts of documents stored by
# hpcbench before one estimand (still read and shown, marked ‡); nothing draws it now.
PROBLEMS, THESE, TOO_FEW = "problems", "these problems", "too few"

Cells = Mapping[str, Sequence[float]]  # problem -> the values of its attempts


@dataclass(frozen=True)
class Settings:
    """What a scoring records so that every interval is drawn again identically (seed and
    resamples: kept for documents and options that carry them; the intervals are closed-form)."""

    seed: int = 0
    resamples: int = 10_000
    level: float = 0.95
    min_units: int = MIN_UNITS

    def describe(self) -> dict:
        return {**asdict(self), "method": METHOD}


METHOD = ("over problems (each problem's mean over its attempts counts once), from min_units problems up (marked "
          "wide below 6): a difference, Student t(P-1) on the problems' differences; a bounded mean (composite, "
          "pass rate, categories), Clopper-Pearson on a Korn-Graubard effective sample size (at most 3 per problem, "
          "1 per attempt); paired tests Holm-adjusted over all pairs shown for established orders and rank ranges")


@dataclass
class Interval:
    estimate: float | None
    low: float | None
    high: float | None
    scope: str  # PROBLEMS or TOO_FEW (THESE in documents stored before)
    problems: int
    attempts: int
    standard_error: float | None = None  # sd of the problem means (or differences) / sqrt(P)
    note: str = ""
    p_value: float | None = None  # a difference's two-sided t test of 0, unadjusted

    def as_dict(self) -> dict:
        return asdict(self)


def scope(counts: Sequence[int], settings: Settings) -> tuple[str, str]:
    """Which interval `counts` (attempts per problem) allow, and the note: why not, or wide."""
    p = len(counts)
    if p >= max(settings.min_units, 2):
        if p < WIDE:
            return PROBLEMS, f"wide: {p} problems (an interval over problems is wide below {WIDE})"
        return PROBLEMS, ""
    return TOO_FEW, (f"too few to say: {p} problem{'s' * (p != 1)} (an interval over problems needs "
                     f"{max(settings.min_units, 2)})")


def samples_of(cells: Cells, problems: Sequence[str]) -> list[np.ndarray]:
    """Each problem's attempt values, in the order of `problems`."""
    return [np.asarray(cells[p], dtype=float) for p in problems]


def t_bounds(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, standard error) of the mean of `values` (..., P) by Student's t."""
    from scipy import stats  # here: importing scipy.stats costs every hpcbench command ~1-3 s

    p = values.shape[-1]
    se = values.std(axis=-1, ddof=1) / math.sqrt(p)
    half = stats.t.ppf(0.5 + level / 2, p - 1) * se
    est = values.mean(axis=-1)
    return est - half, est + half, se


def effective_size(means: np.ndarray, attempts: np.ndarray | int, level: float) -> np.ndarray:
    """The Korn-Graubard effective sample size of the mean of `means` (..., P) in [0, 1]."""
    from scipy import stats

    p = means.shape[-1]
    est = means.mean(axis=-1)
    var = means.var(axis=-1, ddof=1) / p
    spread = (var > 0) & (est > 0) & (est < 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = np.where(spread, est * (1 - est) / np.where(spread, var, 1.0), float(p))
    cap = np.minimum(UNITS_PER_PROBLEM * p, np.asarray(attempts, dtype=float))
    df_factor = (stats.norm.ppf(0.5 + level / 2) / stats.t.ppf(0.5 + level / 2, p - 1)) ** 2
    return np.minimum(raw, cap) * df_factor


def bounded_bounds(means: np.ndarray, attempts: np.ndarray | int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of the mean of `means` (..., P), each in [0, 1]: Clopper-Pearson on the
    effective sample size (a fractional count of successes, by the beta quantiles)."""
    from scipy import stats

    means = np.clip(means, 0.0, 1.0)
    n = effective_size(means, attempts, level)
    x = means.mean(axis=-1) * n
    a = (1 - level) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(x > 0, stats.beta.ppf(a, np.maximum(x, 1e-12), n - x + 1), 0.0)
        hi = np.where(x < n, stats.beta.ppf(1 - a, x + 1, np.maximum(n - x, 1e-12)), 1.0)
    return np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)


def mean_bounds(samples: Sequence[np.ndarray], settings: Settings,
                limits: tuple[float, float] = (-np.inf, np.inf)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, standard error) of the mean over problems of each problem's mean;
    `samples`: one array per problem, its attempts on the last axis (leading axes: a batch
    of campaigns of one shape). Bounded `limits`: the bounded interval on the scaled means."""
    means = np.stack([s.mean(axis=-1) for s in samples], axis=-1)
    lo, hi, se = t_bounds(means, settings.level)
    if is_measure(limits):
        span = limits[1] - limits[0]
        attempts = sum(s.shape[-1] for s in samples)
        blo, bhi = bounded_bounds((means - limits[0]) / span, attempts, settings.level)
        lo, hi = limits[0] + span * blo, limits[0] + span * bhi
    return lo, hi, se


def paired_bounds(a: Sequence[np.ndarray], b: Sequence[np.ndarray],
                  settings: Settings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same for the mean over shared problems of a's mean - b's mean: Student's t on the
    problems' differences (the same problems for both agents)."""
    diffs = np.stack([x.mean(axis=-1) - y.mean(axis=-1) for x, y in zip(a, b)], axis=-1)
    return t_bounds(diffs, settings.level)


def p_value(estimate: float, standard_error: float, problems: int) -> float:
    """Two-sided p of a mean difference of 0 by Student's t(P-1)."""
    from scipy import stats

    if standard_error <= 0 or not math.isfinite(standard_error):
        return 1.0 if estimate == 0 else 0.0
    return float(2 * stats.t.sf(abs(estimate) / standard_error, problems - 1))


def _finish(out: Interval, lo: float, hi: float, se: float, limits: tuple[float, float]) -> Interval:
    est = out.estimate if out.estimate is not None else 0.0
    out.standard_error = float(se)
    # never beyond what the measure can be, and the estimate inside (round-off of a mean of equal values)
    out.low = min(max(float(lo), limits[0]), est)
    out.high = max(min(float(hi), limits[1]), est)
    return out


def is_measure(limits: tuple[float, float]) -> bool:
    """Limits of a bounded measure [0, top] (not of a difference, which gets Student's t)."""
    return limits[0] == 0 and bool(np.isfinite(limits[1]))


def mean_interval(cells: Cells, settings: Settings, key: str = "",
                  limits: tuple[float, float] = (-np.inf, np.inf)) -> Interval:
    """The mean over problems of the mean over attempts, with its interval (within `limits`;
    a measure's limits [0, top] give the bounded interval). `key` names the item (kept for callers)."""
    problems = sorted(p for p, v in cells.items() if len(v))
    if not problems:
        return Interval(None, None, None, TOO_FEW, 0, 0, note="no scored attempt")
    samples = samples_of(cells, problems)
    counts = [len(x) for x in samples]
    est = float(np.mean([x.mean() for x in samples]))
    kind, why = scope(counts, settings)
    out = Interval(est, None, None, kind, len(counts), int(sum(counts)), note=why)
    if kind == TOO_FEW:
        return out
    means = np.array([x.mean() for x in samples])
    lo, hi, se = t_bounds(means, settings.level)
    if is_measure(limits):
        span = limits[1] - limits[0]
        blo, bhi = bounded_bounds((means - limits[0]) / span, int(sum(counts)), settings.level)
        lo, hi = limits[0] + span * blo, limits[0] + span * bhi
    return _finish(out, float(lo), float(hi), float(se), limits)


def paired_interval(a: Cells, b: Cells, settings: Settings, key: str = "",
                    limits: tuple[float, float] = (-np.inf, np.inf)) -> Interval:
    """Mean over the problems both attempted of (a's mean - b's mean), with Student's t
    interval on the problems' differences and its two-sided p-value."""
    shared = sorted(p for p in set(a) & set(b) if len(a[p]) and len(b[p]))
    if not shared:
        return Interval(None, None, None, TOO_FEW, 0, 0, note="no problem attempted by both")
    sa, sb = samples_of(a, shared), samples_of(b, shared)
    d = np.array([x.mean() - y.mean() for x, y in zip(sa, sb)])
    est = float(d.mean())
    kind, why = scope([len(x) for x in sa], settings)
    out = Interval(est, None, None, kind, len(shared), int(sum(len(x) + len(y) for x, y in zip(sa, sb))), note=why)
    if kind == TOO_FEW:
        return out
    lo, hi, se = t_bounds(d, settings.level)
    out.p_value = p_value(est, float(se), len(shared))
    return _finish(out, float(lo), float(hi), float(se), limits)


def established(iv: Interval) -> int:
    """+1 when the interval of a difference lies above 0, -1 below, 0 when the order is not
    known: one planned comparison. The leaderboard's orders are Holm's (holm)."""
    if iv.scope != PROBLEMS or iv.low is None or iv.high is None:
        return 0
    return 1 if iv.low > 0 else -1 if iv.high < 0 else 0


def holm(p_values: Sequence[float | None], alpha: float) -> list[bool]:
    """Holm's step-down (1979, Scand. J. Statist. 6: 65-70): which of the hypotheses to reject
    with the family-wise error at most `alpha` over all of them (None: not tested, never
    rejected, not counted)."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(tested)
    out = [False] * len(p_values)
    for j, (p, i) in enumerate(tested):
        if p > alpha / (m - j):
            break
        out[i] = True
    return out


def holm_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values (the smallest family-wise level at which each is rejected)."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(tested)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for j, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (m - j) * p))
        out[i] = running
    return out
