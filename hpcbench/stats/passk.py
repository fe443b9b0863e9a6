"""pass@k, the unbiased estimator of Chen et al. (2021, "Evaluating Large Language
Models Trained on Code", arXiv:2107.03374, section 2.1), written by hand: with n
attempts of which c passed, the chance that k attempts drawn from the n without
replacement hold at least one pass,

    pass@k = 1 - C(n - c, k) / C(n, k),

computed as the product 1 - prod_{i = n-c+1}^{n} (1 - k / i), which needs no large
binomial coefficients. An agent's pass@k is the mean over the problems with at least k
attempts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


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


def agent_table(cells: Mapping[str, Sequence[bool]]) -> list[dict]:
    """Per k (1 .. the most attempts on any problem): the mean of pass@k over the
    problems with at least k attempts, and how many problems that is."""
    most = max((len(v) for v in cells.values()), default=0)
    out = []
    for k in range(1, most + 1):
        vals = [pass_at_k(len(v), sum(bool(x) for x in v), k) for v in cells.values() if len(v) >= k]
        out.append({"k": k, "value": sum(vals) / len(vals), "problems": len(vals)})
    return out
