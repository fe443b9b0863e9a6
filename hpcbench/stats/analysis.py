"""A scoring's uncertainty as one JSON-able document: per agent the mean composite, the
share of attempts that passed and each category's mean with their intervals, pass@k,
a rank range; per pair of agents the paired difference; the judge's share of each
composite interval; the smallest difference the design can detect. Every item names
the logical path `hpcbench explain` re-derives it from (`/stats/<scoring>/...`).

Every agent is measured on the same problems: those every listed agent attempted
(`problems.common`); the rest are named (`problems.left_out`), and so are each agent's
missing attempts, with a warning where they fall on hard problems. Orders and rank ranges
are Holm's over all pairs shown (family-wise error 5%); each pair's own interval and
unadjusted order stay for one planned comparison."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from hpcbench.stats import judge_noise, passk, power
from hpcbench.stats.intervals import (
    THESE,
    TOO_FEW,
    Interval,
    Settings,
    established,
    holm,
    holm_adjusted,
    mean_interval,
    paired_interval,
)
from hpcbench.stats.missing import common_problems, missing_attempts, restrict
from hpcbench.stats.ranks import label, rank_ranges

# Beyond this many agents the pairwise intervals (quadratic in agents) are not drawn,
# and ranks are not given as ranges.
MAX_PAIRED_AGENTS = 100
COMPOSITE, PASS = "composite", "pass"
DIFFERENCES = (2.0, 5.0, 10.0)  # composite points whose problems and attempts needed the power summary gives


def limits(measure: str) -> tuple[float, float]:
    """What a measure can be: composites 0-100, the share passed and categories 0-1."""
    return (0.0, 100.0) if measure == COMPOSITE else (0.0, 1.0)


@dataclass(frozen=True)
class Attempt:
    """One scored attempt as the statistics see it."""

    agent: str
    problem: str
    attempt: str
    composite: float
    passed: bool  # every gate and every hidden check passed (hpcbench.score.verdict)
    categories: Mapping[str, float | None] = field(default_factory=dict)
    judge_samples: Sequence[float] = ()  # the composite under each judge sample, when several


def by_agent(attempts: Iterable[Attempt]) -> dict[str, list[Attempt]]:
    """agent -> its attempts in one order for every reader: a draw picks attempts by position,
    so the stored scoring's rows and the scores they were written from must line up alike."""
    out: dict[str, list[Attempt]] = {}
    for a in sorted(attempts, key=lambda a: (a.agent, a.problem, a.attempt)):
        out.setdefault(a.agent, []).append(a)
    return out


def cells(mine: Iterable[Attempt], measure: str) -> dict[str, list[float]]:
    """problem -> the values of `measure` over one agent's attempts (those without one left out)."""
    out: dict[str, list[float]] = {}
    for a in mine:
        v = a.composite if measure == COMPOSITE else float(a.passed) if measure == PASS else a.categories.get(measure)
        if v is not None:
            out.setdefault(a.problem, []).append(float(v))
    return out


def samples(mine: Iterable[Attempt]) -> dict[str, list[list[float]]]:
    out: dict[str, list[list[float]]] = {}
    for a in mine:
        out.setdefault(a.problem, []).append(list(a.judge_samples))
    return out


def agent_interval(mine: Sequence[Attempt], agent: str, measure: str, settings: Settings) -> dict:
    c = cells(mine, measure)
    iv = mean_interval(c, settings, f"agent/{agent}/{measure}", limits(measure))
    out = iv.as_dict()
    if measure == COMPOSITE:
        probs = sorted(c)
        total = judge_noise.interval_variance(c, probs, spread_kind(iv, c))
        out["judge_share"] = judge_noise.share(judge_noise.judge_variance(samples(mine), probs), total)
    return out


def spread_kind(iv: Interval, c: Mapping[str, Sequence[float]]) -> str:
    """Which variance the judge's share is of: the interval's, or with too few problems for one,
    the spread of the mean over these problems' attempts (still the judge's share of what varies)."""
    if iv.scope != TOO_FEW:
        return iv.scope
    return THESE if c and all(len(v) >= 2 for v in c.values()) else TOO_FEW


def pair_interval(mine_a: Sequence[Attempt], mine_b: Sequence[Attempt], a: str, b: str,
                  settings: Settings) -> tuple[Interval, dict]:
    ca, cb = cells(mine_a, COMPOSITE), cells(mine_b, COMPOSITE)
    iv = paired_interval(ca, cb, settings, f"pair/{a}/{b}/{COMPOSITE}", (-100.0, 100.0))
    shared = sorted(set(ca) & set(cb))
    judge, total = judge_noise.paired_variances(ca, cb, samples(mine_a), samples(mine_b), shared, iv.scope)
    return iv, {**iv.as_dict(), "judge_share": judge_noise.share(judge, total)}


def pass_at_k_rows(mine: Sequence[Attempt], agent: str, sid: str) -> list[dict]:
    by_problem: dict[str, list[bool]] = {}
    for a in mine:
        by_problem.setdefault(a.problem, []).append(a.passed)
    return [{"agent": agent, "problem": p, "n": len(v), "c": sum(v), "values": passk.table(v),
             "source": f"/stats/{sid}/pass_at_k/{agent}/{p}"} for p, v in sorted(by_problem.items())]


def pair_count(agents: int) -> int:
    """The pairs the leaderboard's orders are tested over (Holm's family)."""
    return agents * (agents - 1) // 2 if 2 <= agents <= MAX_PAIRED_AGENTS else 1


def power_summary(groups: Mapping[str, Sequence[Attempt]], settings: Settings) -> dict:
    """The detectable difference of one pair among all the leaderboard tests (Bonferroni's
    level, which Holm's first step is: a conservative figure for Holm's orders)."""
    comp = power.components({a: cells(mine, COMPOSITE) for a, mine in groups.items()},
                            passes={a: pass_passes(mine) for a, mine in groups.items()}, level=settings.level)
    pairs = pair_count(len(groups))
    out: dict = {"components": comp.as_dict(), "detectable": None, "note": "", "pairs": pairs,
                 "method": power.METHOD}
    try:
        out["detectable"] = power.detectable(comp, comp.problems, max(1, comp.attempts), settings, pairs=pairs)
    except ValueError as e:
        out["note"] = str(e)
        return out
    out["needed"] = power.needed(comp, DIFFERENCES, settings, pairs=pairs)
    return out


def pass_passes(mine: Iterable[Attempt]) -> dict[str, list[bool]]:
    return {p: [x == 1.0 for x in v] for p, v in cells(mine, PASS).items()}


def agent_entry(mine: Sequence[Attempt], agent: str, settings: Settings, sid: str,
                categories: Sequence[str], most_k: int | None = None) -> dict:
    """`mine`: the agent's attempts on the common problems; pass@k up to `most_k`."""
    return {COMPOSITE: agent_interval(mine, agent, COMPOSITE, settings),
            PASS: agent_interval(mine, agent, PASS, settings),
            "categories": {c: agent_interval(mine, agent, c, settings) for c in categories},
            "pass_at_k": passk.agent_table(pass_passes(mine), most_k, settings),
            "source": f"/stats/{sid}/agents/{agent}", "rank_source": f"/stats/{sid}/ranks/{agent}"}


def common_groups(groups: Mapping[str, Sequence[Attempt]]) -> tuple[dict[str, list[Attempt]], list[str]]:
    """Each agent's attempts on the problems every agent attempted, and those problems
    (each agent's own when no problem is common to all: then nothing is compared)."""
    common = common_problems({a: {x.problem for x in mine} for a, mine in groups.items()})
    if not common:
        return {a: list(mine) for a, mine in groups.items()}, []
    return {a: restrict(mine, common) for a, mine in groups.items()}, common


def most_k(groups: Mapping[str, Sequence[Attempt]], common: Sequence[str]) -> int:
    """The largest k pass@k is given for: the fewest attempts of any agent on a common problem."""
    counts = [sum(1 for x in mine if x.problem == p) for mine in groups.values() for p in common]
    return min(counts, default=0)


def ordered(groups: Mapping[str, Sequence[Attempt]], agents: Sequence[str], settings: Settings,
            sid: str) -> tuple[list[dict], dict[tuple[str, str], int]]:
    """Every pair's row, and the orders Holm's step-down establishes over all of them."""
    rows: list[dict] = []
    ivs: list[Interval] = []
    for a, b in itertools.combinations(agents, 2):
        iv, row = pair_interval(groups[a], groups[b], a, b, settings)
        ivs.append(iv)
        rows.append({"a": a, "b": b, COMPOSITE: row, "source": f"/stats/{sid}/pairs/{a}/{b}"})
    ps = [iv.p_value if iv.scope != TOO_FEW else None for iv in ivs]
    rejected, adjusted = holm(ps, 1 - settings.level), holm_adjusted(ps)
    order: dict[tuple[str, str], int] = {}
    for row, iv, rej, adj in zip(rows, ivs, rejected, adjusted):
        alone = established(iv)
        sign = 0 if iv.estimate is None or iv.estimate == 0 else (1 if iv.estimate > 0 else -1)
        order[(row["a"], row["b"])] = sign if rej else 0
        row.update(established=order[(row["a"], row["b"])], established_alone=alone, p_holm=adj)
    return rows, order


def analyse_uncertainty(attempts: Sequence[Attempt], settings: Settings, sid: str, categories: Sequence[str]) -> dict:
    all_groups = by_agent(attempts)
    groups, common = common_groups(all_groups)
    agents = sorted(groups)
    k = most_k(groups, common) if common else None
    doc: dict = {"settings": settings.describe(), "agents": {}, "pairs": [], "pass_at_k": [],
                 "problems": missing_attempts({a: cells(m, COMPOSITE) for a, m in all_groups.items()}, common),
                 "source": f"/stats/{sid}"}
    for ag in agents:
        doc["agents"][ag] = agent_entry(groups[ag], ag, settings, sid, categories, k)
        doc["pass_at_k"] += pass_at_k_rows(all_groups[ag], ag, sid)
    if len(agents) <= MAX_PAIRED_AGENTS:
        doc["pairs"], order = ordered(groups, agents, settings, sid)
        doc["family"] = {"pairs": len(doc["pairs"]), "method": "holm", "level": settings.level}
        for ag, (best, worst) in rank_ranges(agents, order).items():
            doc["agents"][ag]["rank"] = {"best": best, "worst": worst, "label": label(best, worst)}
    else:
        doc["note"] = f"{len(agents)} agents: paired intervals and rank ranges are drawn for up to {MAX_PAIRED_AGENTS}"
    doc["power"] = {**power_summary(groups, settings), "source": f"/stats/{sid}/power"}
    return doc
