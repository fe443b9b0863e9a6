"""The leaderboard's statistics under the conditions a leaderboard meets, on synthetic
campaigns whose truth is known, drawn through the production entry point
(hpcbench.stats.analysis.analyse_uncertainty, what scoring stores and the report shows).

    .venv/bin/python bench/stats_coverage.py [--campaigns 200] [--seed 1] [--resamples 2000]
        [--models beta,mixed,extremes,weak,rare] [--sizes 3x5,6x1,6x5,12x3,18x1,18x5]
    .venv/bin/python bench/stats_coverage.py --quick   # 20 campaigns, 2 models x 2 sizes: seconds
    .venv/bin/python bench/stats_coverage.py --power-only --campaigns 800 --sizes 6x1,6x5,12x3,18x1,18x5
        # the power columns alone (the rng draws differ from a full run's: the same with --power-only)
    .venv/bin/python bench/stats_coverage.py --power-only --campaigns 800 --models extremes --sizes 6x5 --rounds 10
        # more rounds where the fixed point did not converge in 4 (MDD more than 5% from the gap)
    .venv/bin/python bench/stats_coverage.py --resolve --sizes 14x1,14x3,14x5 --campaigns 100
        # what a suite of 14 problems resolves: the detectable difference of 2 agents and among
        # 8 (28 pairs), and the problems 10 points need at those attempts

A problem j has a base chance p_j that an attempt passes, drawn from the model's
difficulty distribution; agent a passes it with q_aj = logistic(logit(p_j) + s_a + g_aj),
g_aj ~ N(0, 0.5^2) (an agent suits some problems better than others). An attempt passes
with chance q_aj; its composite is 100 when it passes, else partial credit 50 x Beta(2, 2)
(mean 25), so the true mean composite is 25 + 75 E[q]. Difficulty models:

    beta       p_j ~ Beta(2, 2)
    mixed      half Beta(8, 2), half Beta(2, 8) (easy and hard problems)
    extremes   half Beta(1, 30), half Beta(30, 1) (near 0 and near 1)
    weak       p_j ~ Beta(0.6, 9.4): every agent passes 6% of attempts
    rare       a quarter Beta(30, 1), the rest Beta(1, 30): the easy kind unseen in 18% of
               6-problem campaigns

Columns, per model and size (P problems x n attempts per agent and problem):

    comp, pass   coverage of each agent's 95% interval of its mean composite and of its pass
                 rate (the truth: problems like these), over 8 agents x campaigns
    cwidth       mean width of the composite interval (points)
    pwidth       mean width of the pass-rate interval
    FWER         share of campaigns of 8 identical agents (28 pairs) that call some pair
                 "established"
    gap, MDD     2-agent campaigns: starting from the median minimum detectable difference
                 (80% power, composite points) that campaigns of identical agents report,
                 campaigns with that true gap are drawn, and the next gap is halfway to their
                 median reported MDD, until the two agree within 5% (at most 4 rounds, --rounds): `gap`
                 is the true gap of the last round, `MDD` what its campaigns reported
    power        share of those campaigns in which the better agent is established above
                 (nominal 80% where MDD = gap)
    rep          the power those campaigns report at the true gap, averaged: from each one's
                 MDD, multiplier, df and shape factor f (1 where a version has none),
                 t.cdf((gap x multiplier / MDD - t_crit) / f, df), 80% where its MDD is the gap
                 (what `power` is checked against: within 5 points)

The same script runs on any version of hpcbench (it calls analyse_uncertainty only); the
before/after tables in docs/report.md are its output on the two versions at the same settings."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hpcbench.stats.analysis import Attempt, analyse_uncertainty
from hpcbench.stats.intervals import Settings

SPREAD = 0.5  # sd of the agent-by-problem effect on the logit scale
AGENTS = 8
MODELS: dict[str, Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]] = {
    "beta": lambda rng, shape: rng.beta(2, 2, shape),
    "mixed": lambda rng, shape: np.where(rng.random(shape) < 0.5, rng.beta(8, 2, shape), rng.beta(2, 8, shape)),
    "extremes": lambda rng, shape: np.where(rng.random(shape) < 0.5, rng.beta(1, 30, shape),
                                            rng.beta(30, 1, shape)),
    "weak": lambda rng, shape: rng.beta(0.6, 9.4, shape),
    "rare": lambda rng, shape: np.where(rng.random(shape) < 0.25, rng.beta(30, 1, shape), rng.beta(1, 30, shape)),
}


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return np.log(p / (1 - p))


def chances(model: str, shifts: np.ndarray, c: int, p: int, rng: np.random.Generator) -> np.ndarray:
    """q (c, agents, p): each agent's chance of passing each problem of each campaign."""
    base = logit(MODELS[model](rng, (c, 1, p)))
    return 1 / (1 + np.exp(-(base + shifts[None, :, None] + rng.normal(0, SPREAD, (c, len(shifts), p)))))


def true_pass(model: str, shift: float, rng: np.random.Generator, draws: int = 400_000) -> float:
    """E[q] over problems like these for an agent of logit shift `shift`."""
    q = chances(model, np.array([shift]), 1, draws, rng)
    return float(q.mean())


@dataclass
class Campaign:
    attempts: list[Attempt]
    agents: list[str]


def campaign(q: np.ndarray, n: int, rng: np.random.Generator) -> Campaign:
    """One campaign from q (agents, p): n attempts per agent and problem."""
    a, p = q.shape
    passed = rng.random((a, p, n)) < q[:, :, None]
    comp = np.where(passed, 100.0, 50.0 * rng.beta(2, 2, (a, p, n)))
    names = [f"agent{i}" for i in range(a)]
    att = [Attempt(names[i], f"p{j:02d}", str(k + 1), float(comp[i, j, k]), bool(passed[i, j, k]))
           for i in range(a) for j in range(p) for k in range(n)]
    return Campaign(att, names)


def inside(iv: dict, truth: float) -> bool:
    return iv.get("low") is not None and iv["low"] <= truth <= iv["high"]


def established_any(doc: dict) -> bool:
    return any(p["established"] != 0 for p in doc["pairs"])


def shift_for(model: str, gap: float, rng: np.random.Generator) -> float | None:
    """The logit shift s (agents at +s/2 and -s/2) whose true composite gap is `gap` points."""
    base = logit(MODELS[model](rng, (200_000,)))
    g = rng.normal(0, SPREAD, (2, 200_000))

    def diff(s: float) -> float:
        hi = 1 / (1 + np.exp(-(base + s / 2 + g[0])))
        lo = 1 / (1 + np.exp(-(base - s / 2 + g[1])))
        return 75 * float(hi.mean() - lo.mean())

    lo_s, hi_s = 0.0, 20.0
    if diff(hi_s) < gap:
        return None
    for _ in range(50):
        mid = (lo_s + hi_s) / 2
        lo_s, hi_s = (mid, hi_s) if diff(mid) < gap else (lo_s, mid)
    return (lo_s + hi_s) / 2


@dataclass
class Row:
    model: str
    problems: int
    attempts: int
    composite: float
    passed: float
    comp_width: float
    pass_width: float
    fwer: float
    gap: float | None
    mdd: float | None
    power: float | None
    reported: float | None = None


def measure(model: str, p: int, n: int, campaigns: int, settings: Settings, rng: np.random.Generator,
            coverage: bool = True, rounds: int = 4) -> Row:
    """One row; `coverage` False: the power columns only (comp, pass, widths and FWER left NaN);
    `rounds`: of the fixed point between the true gap and the MDD reported at it."""
    pass_truth = true_pass(model, 0.0, rng)
    comp_truth = 25 + 75 * pass_truth
    cov_c = cov_p = fw = 0
    width, cwidth = [], []
    q8 = chances(model, np.zeros(AGENTS), campaigns, p, rng)
    for i in range(campaigns if coverage else 0):
        cp = campaign(q8[i], n, rng)
        doc = analyse_uncertainty(cp.attempts, settings, "bench", [])
        for ag in cp.agents:
            e = doc["agents"][ag]
            cov_c += inside(e["composite"], comp_truth)
            cov_p += inside(e["pass"], pass_truth)
            if e["pass"].get("low") is not None:
                width.append(e["pass"]["high"] - e["pass"]["low"])
            if e["composite"].get("low") is not None:
                cwidth.append(e["composite"]["high"] - e["composite"]["low"])
        fw += established_any(doc)
    start = reported_mdd(model, 0.0, 0.0, p, n, campaigns, settings, rng)[0]
    gap, mdd, power, rep = None, None, None, None
    target = start
    for _ in range(rounds):  # a gap that campaigns at that gap report as their MDD (damped fixed point)
        s = shift_for(model, target, rng) if target is not None else None
        if s is None:
            break
        gap = target
        mdd, power, rep = reported_mdd(model, s, gap, p, n, campaigns, settings, rng)
        if mdd is None or abs(mdd - gap) < 0.05 * gap:
            break
        target = (gap + mdd) / 2
    share = (lambda k: k / campaigns) if coverage else (lambda k: float("nan"))
    return Row(model, p, n, share(cov_c / AGENTS), share(cov_p / AGENTS),
               float(np.mean(cwidth)) if cwidth else float("nan"), float(np.mean(width)) if width else float("nan"),
               share(fw), gap, mdd, power, rep)


def power_reported(d: dict, gap: float) -> float:
    """The power a campaign's detectable-difference figure `d` implies at a true `gap`: its
    standard error is MDD / multiplier, its critical value t at the pair's level, and the test's
    statistic spreads shape_factor times what t says (1 where a version does not say)."""
    from scipy import stats

    crit = stats.t.ppf(1 - (1 - d.get("pair_level", d.get("level", 0.95))) / 2, d["df"])
    return float(stats.t.cdf((gap * d["multiplier"] / d["difference"] - crit) / d.get("shape_factor", 1.0), d["df"]))


def reported_mdd(model: str, shift: float, gap: float, p: int, n: int, campaigns: int, settings: Settings,
                 rng: np.random.Generator) -> tuple[float | None, float, float | None]:
    """(median MDD reported, share of campaigns establishing agent0 above agent1, mean power
    reported at `gap`) over 2-agent campaigns whose agents are `shift` apart on the logit scale."""
    q = chances(model, np.array([shift / 2, -shift / 2]), campaigns, p, rng)
    mdds, reps, found = [], [], 0
    for i in range(campaigns):
        doc = analyse_uncertainty(campaign(q[i], n, rng).attempts, settings, "bench", [])
        d = (doc["power"] or {}).get("detectable")
        if d:
            mdds.append(d["difference"])
            reps.append(power_reported(d, gap))
        found += doc["pairs"][0]["established"] == 1
    return (float(np.median(mdds)) if mdds else None), found / campaigns, (float(np.mean(reps)) if reps else None)


def header() -> str:
    return (f"| {'model':8s} | {'P':>2s} | {'n':>1s} | {'comp':>5s} | {'pass':>5s} | {'cwidth':>6s} | {'pwidth':>6s} | "
            f"{'FWER':>5s} | {'gap':>5s} | {'MDD':>5s} | {'power':>5s} | {'rep':>5s} |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|")


def line(r: Row) -> str:
    gap = "—" if r.gap is None or r.mdd is None else f"{r.gap:.1f}"
    mdd = "—" if r.mdd is None else f"{r.mdd:.1f}"
    pw = "—" if r.power is None or r.mdd is None else f"{r.power:.3f}"
    rep = "—" if r.reported is None or r.mdd is None else f"{r.reported:.3f}"
    return (f"| {r.model:8s} | {r.problems:2d} | {r.attempts:1d} | {r.composite:.3f} | {r.passed:.3f} | "
            f"{r.comp_width:6.1f} | {r.pass_width:6.3f} | {r.fwer:.3f} | {gap:>5s} | {mdd:>5s} | {pw:>5s} | "
            f"{rep:>5s} |")


def run(models: list[str], sizes: list[tuple[int, int]], campaigns: int, seed: int,
        resamples: int, out: Callable[[str], None] = print, coverage: bool = True, rounds: int = 4) -> list[Row]:
    settings = Settings(resamples=resamples)
    rows = []
    out(header())
    for model in models:
        for p, n in sizes:
            rng = np.random.default_rng([seed, p, n, list(MODELS).index(model)])
            rows.append(measure(model, p, n, campaigns, settings, rng, coverage, rounds))
            out(line(rows[-1]))
    return rows


def resolving(model: str, p: int, n: int, campaigns: int, settings: Settings, rng: np.random.Generator) -> str:
    """One row of what a suite of `p` problems with `n` attempts resolves under `model`: the
    median reported detectable difference for 2 agents and among 8 (28 pairs), and the median
    problems 10 points need at `n` attempts in each case (from the power summary's `needed`)."""
    out = [f"| {model:8s} | {p:2d} | {n:1d} |"]
    for agents in (2, AGENTS):
        q = chances(model, np.zeros(agents), campaigns, p, rng)
        mdd, ten = [], []
        for i in range(campaigns):
            pw = analyse_uncertainty(campaign(q[i], n, rng).attempts, settings, "bench", [])["power"]
            if pw.get("detectable"):
                mdd.append(pw["detectable"]["difference"])
                ten += [r["problems"] for r in pw.get("needed", []) if r["difference"] == 10.0 and r["problems"]]
        out.append(f" {np.median(mdd):5.1f} | {np.median(ten):4.0f} |" if mdd and ten else "     — |    — |")
    return "".join(out)


def resolve(models: list[str], sizes: list[tuple[int, int]], campaigns: int, seed: int,
            out: Callable[[str], None] = print) -> None:
    out(f"| {'model':8s} |  P | n | MDD 2 agents | problems for 10 | MDD 8 agents | problems for 10 |\n"
        "|---|---|---|---|---|---|---|")
    for model in models:
        for p, n in sizes:
            rng = np.random.default_rng([seed, p, n, list(MODELS).index(model), 2])
            out(resolving(model, p, n, campaigns, Settings(), rng))


QUICK = {"campaigns": 20, "models": "beta,weak", "sizes": "6x1,12x3"}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--campaigns", type=int, default=200)
    ap.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (versions that draw them)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated: " + ", ".join(MODELS))
    ap.add_argument("--sizes", default="3x5,6x1,6x5,12x3,18x1,18x5", help="comma-separated PxN: problems x attempts")
    ap.add_argument("--quick", action="store_true", help=f"a small run in seconds: {QUICK}")
    ap.add_argument("--rounds", type=int, default=4,
                    help="at most this many rounds of the fixed point gap = reported MDD (a row whose MDD ends "
                         "more than 5%% from its gap did not converge: its `rep` is the figure extrapolated from "
                         "the MDD down or up to the gap, where a few df make the average of reported powers "
                         "drift from the t test's)")
    ap.add_argument("--power-only", action="store_true",
                    help="only the 2-agent power columns (gap, MDD, power, rep): half the time, for the many "
                         "campaigns a 5-point claim on power needs; the other columns print as nan")
    ap.add_argument("--resolve", action="store_true",
                    help="instead: what suites of these sizes resolve (detectable difference, problems 10 points need)")
    args = ap.parse_args(argv)
    if args.quick:
        vars(args).update(QUICK)
    sizes = [(int(a), int(b)) for a, b in (s.split("x") for s in args.sizes.split(","))]
    t0 = time.perf_counter()
    if args.resolve:
        resolve(args.models.split(","), sizes, args.campaigns, args.seed, lambda s: print(s, flush=True))
        print(f"({time.perf_counter() - t0:.0f} s)")
        return
    print(f"{args.campaigns} campaigns per row (8 identical agents for comp/pass/FWER; 2 agents for MDD/power)")
    run(args.models.split(","), sizes, args.campaigns, args.seed, args.resamples,
        lambda s: print(s, flush=True), not args.power_only, args.rounds)
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
