"""Benchmark: deterministic scoring throughput (submissions per second).

`hpcbench score` runs on a login node over a whole campaign, so its cost per
submission matters once campaigns hold thousands of attempts. This builds a
SYNTHETIC campaign of at least --min-submissions submissions by replicating
the staged submissions and real job records of a campaign folder (agents renamed
`<agent>-rNNNN`, bench/store_scale.py), collects it, then scores it with every deterministic evaluator (no judge
configured: the LLM evaluators return unscored at once) and prints:

- submissions/s for reading campaign.h5, for evaluating, for writing /scores,
  and end to end (`hpcbench.score.scoring.score`);
- time per evaluator per submission, slowest first.

Each replica's C sources get a distinct trailing comment so the parser cache
(csource.analyse_source is lru-cached on the source text) does not turn replicas into
free hits: every replica is really parsed.

Usage: python bench/score_throughput.py [CAMPAIGN_DIR] [--min-submissions 200]
Without CAMPAIGN_DIR it first runs `hpcbench run --agent reference --agent samples`
into a temporary folder (a few minutes) to have real records to replicate."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def replicate(src: Path, dst: Path, min_subs: int) -> int:
    """A campaign folder of >= min_subs submissions replicated from `src`'s staged
    submissions and real records (bench/store_scale.py's replication), collected."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from store_scale import build

    from hpcbench.plan.campaign import Campaign
    from hpcbench.store import collect

    dst.mkdir(parents=True)
    n, _ = build(src, dst, min_subs)
    collect(Campaign(dst))
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("campaign", nargs="?", help="a collected campaign folder (default: run one)")
    ap.add_argument("--min-submissions", type=int, default=200)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hpcbench-throughput-"))
    if args.campaign:
        src = Path(args.campaign)
    else:
        exe = Path(sys.executable).parent / "hpcbench"
        subprocess.run([str(exe), "run", "--agent", "reference", "--agent", "samples", "--out", str(tmp / "real")],
                       check=True, stdout=subprocess.DEVNULL)
        src = tmp / "real"
    if not (src / "records").is_dir():
        raise SystemExit(f"{src}: not a campaign folder with records")
    n = replicate(src, tmp / "synthetic", args.min_submissions)
    synth = tmp / "synthetic" / "campaign.h5"
    print(f"synthetic campaign: {n} submissions replicated from the stored records of {src} into {synth}")

    from hpcbench.evaluators.base import all_evaluators
    from hpcbench.score import scoring
    from hpcbench.store import read_campaign

    t0 = time.perf_counter()
    stored = read_campaign(synth)
    t_read = time.perf_counter() - t0

    # time each evaluator by wrapping its evaluate()
    spent: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    originals = {}
    for cls in {type(e) for e in all_evaluators()}:
        originals[cls] = cls.evaluate

        def timed(self, ctx, _orig=cls.evaluate):
            t = time.perf_counter()
            try:
                return _orig(self, ctx)
            finally:
                spent[self.name] += time.perf_counter() - t
                calls[self.name] += 1
        cls.evaluate = timed
    t0 = time.perf_counter()
    scores = scoring.score_campaign(stored)
    t_eval = time.perf_counter() - t0
    for cls, orig in originals.items():
        cls.evaluate = orig
    t0 = time.perf_counter()
    scoring.write_scores(synth, "bench-write", scores, {"bench": True})
    t_write = time.perf_counter() - t0  # scores/bench-write.h5 beside campaign.h5
    t0 = time.perf_counter()
    scoring.score(synth, "bench-end-to-end")
    t_all = time.perf_counter() - t0

    print(f"read campaign.h5   {t_read:7.2f} s  {n / t_read:8.1f} submissions/s")
    print(f"evaluate           {t_eval:7.2f} s  {n / t_eval:8.1f} submissions/s  (deterministic evaluators, no judge)")
    print(f"write scoring     {t_write:7.2f} s  {n / t_write:8.1f} submissions/s")
    print(f"hpcbench score     {t_all:7.2f} s  {n / t_all:8.1f} submissions/s  (end to end, one process)")
    print("per evaluator (ms per call, slowest first):")
    for name, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:26s} {1000 * s / max(1, calls[name]):8.2f} ms  x {calls[name]}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
