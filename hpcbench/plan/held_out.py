"""Held-out test cases: drawn at planning from the ranges a problem declares (problem.json
`held_out`), never published. Every submission and the reference run them in the same
campaign; the checks that name them (`"@held_out"` in checks.json) compare the submission's
answers with the reference's at the same drawn arguments. A program that prints the public
cases' known answers without solving fails them.

    <campaign>/snapshot/held_out.json   {"seed": S, "problems": {id: [TestCase, ...]},
                                         "performance": {id: [option, value, ...]}}

From 3 cases on (problem.json `held_out.cases`) the draw is stratified: every param's low band,
high band and interior each appear in one case, each case at one of the problem's held-out rank
counts (hpcbench/plan/param_draw.py, draw_strata); a campaign drawn before keeps its recorded
cases, read as they were written.

One draw per campaign, from one seed (random unless `--held-out-seed` is given), recorded
in the snapshot: a re-plan (resume) keeps it, so records stay valid; a problem added to the
campaign later draws from the same seed. The draw is a function of (seed, problem id) only.
The same seed draws the performance case's arguments (hpcbench/plan/perf_draw.py), kept
under "performance"."""

from __future__ import annotations

import hashlib
import json
import random
import secrets
from pathlib import Path
from typing import NamedTuple

from hpcbench.errors import ConfigError, HpcbenchError
from hpcbench.jobs.records import write_atomic
from hpcbench.plan.param_draw import STRATA, Stratum, draw_value
from hpcbench.plan.perf_draw import TRIES, draw_performance, option_values, same_value
from hpcbench.problem import HELD_OUT_PREFIX, Problem, ProblemBundle, TestCase


def held_out_path(root: Path) -> Path:
    return Path(root) / "snapshot" / "held_out.json"


def draw(problem: Problem, seed: int, draws: int = 1) -> list[TestCase]:
    """The held-out cases of `problem` for `seed` (none when it declares no ranges): stratified
    (draw_strata) from STRATIFIED_FROM cases on, else each uniform at every rank count. `draws`
    > 1: the draws of seeds seed, seed + 1, ... one after another, numbered on (validate-checks
    runs its programs at several, CampaignProfile.held_out_draws)."""
    if draws > 1:
        cases = [c for k in range(draws) for c in draw(problem, seed + k)]
        return [c.model_copy(update={"name": f"{HELD_OUT_PREFIX}{i + 1}",
                                     "description": f"{c.description}, seed {seed + i // (len(cases) // draws)}"})
                for i, c in enumerate(cases)]
    h = problem.held_out
    if h is None:
        return []
    rng = random.Random(f"{seed}:{problem.id}")  # str seeds are hashed (sha512): stable across runs
    if h.stratified:
        return draw_strata(problem, rng)
    cases = []
    for k in range(1, h.cases + 1):
        args = list(h.args)
        for p in h.params:
            args += [p.option, draw_value(p, rng)]
        cases.append(TestCase(name=f"{HELD_OUT_PREFIX}{k}", args=args, ranks=h.ranks, time_limit_s=h.time_limit_s,
                              description="held out: arguments drawn at planning"))
    return cases


def spec_of(problem: Problem, draws: int = 1, cases: int | None = None) -> str:
    """What a problem's draw was made from: its `held_out`, the number of draws and the cap on
    cases (a re-snapshotting campaign draws again where it changed: validation/checks.py)."""
    h = problem.held_out
    spec = {"held_out": None if h is None else h.model_dump(mode="json"), "draws": draws}
    if cases is not None:  # absent otherwise: drawn before the cap, a spec stays what it was
        spec["cases"] = cases
    body = json.dumps(spec, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def draw_strata(problem: Problem, rng: random.Random) -> list[TestCase]:
    """Stratified held-out cases (issue 35: a program wrong only near one end of a range escaped
    a uniform draw): each param's strata low, high, interior (then interior again) dealt to the
    cases in an order shuffled per param, so both ends and the middle of every range are drawn in
    every campaign, in varying combinations; each case at one rank count, the problem's rank
    counts dealt in a shuffled order and repeated, so each is used. A case whose arguments are a
    published case's is drawn again from the same stream."""
    h = problem.held_out
    assert h is not None
    deal: dict[str, list[Stratum]] = {}
    for p in h.params:
        order = list(STRATA) + ["interior"] * (h.cases - len(STRATA))
        rng.shuffle(order)
        deal[p.option] = order
    ranks = list(h.ranks)
    rng.shuffle(ranks)
    published = [option_values(c.args) for c in problem.cases]
    cases = []
    for k in range(h.cases):
        for _ in range(TRIES):
            drawn = {p.option: draw_value(p, rng, deal[p.option][k]) for p in h.params}
            args = list(h.args) + [a for o, v in drawn.items() for a in (o, v)]
            if not any(_same_case(option_values(args), pub) for pub in published):
                break
        else:
            raise ConfigError(f"problems/{problem.id}/problem.json", "held_out",
                              f"case {k + 1}: {TRIES} draws all repeat a published case; widen the ranges")
        where = ", ".join(f"{o} {s}" for o, s in ((p.option, deal[p.option][k]) for p in h.params))
        cases.append(TestCase(name=f"{HELD_OUT_PREFIX}{k + 1}", args=args, ranks=[ranks[k % len(ranks)]],
                              time_limit_s=h.time_limit_s,
                              description=f"held out: arguments drawn at planning ({where})"))
    return cases


def _same_case(a: dict[str, str], b: dict[str, str]) -> bool:
    return a.keys() == b.keys() and all(same_value(v, b[o]) for o, v in a.items())


class Draw(NamedTuple):
    seed: int
    problems: dict[str, list[TestCase]]
    performance: dict[str, list[str]]
    spec: dict[str, str]  # problem -> spec_of what its cases were drawn from (absent before issue 35)


def _read(root: Path) -> Draw | None:
    path = held_out_path(root)
    if not path.is_file():
        return None
    try:
        d = json.loads(path.read_text())
        got = Draw(int(d["seed"]), {pid: [TestCase.model_validate(c) for c in cases]
                                    for pid, cases in d["problems"].items()},
                   {pid: [str(a) for a in args] for pid, args in d.get("performance", {}).items()},
                   {str(pid): str(v) for pid, v in d.get("spec", {}).items()})
        if any(not isinstance(a, list) or len(a) % 2 for a in d.get("performance", {}).values()):
            raise ValueError("a performance draw is not a list of option, value pairs")
        return got
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise HpcbenchError(f"{path}: unreadable ({type(e).__name__}: {e}); it holds the campaign's held-out "
                            "cases, which its records were run at. Restore it, or plan into a new folder") from None


def read_draw(root: Path) -> tuple[int | None, dict[str, list[TestCase]]]:
    """The campaign's seed and drawn cases (None, {} before any draw)."""
    d = _read(root)
    return (None, {}) if d is None else (d.seed, d.problems)


def read_spec(root: Path) -> dict[str, str]:
    """Each problem's spec_of as drawn ({} before any draw, or for a draw made before issue 35)."""
    d = _read(root)
    return {} if d is None else d.spec


def read_performance_draw(root: Path) -> dict[str, list[str]]:
    """Each problem's drawn performance options, [option, value, ...] ({} before any draw)."""
    d = _read(root)
    return {} if d is None else d.performance


def ensure_draw(root: Path, problems: dict[str, ProblemBundle], seed: int | None = None,
                enabled: bool = True, performance: bool = False, draws: int = 1,
                redraw_changed: bool = False, cases: int | None = None) -> dict[str, list[TestCase]]:
    """The campaign's held-out cases per problem: the recorded draw, extended to problems it
    lacks, written back. `seed` for a new campaign (random when None); a different one for a
    campaign that already drew is an error. `enabled=False`: no held-out cases (sweeps).
    `performance`: the performance cases' arguments drawn too (read_performance_draw), from the
    same seed, whether or not held-out cases are. `draws`: seeds drawn per problem (draw).
    `redraw_changed` (a re-snapshotting campaign: validation, which measures the problems as
    they are now): a problem whose `held_out` or `draws` changed since its draw (spec_of) is
    drawn again; elsewhere a recorded draw is kept as its records were run at it. `cases`: only
    the first this many of each problem's draw are kept (CampaignProfile.held_out_cases)."""
    if not enabled and not performance:
        return {}
    d = _read(root)
    recorded = None if d is None else d.seed
    drawn: dict[str, list[TestCase]] = {} if d is None else d.problems
    perf: dict[str, list[str]] = {} if d is None else d.performance
    spec: dict[str, str] = {} if d is None else d.spec
    if recorded is not None and seed is not None and seed != recorded:
        raise HpcbenchError(f"--held-out-seed {seed}: {root} drew its held-out cases with seed {recorded} "
                            f"({held_out_path(root)}); a campaign keeps one draw. Plan into a new folder")
    use = recorded if recorded is not None else (seed if seed is not None else secrets.randbelow(2 ** 31))
    changed = recorded is None
    for pid, b in sorted(problems.items()):
        stale = redraw_changed and pid in drawn and spec.get(pid) != spec_of(b.problem, draws, cases)
        if enabled and (pid not in drawn or stale) and b.problem.held_out is not None:
            drawn[pid] = draw(b.problem, use, draws)[:cases]
            spec[pid] = spec_of(b.problem, draws, cases)
            changed = True
        if performance and pid not in perf and b.problem.performance is not None and b.problem.performance.params:
            perf[pid] = draw_performance(b.problem, use)
            changed = True
    if changed:
        body = {"seed": use, "problems": {pid: [c.model_dump(mode="json") for c in cs]
                                          for pid, cs in sorted(drawn.items())},
                "performance": dict(sorted(perf.items())), "spec": dict(sorted(spec.items()))}
        write_atomic(held_out_path(root), json.dumps(body, indent=1))
    return {pid: cs for pid, cs in drawn.items() if pid in problems} if enabled else {}
