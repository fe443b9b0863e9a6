"""pass@k, the unbiased estimator of Chen et al. (2021, "Evaluating Large Language
Models Trained on Code", arXiv:2107.03374, section 2.1), written by hand: with n
attempts of which c passed, the chance that k attempts drawn from the n without
replacement hold at least one pass,

    pass@k = 1 - C(n - c, k) / C(n, k),

computed as the product 1 - prod_{i = n-c+1}^{n} (1 - k / i), which needs no large
binomial coefficients. An agent's pass@k is the mean over the leaderboard's common
problems (every agent's the same) for k up to the fewest attempts any agent made on one
of them: a mean over a problem set that shrank with k would be neither monotone in k nor
comparable across agents. Its interval is over problems, the bounded one of intervals.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from hpcbench.stats.intervals import MIN_UNITS, Settings, bounded_bounds


def pass_at_k(n: int, c: int, k: int) -> float:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:  # every k-subset holds a pass
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def table(passed: Sequence[bool]) -> list[float]:
    """pass@1 .. pass@n of one problem's attempts."""
    n, c = len(passed), sum(bool(p) for p in passed)
    return [pass_at_k(n, c, k) for k in range(1, n + 1)]


def agent_table(cells: Mapping[str, Sequence[bool]], most_k: int | None = None,
                settings: Settings | None = None) -> list[dict]:
    """Per k (1 .. `most_k`, default the fewest attempts on any problem of `cells`): the mean
    of pass@k over every problem of `cells`, with its interval over problems (from 3 up)."""
    settings = settings or Settings()
    fewest = min((len(v) for v in cells.values()), default=0)
    top = fewest if most_k is None else min(most_k, fewest)
    out = []
    for k in range(1, top + 1):
        vals = np.array([pass_at_k(len(v), sum(bool(x) for x in v), k) for v in cells.values()])
        row: dict = {"k": k, "value": float(vals.mean()), "problems": len(vals), "low": None, "high": None}
        if len(vals) >= max(settings.min_units, MIN_UNITS):
            lo, hi = bounded_bounds(vals, sum(len(v) for v in cells.values()), settings.level)
            row.update(low=min(float(lo), row["value"]), high=max(float(hi), row["value"]))
        out.append(row)
    return out
