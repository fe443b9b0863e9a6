"""The cluster bootstrap of a campaign's scores, drawn by scipy.stats.bootstrap on seeded
numpy generators; what is written here is only how the clusters are handed to it and how
its draws become an interval.

A campaign is problems (clusters) holding attempts. Which stage draws with replacement
depends on what the interval is about:

- `problems`: an agent's mean on problems like these. Problems are drawn with
  replacement and each drawn problem keeps its own attempts: a one-sample bootstrap of
  the problem means. Drawing its attempts again as well would count their spread
  twice (Davison & Hinkley 1997, Bootstrap Methods and their Application, section 3.8;
  Field & Welsh 2007, JRSS B 69(3): the cluster bootstrap is the consistent one);
  measured (bench/stats_coverage.py), two-stage draws cover up to 98% when attempts
  vary much. The interval is the estimate +- Student's t(P-1) times the bootstrap's
  standard error widened by sqrt(P/(P-1)), the narrowness of a bootstrap over P units
  (Hesterberg 2014, arXiv:1411.5279); for a mean that is the t interval on the problem
  means. At 6 problems the percentile interval covered 83-87%, expanded the same way 89-95%.
- `these problems`: the mean on exactly these problems, when there are too few to say
  anything about others: problems fixed, the attempts of each drawn with replacement
  (scipy resamples each sample of a multi-sample statistic on its own); percentile
  interval.

Arrays may carry leading batch axes (one campaign, or a thousand synthetic ones in
tests/test_stats_coverage.py); the resampled axis is the last."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np


def stream(seed: int, key: str) -> np.random.Generator:
    """An independent generator per reported item: re-deriving one interval (explain)
    draws exactly what the full analysis drew for it, whatever else the campaign holds."""
    words = np.frombuffer(hashlib.sha256(key.encode()).digest()[:16], dtype="<u4")
    return np.random.default_rng(np.random.SeedSequence([int(seed), *map(int, words)]))


def t_half_width(standard_error: np.ndarray, units: int, level: float) -> np.ndarray:
    """Half the width of a `level` interval from a bootstrap over `units` clusters."""
    from scipy import stats  # here: importing scipy.stats costs every hpcbench command ~1-3 s

    return stats.t.ppf(0.5 + level / 2, units - 1) * np.sqrt(units / (units - 1)) * standard_error


def _mean_of_means(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean([s.mean(axis=axis) for s in samples], axis=0)


def _bootstrap(data: Sequence[np.ndarray], statistic, level: float, resamples: int, rng: np.random.Generator):
    from scipy import stats

    return stats.bootstrap(tuple(data), statistic, n_resamples=resamples, vectorized=True, axis=-1,
                           method="percentile", confidence_level=level, rng=rng)


def problems_drawn(means: np.ndarray, level: float, resamples: int,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Problems drawn with replacement, each keeping its attempts: `means` (..., P).
    Returns (low, high, the bootstrap's standard error)."""
    se = np.asarray(_bootstrap([means], np.mean, level, resamples, rng).standard_error)
    est, half = means.mean(axis=-1), t_half_width(se, means.shape[-1], level)
    return est - half, est + half, se


def attempts_drawn(samples: Sequence[np.ndarray], level: float, resamples: int, rng: np.random.Generator,
                   minus: Sequence[np.ndarray] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Problems fixed, each one's attempts (..., n_p) drawn with replacement; the statistic
    is the mean over problems of their means, less that of `minus` (a paired difference).
    Returns the percentile interval (low, high)."""
    k = len(samples)

    def statistic(*s: np.ndarray, axis: int = -1) -> np.ndarray:
        own = _mean_of_means(*s[:k], axis=axis)
        return own - _mean_of_means(*s[k:], axis=axis) if len(s) > k else own

    res = _bootstrap([*samples, *minus], statistic, level, resamples, rng)
    return np.asarray(res.confidence_interval.low), np.asarray(res.confidence_interval.high)
