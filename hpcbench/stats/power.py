"""How small a difference a campaign's design can detect, and how many attempts a
wanted difference needs, from the variance the campaign shows.

Two agents compared over P shared problems with n attempts each: the paired
difference of their means has variance

    (2 s_g^2 + 2 s_w^2 / n) / P    (problems drawn: the interval speaks for others)
    2 s_w^2 / (n P)                (these problems only: attempts are the only chance)

where s_w^2 is the spread of attempts within a problem and s_g^2 the agent-by-problem
interaction (how much two agents' gap changes from problem to problem), both estimated
by the method of moments from every agent and pair of the campaign. The minimum
detectable difference at power 1-beta and two-sided level alpha is
(t_{1-alpha/2} + t_{1-beta}) x its standard error (Bloom 1995, "Minimum detectable
effects", Evaluation Review 19(5): 547-556)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from hpcbench.stats.intervals import PROBLEMS, THESE, Settings

MAX_ATTEMPTS = 1000


@dataclass
class Components:
    within: float | None  # s_w^2, pooled over every (agent, problem) with 2 or more attempts
    within_df: int
    interaction: float | None  # s_g^2 (clipped at 0), pooled over pairs with 2 or more shared problems
    pairs: int
    problems: int  # the design: problems in the campaign's largest shared set
    attempts: int  # the design: median attempts per agent and problem

    def as_dict(self) -> dict:
        return asdict(self)


def components(cells: Mapping[str, Mapping[str, Sequence[float]]], max_agents: int = 100) -> Components:
    """`cells`: agent -> problem -> attempt values. The interaction is pooled over the pairs of
    the `max_agents` agents with the most attempts (pairs grow with the square of the agents)."""
    ss = df = 0.0
    for per in cells.values():
        for vals in per.values():
            if len(vals) >= 2:
                ss += float(np.var(vals, ddof=1)) * (len(vals) - 1)
                df += len(vals) - 1
    within = ss / df if df else None
    num = den = 0.0
    most = 0
    busiest = sorted(cells, key=lambda a: (-sum(len(v) for v in cells[a].values()), a))[:max_agents]
    for a, b in itertools.combinations(sorted(busiest), 2):
        shared = sorted(set(cells[a]) & set(cells[b]))
        most = max(most, len(shared))
        if len(shared) < 2 or within is None:
            continue
        d = [np.mean(cells[a][p]) - np.mean(cells[b][p]) for p in shared]
        noise = within * float(np.mean([1 / len(cells[a][p]) + 1 / len(cells[b][p]) for p in shared]))
        num += (float(np.var(d, ddof=1)) - noise) / 2 * (len(shared) - 1)
        den += len(shared) - 1
    counts = [len(v) for per in cells.values() for v in per.values()]
    if len(cells) == 1:  # no pair: the design is the one agent's problems
        most = len(next(iter(cells.values())))
    return Components(within, int(df), max(0.0, num / den) if den else None, len(busiest) * (len(busiest) - 1) // 2,
                      most, int(np.median(counts)) if counts else 0)


def standard_error(c: Components, problems: int, attempts: int, settings: Settings) -> tuple[float, int, str]:
    """(standard error of a paired difference, degrees of freedom, scope) for a design."""
    if c.within is None or c.within_df < 2:
        raise ValueError("too few repeated attempts (by one agent on one problem): the spread of attempts is unknown")
    if c.within <= 0:
        raise ValueError(f"no two attempts by one agent on one problem differ (over {c.within_df} df): the spread "
                         "of attempts is not measured")
    if problems < 1:
        raise ValueError("no two agents attempted a common problem")
    if problems >= settings.min_units:
        if c.interaction is None:
            raise ValueError("no two agents share two problems: how their gap varies by problem is unknown")
        return math.sqrt((2 * c.interaction + 2 * c.within / attempts) / problems), problems - 1, PROBLEMS
    # two agents' attempts within fixed problems: a two-sample comparison with 2 P (n - 1) df
    return math.sqrt(2 * c.within / (attempts * problems)), max(1, 2 * problems * (attempts - 1)), THESE


def multiplier(df: int, level: float, power: float) -> float:
    from scipy import stats  # here: importing scipy.stats costs every hpcbench command ~1-3 s

    return float(stats.t.ppf(1 - (1 - level) / 2, df) + stats.t.ppf(power, df))


def detectable(c: Components, problems: int, attempts: int, settings: Settings, power: float = 0.8) -> dict:
    """The minimum detectable difference of a design, with what it rests on."""
    se, df, kind = standard_error(c, problems, attempts, settings)
    m = multiplier(df, settings.level, power)
    return {"difference": m * se, "standard_error": se, "df": df, "multiplier": m, "scope": kind,
            "problems": problems, "attempts": attempts, "power": power, "level": settings.level}


def attempts_needed(c: Components, difference: float, problems: int, settings: Settings,
                    power: float = 0.8) -> int | None:
    """The fewest attempts per problem (per agent) that detect `difference` with `problems`
    problems; None when no number of attempts up to MAX_ATTEMPTS does (the agents' gap
    varies from problem to problem more than attempts can average out: more problems)."""
    for n in range(1, MAX_ATTEMPTS + 1):
        if detectable(c, problems, n, settings, power)["difference"] <= difference:
            return n
    return None


def problems_needed(c: Components, difference: float, attempts: int, settings: Settings,
                    power: float = 0.8, most: int = 100_000) -> int | None:
    """The fewest problems that detect `difference` with `attempts` attempts on each."""
    lo = 2
    if detectable(c, most, attempts, settings, power)["difference"] > difference:
        return None
    hi = most
    while lo < hi:  # the detectable difference falls with the problems (past the scope switch)
        mid = (lo + hi) // 2
        if detectable(c, mid, attempts, settings, power)["difference"] <= difference and mid >= settings.min_units:
            hi = mid
        else:
            lo = mid + 1
    return lo
