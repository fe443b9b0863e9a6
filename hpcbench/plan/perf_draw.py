"""The performance case's drawn arguments: problem.json `performance.params`, drawn at planning
from the campaign's held-out seed (hpcbench/plan/held_out.py), never published.

A performance case with fixed public arguments has a known answer: a program that recognises
the arguments can print it without doing the work and take the reference's time at a
fraction of it (outside red team, issue 33). Its timed answers were already compared with
the reference's at the same arguments (evaluators/metrics/execution_time.py answers_differ),
but a precomputed right answer passes that. So the values of the options a problem names in
`performance.params` are drawn per campaign, like the held-out cases: each replaces that
option's value in the case's arguments (problem.json `performance.args`, or a site's
`performance_args`), or is appended. The reference runs at the same drawn arguments beside
the submission, as before.

The draw is a function of (seed, problem id, "performance") alone, recorded in
<campaign>/snapshot/held_out.json under "performance" (a re-plan keeps it; collect copies
it into campaign.h5's /held_out). It never equals a published case or the nominal
`performance.args`: a draw that would is drawn again from the same stream."""

from __future__ import annotations

import random

from hpcbench.agent_options import is_option_name
from hpcbench.errors import ConfigError
from hpcbench.plan.param_draw import draw_value
from hpcbench.problem import Problem

# Draws tried before the ranges are declared unable to avoid the published cases; with a
# continuous range a repeat is a few-in-a-thousand event, so this many means a range of one value.
TRIES = 64


def option_values(args: list[str]) -> dict[str, str]:
    """`-n 20 -alpha 80 -flag` -> {"-n": "20", "-alpha": "80", "-flag": ""}: each option's last value."""
    out: dict[str, str] = {}
    for i, a in enumerate(args):
        if is_option_name(a):
            nxt = args[i + 1] if i + 1 < len(args) else ""
            out[a] = "" if is_option_name(nxt) else nxt
    return out


def same_value(a: str, b: str) -> bool:
    """Whether two argument strings say the same thing: numbers by value (80, 80.0, 8e1), else as text."""
    try:
        return float(a) == float(b)
    except ValueError:
        return a == b


def with_drawn(args: list[str], drawn: list[str]) -> list[str]:
    """`args` with each drawn option's value in place of the one there, or appended."""
    out = list(args)
    for opt, value in zip(drawn[::2], drawn[1::2], strict=True):
        idx = [i for i, a in enumerate(out) if a == opt]
        if not idx:
            out += [opt, value]
        for i in idx:
            if i + 1 < len(out) and not is_option_name(out[i + 1]):
                out[i + 1] = value
            else:
                out.insert(i + 1, value)
    return out


def published_as(problem: Problem, args: list[str]) -> str | None:
    """Which public case `args` would be (None: none): a published case whose every option has
    the same value in `args` (an option it leaves at its default may be set in `args` to that
    default: counted as the same, the safe side; a drawn option it leaves unset counts as at the
    `default` problem.json states, else as any value), or the nominal performance case (problem.json's
    `performance.args`) where no drawn option it sets changed its value."""
    mine = option_values(args)
    perf = problem.performance
    # A drawn option a case leaves unset is, there, at the default the task states where
    # problem.json says so (rosenbrock's -scale 1); where it does not, at any value (safe side)
    defaults = {p.option: f"{p.default:g}" for p in perf.params if p.default is not None} if perf else {}
    for c in problem.cases:
        theirs = option_values(c.args)
        if all(o in mine and same_value(mine[o], v) for o, v in theirs.items()) and all(
                same_value(mine.get(o, d), d) for o, d in defaults.items() if o not in theirs):
            return f"case {c.name!r} ({' '.join(c.args) or 'no arguments'})"
    if perf is None:
        return None
    base = option_values(perf.args)  # holds every drawn option (problem.py Performance)
    if perf.params and all(same_value(mine.get(p.option, ""), base[p.option]) for p in perf.params):
        return f"the nominal performance case ({' '.join(perf.args)})"
    return None


def draw_performance(problem: Problem, seed: int) -> list[str]:
    """The drawn options of `problem`'s performance case for `seed`, as [option, value, ...]
    (empty where it draws none); never a published case (published_as)."""

    perf = problem.performance
    if perf is None or not perf.params:
        return []
    rng = random.Random(f"{seed}:{problem.id}:performance")  # str seeds are hashed (sha512): stable
    for _ in range(TRIES):
        drawn = [x for p in perf.params for x in (p.option, draw_value(p, rng))]
        if published_as(problem, with_drawn(perf.args, drawn)) is None:
            return drawn
    raise ConfigError(f"problems/{problem.id}/problem.json", "performance.params",
                      f"{TRIES} draws all gave a published case: the ranges must allow values no case uses")


def performance_args(problem: Problem, drawn: list[str], site_args: list[str] | None = None) -> list[str]:
    """The performance case's arguments: the site's (or problem.json's) with the draw applied."""
    perf = problem.performance
    assert perf is not None
    return with_drawn(perf.args if site_args is None else site_args, drawn)
