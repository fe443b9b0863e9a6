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

# Units an interval needs at the level it draws: 6 problems to speak for problems like these
# (measured from 6 up, bench/stats_coverage.py: 93-96%; the bundled suite has 6), else 6
# attempts on each problem to speak for these problems only. A percentile interval never
# reaches beyond the range of the drawn units, and the truth lies outside the range of n
# draws with probability 2^(1-n): 6.3% at 5, 3.1% at 6. Even so, 6-10 attempts per problem
# cover only 82-92%: the report marks those intervals.
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


METHOD = ("cluster bootstrap (scipy.stats.bootstrap), seeded per item: with >= min_units problems, problems "
          "drawn with replacement (each keeping its attempts), estimate +- t(P-1) x bootstrap standard error x "
          "sqrt(P/(P-1)); with fewer, attempts drawn with replacement within each of these problems, percentile "
          "interval; clipped to the measure's range")


@dataclass
class Interval:
    estimate: float | None
    low: float | None
    high: float | None
    scope: str  # PROBLEMS, THESE or TOO_FEW
    problems: int
    attempts: int
    standard_error: float | None = None  # the bootstrap's, where problems are drawn
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
    least = min(counts, default=0)
    return TOO_FEW, (f"too few to say: {len(counts)} problem{'s' * (len(counts) != 1)}, {least} attempt"
                     f"{'s' * (least != 1)} on the least tried (an interval needs {settings.min_units} problems, "
                     f"or {settings.min_units} attempts on each problem)")


def samples_of(cells: Cells, problems: Sequence[str]) -> list[np.ndarray]:
    """Each problem's attempt values, in the order of `problems`."""
    return [np.asarray(cells[p], dtype=float) for p in problems]


def mean_bounds(samples: Sequence[np.ndarray], kind: str, settings: Settings,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(low, high, standard error or None) of the mean over problems of each problem's mean;
    `samples`: one array per problem, its attempts on the last axis (leading axes: a batch
    of campaigns of one shape)."""
    if kind == PROBLEMS:
        means = np.stack([s.mean(axis=-1) for s in samples], axis=-1)
        return resample.problems_drawn(means, settings.level, settings.resamples, rng)
    return *resample.attempts_drawn(samples, settings.level, settings.resamples, rng), None


def paired_bounds(a: Sequence[np.ndarray], b: Sequence[np.ndarray], kind: str, settings: Settings,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The same for the mean over shared problems of a's mean - b's mean: the same problems
    drawn for both (their per-problem differences), or each agent's attempts drawn within
    fixed problems."""
    if kind == PROBLEMS:
        diffs = np.stack([x.mean(axis=-1) - y.mean(axis=-1) for x, y in zip(a, b)], axis=-1)
        return resample.problems_drawn(diffs, settings.level, settings.resamples, rng)
    return *resample.attempts_drawn(a, settings.level, settings.resamples, rng, minus=b), None


Bounds = Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray, np.ndarray | None]]


def _interval(est: float, bounds: Bounds, kind: str, why: str, counts: Sequence[int], settings: Settings, key: str,
              limits: tuple[float, float]) -> Interval:
    out = Interval(est, None, None, kind, len(counts), int(sum(counts)), note=why)
    if kind != TOO_FEW:
        lo, hi, se = bounds(resample.stream(settings.seed, key))
        out.standard_error = None if se is None else float(se)
        # never beyond what the measure can be (the truth is inside: no coverage is lost), and the
        # estimate inside (round-off of a mean of equal values)
        out.low = min(max(float(lo), limits[0]), est)
        out.high = max(min(float(hi), limits[1]), est)
    return out


def mean_interval(cells: Cells, settings: Settings, key: str,
                  limits: tuple[float, float] = (-np.inf, np.inf)) -> Interval:
    """The mean over problems of the mean over attempts, with its interval (within `limits`)."""
    problems = sorted(p for p, v in cells.items() if len(v))
    if not problems:
        return Interval(None, None, None, TOO_FEW, 0, 0, note="no scored attempt")
    samples = samples_of(cells, problems)
    counts = [len(x) for x in samples]
    est = float(np.mean([x.mean() for x in samples]))
    kind, why = scope(counts, settings)
    return _interval(est, lambda rng: mean_bounds(samples, kind, settings, rng), kind, why, counts, settings, key,
                     limits)


def paired_interval(a: Cells, b: Cells, settings: Settings, key: str,
                    limits: tuple[float, float] = (-np.inf, np.inf)) -> Interval:
    """Mean over the problems both attempted of (a's mean - b's mean), with the paired
    interval: the same problems drawn for both; attempts drawn within each agent."""
    shared = sorted(p for p in set(a) & set(b) if len(a[p]) and len(b[p]))
    if not shared:
        return Interval(None, None, None, TOO_FEW, 0, 0, note="no problem attempted by both")
    sa, sb = samples_of(a, shared), samples_of(b, shared)
    est = float(np.mean([x.mean() - y.mean() for x, y in zip(sa, sb)]))
    kind, why = scope([len(x) for x in sa], settings)
    if kind == THESE:  # both sides' attempts are drawn: each needs enough
        kind, why = scope([len(y) for y in sb], settings)
    out = _interval(est, lambda rng: paired_bounds(sa, sb, kind, settings, rng), kind, why,
                    [len(x) + len(y) for x, y in zip(sa, sb)], settings, key, limits)
    out.problems = len(shared)
    return out


def established(iv: Interval) -> int:
    """+1 when the interval of a difference lies above 0, -1 below, 0 when the order is not known."""
    if iv.scope == TOO_FEW or iv.low is None or iv.high is None:
        return 0
    return 1 if iv.low > 0 else -1 if iv.high < 0 else 0
