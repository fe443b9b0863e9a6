"""95% intervals of an agent's mean and of the paired difference of two agents, from
the cluster bootstrap of resample.py, and the rule for when there are too few
problems or attempts for an interval to mean anything.

An agent's mean is the mean over its problems of its mean over each problem's
attempts: every problem counts once, however many attempts it got."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from hpcbench.stats import resample

# Units an interval needs at the level it draws: problems, to speak for problems like
# these; else attempts on each problem, to speak for these problems only. A percentile
# interval never reaches beyond the range of the drawn units, and the truth lies outside
# the range of n draws with probability 2^(1-n): 6.3% at 5, 3.1% at 6. Measured
# (bench/stats_coverage.py), even 6 attempts per problem cover only 80-90%: the report
# marks those intervals as such.
MIN_UNITS = 6
PROBLEMS, THESE, TOO_FEW = "problems", "these problems", "too few"

Cells = Mapping[str, Sequence[float]]  # problem -> the values of its attempts


@dataclass(frozen=True)
class Settings:
    """What a scoring records so that every interval is drawn again identically."""

    seed: int = 0
    resamples: int = 10_000
    level: float = 0.95
    min_units: int = MIN_UNITS

    def describe(self) -> dict:
        return {**asdict(self), "method": METHOD}


METHOD = ("cluster bootstrap, seeded per item: with >= min_units problems, problems drawn with replacement "
          "(each keeping its attempts), expanded percentile interval (Hesterberg 2014); with fewer, attempts "
          "drawn with replacement within each of these problems, percentile interval")


@dataclass
class Interval:
    estimate: float | None
    low: float | None
    high: float | None
    scope: str  # PROBLEMS, THESE or TOO_FEW
    problems: int
    attempts: int
    lower_level: float | None = None  # the quantile level taken for `low` (1 - it for `high`)
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def scope(counts: Sequence[int], settings: Settings) -> tuple[str, str]:
    """Which interval `counts` (attempts per problem) allow, and why not when none."""
    if len(counts) >= settings.min_units:
        return PROBLEMS, ""
    if counts and min(counts) >= settings.min_units:
        return THESE, (f"{len(counts)} problem{'s' * (len(counts) != 1)}: about these problems only (other problems "
                       f"need {settings.min_units}); over {min(counts)} attempts a percentile interval holds the "
                       "truth less often than it says")
    return TOO_FEW, (f"too few to say: {len(counts)} problem{'s' * (len(counts) != 1)}, at most "
                     f"{max(counts, default=0)} attempts on one (an interval needs {settings.min_units} problems, "
                     f"or {settings.min_units} attempts on each problem)")


def padded(cells: Cells, problems: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(P, n_max) values padded with 0 beyond each problem's count, and the counts."""
    counts = np.array([len(cells[p]) for p in problems], dtype=np.int64)
    out = np.zeros((len(problems), int(counts.max()) if len(problems) else 0))
    for i, p in enumerate(problems):
        out[i, :counts[i]] = cells[p]
    return out, counts


def problem_means(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(batch, P, n_max) padded values -> (batch, P) means over each problem's attempts."""
    valid = np.arange(values.shape[-1]) < counts[..., None]
    return np.where(valid, values, 0.0).sum(axis=-1) / counts


def mean_draws(values: np.ndarray, counts: np.ndarray, kind: str, settings: Settings,
               rng: np.random.Generator) -> np.ndarray:
    """Resampled means (batch, resamples) of a batch of campaigns sharing one shape:
    `values` (batch, P, n_max), `counts` (P,) attempts per problem."""
    if kind == PROBLEMS:
        return resample.draw_problems(problem_means(values, counts), settings.resamples, rng)
    cnt = np.broadcast_to(counts, values.shape[:2])
    return resample.draw_attempts(values, cnt, settings.resamples, rng)


def paired_draws(va: np.ndarray, ca: np.ndarray, vb: np.ndarray, cb: np.ndarray, kind: str, settings: Settings,
                 rng: np.random.Generator) -> np.ndarray:
    """Resampled differences of means (batch, resamples): the same problems drawn for both
    agents (their per-problem differences), or each agent's attempts within fixed problems."""
    if kind == PROBLEMS:
        d = problem_means(va, ca) - problem_means(vb, cb)
        return resample.draw_problems(d, settings.resamples, rng)
    return mean_draws(va, ca, THESE, settings, rng) - mean_draws(vb, cb, THESE, settings, rng)


def bounds(draws: np.ndarray, kind: str, problems: int, settings: Settings) -> tuple[float, np.ndarray, np.ndarray]:
    """(lower quantile level, low, high) of resampled statistics (batch, resamples)."""
    lower = resample.tail(settings.level, problems if kind == PROBLEMS else None)
    lo, hi = resample.percentile_interval(draws, lower)
    return lower, lo, hi


def _interval(est: float, draw: Callable[[np.random.Generator], np.ndarray] | None, kind: str, why: str,
              counts: Sequence[int], settings: Settings, key: str) -> Interval:
    out = Interval(est, None, None, kind, len(counts), int(sum(counts)), note=why)
    if draw is not None and kind != TOO_FEW:
        lower, lo, hi = bounds(draw(resample.stream(settings.seed, key)), kind, len(counts), settings)
        out.lower_level = lower
        # the estimate lies inside: round-off of a mean of equal values must not put it out
        out.low, out.high = min(float(lo[0]), est), max(float(hi[0]), est)
    return out


def mean_interval(cells: Cells, settings: Settings, key: str) -> Interval:
    """The mean over problems of the mean over attempts, with its interval."""
    problems = sorted(p for p, v in cells.items() if len(v))
    if not problems:
        return Interval(None, None, None, TOO_FEW, 0, 0, note="no scored attempt")
    vals, cnt = padded(cells, problems)
    est = float(problem_means(vals[None], cnt)[0].mean())
    kind, why = scope(cnt.tolist(), settings)
    return _interval(est, lambda rng: mean_draws(vals[None], cnt, kind, settings, rng), kind, why, cnt.tolist(),
                     settings, key)


def paired_interval(a: Cells, b: Cells, settings: Settings, key: str) -> Interval:
    """Mean over the problems both attempted of (a's mean - b's mean), with the paired
    interval: the same problems drawn for both; attempts drawn within each agent."""
    shared = sorted(p for p in set(a) & set(b) if len(a[p]) and len(b[p]))
    if not shared:
        return Interval(None, None, None, TOO_FEW, 0, 0, note="no problem attempted by both")
    va, ca = padded(a, shared)
    vb, cb = padded(b, shared)
    est = float((problem_means(va[None], ca) - problem_means(vb[None], cb))[0].mean())
    kind, why = scope(ca.tolist(), settings)
    if kind == THESE:  # both sides' attempts are drawn: each needs enough
        kind, why = scope(cb.tolist(), settings)
    out = _interval(est, lambda rng: paired_draws(va[None], ca, vb[None], cb, kind, settings, rng), kind, why,
                    (ca + cb).tolist(), settings, key)
    out.problems = len(shared)
    return out


def established(iv: Interval) -> int:
    """+1 when the interval of a difference lies above 0, -1 below, 0 when the order is not known."""
    if iv.scope == TOO_FEW or iv.low is None or iv.high is None:
        return 0
    return 1 if iv.low > 0 else -1 if iv.high < 0 else 0
