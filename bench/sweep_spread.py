"""Benchmark: do sweeps measure? The reference's 2-rank efficiency at the problems' declared
sweep sizes, repeated, with the bandwidth STREAM allows beside it.

    python bench/sweep_spread.py [--problems advection1d,darcy-dmplex] [--sweeps 3] [--repeats 3]

Runs `hpcbench sweep --agent reference --problems P --ranks 1,2 --repeats K` `--sweeps` times
(fresh folders; each measures the machine baseline, STREAM triad included, before its points)
and prints, per problem and declared size: the 2-rank strong-scaling efficiency of each sweep,
their median and spread ((max - min) / median; the target is under 10% on a quiet machine),
each point's own spread over its K repeats, and the speedup memory bandwidth allows at 2
ranks (stream(2) / stream(1) of the same sweep's baseline) beside the measured speedup. The
load average is printed before and after: figures taken on a loaded machine are noise."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def sweep(out: Path, problem: str, repeats: int) -> float:
    exe = Path(sys.executable).parent / "hpcbench"
    t0 = time.perf_counter()
    subprocess.run([str(exe), "sweep", "--agent", "reference", "--problems", problem, "--ranks", "1,2",
                    "--repeats", str(repeats), "--out", str(out)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    from hpcbench.report.scaling import bandwidth_speedup
    from hpcbench.sweep.tables import sweeps_of

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default="advection1d,darcy-dmplex")
    ap.add_argument("--sweeps", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at start; {a.sweeps} sweeps of "
          f"{a.repeats} repeats per point", flush=True)
    for problem in a.problems.split(","):
        eff: dict[int, list[tuple[float, float, float, float]]] = {}
        for k in range(a.sweeps):
            out = root / f"{problem}-{k}"
            took = sweep(out, problem, a.repeats)
            for sw in sweeps_of(out):
                for p in sw.analysis.points:
                    if p.agent == "reference" and p.mode == "strong" and p.ranks == 2 and p.status == "ok":
                        eff.setdefault(p.size, []).append((p.efficiency, p.spread, p.speedup,
                                                           bandwidth_speedup(sw, p.base_ranks, p.ranks)))
            print(f"  {problem} sweep {k + 1}: {took:.0f} s, load {os.getloadavg()[0]:.1f}", flush=True)
        for size, rows in sorted(eff.items()):
            effs = [r[0] for r in rows]
            med = statistics.median(effs)
            spread = (max(effs) - min(effs)) / med if med > 0 else float("nan")
            print(f"{problem} n={size}: 2-rank efficiency {', '.join(f'{e:.2f}' for e in effs)}; median {med:.2f}, "
                  f"spread over the sweeps {100 * spread:.0f}% ({'under' if spread < 0.10 else 'NOT under'} 10%); "
                  f"points' own spread {', '.join(f'{100 * r[1]:.0f}%' for r in rows)}; speedup "
                  f"{', '.join(f'{r[2]:.2f}' for r in rows)} where bandwidth allows "
                  f"{', '.join(f'{r[3]:.2f}' for r in rows)}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end; sweeps in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
