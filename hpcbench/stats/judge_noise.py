"""How much of an interval comes from the judge. With K samples of the judge per attempt
(`score --judge-samples K`), an attempt's composite is scored from the mean of its
samples, so the judge adds s_j^2 / K to it, s_j^2 the spread of its K sample
composites. Carried up to the reported mean,

    judge part = (1/P^2) sum_p (1/n_p^2) sum_a s_j(p, a)^2 / K(p, a)

against the variance the interval itself rests on (the spread of problem means / P
when problems are drawn; sum_p s_p^2 / n_p / P^2 when attempts are). That variance
already holds the judge part (the attempts' composites carry it), so the share is
the judge's part of it and the rest is attempts (and problems)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from hpcbench.stats.intervals import PROBLEMS, THESE

Samples = Mapping[str, Sequence[Sequence[float]]]  # problem -> per attempt, its judge-sample composites


def judge_variance(samples: Samples, problems: Sequence[str]) -> float | None:
    """The judge's variance in the mean over `problems`; None when no attempt has two samples."""
    total, seen = 0.0, False
    for p in problems:
        atts = samples.get(p, [])
        part = 0.0
        for s in atts:
            if len(s) >= 2:
                part += float(np.var(s, ddof=1)) / len(s)
                seen = True
        total += part / max(1, len(atts)) ** 2
    return total / len(problems) ** 2 if seen and problems else None


def interval_variance(cells: Mapping[str, Sequence[float]], problems: Sequence[str], kind: str) -> float | None:
    """The variance of the mean over `problems` that the interval of scope `kind` rests on."""
    if kind == PROBLEMS:
        means = [float(np.mean(cells[p])) for p in problems]
        return float(np.var(means, ddof=1)) / len(problems)
    if kind == THESE:
        return sum(float(np.var(cells[p], ddof=1)) / len(cells[p]) for p in problems) / len(problems) ** 2
    return None


def share(judge: float | None, total: float | None) -> float | None:
    """The judge's share of the interval's variance, in [0, 1]."""
    if judge is None or total is None:
        return None
    if total <= 0:
        return 0.0 if judge <= 0 else 1.0
    return min(1.0, judge / total)


def paired_variances(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]], sa: Samples, sb: Samples,
                     shared: Sequence[str], kind: str) -> tuple[float | None, float | None]:
    """(judge part, interval variance) of a paired difference over `shared`."""
    ja, jb = judge_variance(sa, shared), judge_variance(sb, shared)
    judge = None if ja is None and jb is None else (ja or 0.0) + (jb or 0.0)
    if kind == PROBLEMS:
        d = [float(np.mean(a[p]) - np.mean(b[p])) for p in shared]
        return judge, float(np.var(d, ddof=1)) / len(shared)
    if kind == THESE:
        va, vb = interval_variance(a, shared, THESE), interval_variance(b, shared, THESE)
        return judge, (va or 0.0) + (vb or 0.0)
    return judge, None
