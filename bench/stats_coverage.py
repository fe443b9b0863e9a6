"""Coverage of the leaderboard's 95% intervals (hpcbench.stats) on synthetic campaigns
whose truth is known: how often the interval holds it, for an agent's mean and for the
paired difference of two agents, against the alternatives the choice was made over.

    .venv/bin/python bench/stats_coverage.py [--campaigns 2000] [--resamples 4000] [--seed 1]
        [--models normal,problems,pass/fail] [--sizes 1x6,6x3,10x3]

Campaigns: two agents (true means 60 and 55) on P problems with n attempts each.
`normal`: score = mean + problem effect (sd 10) + agent-by-problem (sd 5) + attempt (sd 20);
`problems`: the same with sd 10 / 10 / 5 (problems vary more than attempts);
`pass/fail`: each attempt right (100) or wrong (50), P(right) = logistic of a latent like the
above on the logit scale, the way composites of real attempts split. Methods:
`chosen` = the shipped one (P >= 6: problems drawn, each keeping its attempts, estimate +-
t(P-1) x the bootstrap standard error x sqrt(P/(P-1)); below 6: attempts drawn within fixed
problems, percentile); `two-stage` = problems then attempts both drawn with replacement,
percentile; `cluster-pct` = problems drawn, plain percentile; `expanded-pct` = the same at
Hesterberg's expanded levels; `t` = Student t on problem means. Below 6 problems the truth is
the mean on these problems (what that interval claims); from 6 up, on problems like these."""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from hpcbench.stats import intervals
from hpcbench.stats.intervals import PROBLEMS, THESE, Settings

MU = np.array([60.0, 55.0])
MODELS = {"normal": (10.0, 5.0, 20.0), "problems": (10.0, 10.0, 5.0), "pass/fail": (0.8, 0.5, 0.0)}


def campaigns(model: str, c: int, p: int, n: int,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values (c, 2, p, n), truth over problems like these (2,), truth on these problems (c, 2))."""
    sb, sg, se = MODELS[model]
    b = rng.normal(0, sb, (c, 1, p, 1))
    g = rng.normal(0, sg, (c, 2, p, 1))
    if model != "pass/fail":
        lat = MU[None, :, None, None] + b + g
        return lat + rng.normal(0, se, (c, 2, p, n)), MU.copy(), lat[..., 0].mean(axis=2)
    logit = np.log(MU / (100 - MU))[None, :, None, None] / 1.5 + b + g  # P(right) near 0.6 and 0.55
    pr = 1 / (1 + np.exp(-logit))
    vals = np.where(rng.random((c, 2, p, n)) < pr, 100.0, 50.0)
    big = rng.normal(0, 1, (400_000, 2))
    lat_pop = np.log(MU / (100 - MU))[None, :] / 1.5 + sb * big[:, :1] + sg * big
    truth = 50 + 50 / (1 + np.exp(-lat_pop))
    return vals, truth.mean(axis=0), 50 + 50 * pr[..., 0].mean(axis=2)


def covered(lo: np.ndarray, hi: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean((lo <= truth) & (truth <= hi)))


def chosen(vals: np.ndarray, settings: Settings, rng: np.random.Generator) -> tuple[list, str]:
    c, _, p, n = vals.shape
    kind, _ = intervals.scope([n] * p, settings)
    per = [[vals[:, a, j, :] for j in range(p)] for a in (0, 1)]
    out = []
    for a in (0, 1):
        lo, hi, _ = intervals.mean_bounds(per[a], kind, settings, rng)
        out.append((lo, hi))
    lo, hi, _ = intervals.paired_bounds(per[0], per[1], kind, settings, rng)
    return out + [(lo, hi)], kind


def alternatives(vals: np.ndarray, settings: Settings, rng: np.random.Generator) -> dict[str, list]:
    c, _, p, n = vals.shape
    means = vals.mean(axis=3)  # (c, 2, p)
    series = [means[:, 0], means[:, 1], means[:, 0] - means[:, 1]]
    out: dict[str, list] = {"two-stage": [], "cluster-pct": [], "expanded-pct": [], "t": []}
    expanded = 1 - 2 * float(stats.norm.sf(stats.t.ppf(0.975, p - 1) * np.sqrt(p / (p - 1))))
    for s in series:
        for name, level in (("cluster-pct", 0.95), ("expanded-pct", expanded)):
            ci = stats.bootstrap((s,), np.mean, n_resamples=settings.resamples, vectorized=True, axis=-1,
                                 method="percentile", confidence_level=level, rng=rng).confidence_interval
            out[name].append((ci.low, ci.high))
        m, se = s.mean(axis=1), s.std(axis=1, ddof=1) / np.sqrt(p)
        q = stats.t.ppf(0.975, p - 1)
        out["t"].append((m - q * se, m + q * se))
    b = min(settings.resamples, 2000)
    two: list[list[np.ndarray]] = [[], []]
    step = max(1, 20_000_000 // (b * p * n))
    for lo in range(0, c, step):  # the same problems for both agents, then each agent's attempts
        idx = rng.integers(0, p, (min(step, c - lo), b, p))
        for a in (0, 1):
            chunk = vals[lo:lo + step, a][:, None, :, :]
            picked = np.take_along_axis(chunk, np.repeat(idx[..., None], n, axis=3), axis=2)
            att = rng.integers(0, n, picked.shape)
            two[a].append(np.take_along_axis(picked, att, axis=3).mean(axis=(2, 3)))
    ta, tb = np.concatenate(two[0]), np.concatenate(two[1])
    for d in (ta, tb, ta - tb):
        out["two-stage"].append(tuple(np.quantile(d, [0.025, 0.975], axis=-1)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--campaigns", type=int, default=2000)
    ap.add_argument("--resamples", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated: " + ", ".join(MODELS))
    ap.add_argument("--sizes", default="1x6,1x10,3x6,5x6,6x3,6x6,10x3,20x3,40x3",
                    help="comma-separated PxN: problems x attempts")
    args = ap.parse_args()
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    settings = Settings(resamples=args.resamples)
    rng = np.random.default_rng(args.seed)
    print(f"{args.campaigns} campaigns per row, {args.resamples} resamples; coverage of agent A, agent B, A-B")
    print(f"{'model':10s} {'P':>3s} {'n':>3s}  {'scope':15s} {'chosen':>20s} {'two-stage':>20s} "
          f"{'cluster-pct':>20s} {'expanded-pct':>20s} {'t':>20s}")
    t0 = time.perf_counter()
    for model in args.models.split(","):
        for p, n in sizes:
            vals, pop, these = campaigns(model, args.campaigns, p, n, rng)
            iv, kind = chosen(vals, settings, rng)
            truth = [pop[0], pop[1], pop[0] - pop[1]] if kind == PROBLEMS else [
                these[:, 0], these[:, 1], these[:, 0] - these[:, 1]]
            cells = [" ".join(f"{covered(lo, hi, t):.3f}" for (lo, hi), t in zip(iv, truth))]
            if kind == PROBLEMS:
                alt = alternatives(vals, settings, rng)
                cells += [" ".join(f"{covered(lo, hi, t):.3f}" for (lo, hi), t in zip(alt[m], truth))
                          for m in ("two-stage", "cluster-pct", "expanded-pct", "t")]
            else:
                cells += ["-", "-", "-", "-"]
            label = kind if kind != THESE else "these problems"
            print(f"{model:10s} {p:3d} {n:3d}  {label:15s} " + " ".join(f"{x:>20s}" for x in cells), flush=True)
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
