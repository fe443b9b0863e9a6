"""Which problems every agent attempted, what each agent is missing, and whether what is
missing falls on hard problems. A leaderboard's means over different problem sets can
order two agents against their paired difference (an agent that skipped the hard
problems looks better), so every agent is measured on the common problems only and the
rest are named."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

# An agent's missing attempts "fall on hard problems" when their mean difficulty rank
# (0: the hardest problem, 1: the easiest, by the other agents' mean composite) is below
# this and at least MIN_MISSING are missing: missing at random gives 0.5 on average.
HARD_RANK = 1 / 3
MIN_MISSING = 2


class _OnProblem(Protocol):
    @property
    def problem(self) -> str: ...


T = TypeVar("T", bound=_OnProblem)


def common_problems(problems: Mapping[str, Iterable[str]]) -> list[str]:
    """The problems every agent attempted (agent -> its problems)."""
    sets = [set(v) for v in problems.values()]
    return sorted(set.intersection(*sets)) if sets else []


def restrict(attempts: Iterable[T], problems: Sequence[str]) -> list[T]:
    keep = set(problems)
    return [a for a in attempts if a.problem in keep]


def _ranks(difficulty: Mapping[str, float]) -> dict[str, float]:
    """problem -> its rank from 0 (hardest: lowest mean) to 1 (easiest)."""
    order = sorted(difficulty, key=lambda p: (difficulty[p], p))
    if len(order) == 1:
        return {order[0]: 0.5}
    return {p: i / (len(order) - 1) for i, p in enumerate(order)}


def missing_attempts(cells: Mapping[str, Mapping[str, Sequence[float]]], common: Sequence[str]) -> dict:
    """`cells`: agent -> problem -> composites of its scored attempts. Returns the problems
    measured (`common`) and left out, and per agent the problems it did not attempt, its
    attempts short of the most any agent made on a problem, and whether those fall on hard
    problems (`hard`, with `warnings` saying so)."""
    problems = sorted({p for per in cells.values() for p in per})
    most = {p: max(len(per.get(p, ())) for per in cells.values()) for p in problems}
    out: dict = {"common": list(common), "left_out": [p for p in problems if p not in set(common)],
                 "agents": {}, "warnings": []}
    for agent, per in sorted(cells.items()):
        others = {p: [sum(v) / len(v) for a, o in cells.items() if a != agent for v in [o.get(p, ())] if v]
                  for p in problems}
        difficulty = {p: sum(m) / len(m) for p, m in others.items() if m}
        short = {p: most[p] - len(per.get(p, ())) for p in problems if most[p] > len(per.get(p, ()))}
        entry: dict = {"not_attempted": [p for p in problems if not per.get(p)], "short": short,
                 "missing": sum(short.values()), "hard_rank": None, "hard": False}
        ranks = _ranks(difficulty) if difficulty else {}
        weighted = [(n, ranks[p]) for p, n in short.items() if p in ranks]
        if weighted:
            total = sum(n for n, _ in weighted)
            entry["hard_rank"] = sum(n * r for n, r in weighted) / total
            entry["hard"] = total >= MIN_MISSING and entry["hard_rank"] < HARD_RANK
        if entry["hard"] and common:  # with nothing common no mean is compared: nothing to flatter
            out["warnings"].append(
                f"{agent}: {entry['missing']} attempt{'s' * (entry['missing'] != 1)} missing, mostly on hard problems "
                f"(mean difficulty rank {entry['hard_rank']:.2f}, 0 = hardest): not missing at random; its means over "
                "every problem it attempted would flatter it")
        if short:
            out["agents"][agent] = entry
    return out
