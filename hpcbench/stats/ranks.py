"""Ranks as ranges: an agent's best rank is 1 + the agents established above it, its
worst is the number of agents - those established below it, where "established" means
the paired interval of the difference excludes 0. Agents whose order no interval
establishes share a range ("1-2"); the leaderboard's order never says more."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def rank_ranges(agents: Sequence[str], order: Mapping[tuple[str, str], int]) -> dict[str, tuple[int, int]]:
    """`order[(a, b)]`: +1 when a is established above b, -1 below, 0 not established
    (a missing pair counts 0). Returns agent -> (best, worst)."""
    out = {}
    for a in agents:
        above = sum(1 for b in agents if b != a and _sign(order, b, a) > 0)
        below = sum(1 for b in agents if b != a and _sign(order, a, b) > 0)
        out[a] = (1 + above, len(agents) - below)
    return out


def _sign(order: Mapping[tuple[str, str], int], a: str, b: str) -> int:
    if (a, b) in order:
        return order[(a, b)]
    return -order.get((b, a), 0)


def label(best: int, worst: int) -> str:
    return str(best) if best == worst else f"{best}-{worst}"
