"""Benchmark: what the sandbox costs a campaign. Runs `hpcbench run --agent reference`
on a few problems with the local site as is (isolation bwrap) and with `isolation:
none`, alternating (A B A B ...) so that drift in the machine's load hits both, and
prints each wall time and the median ratio bwrap / none.

    python bench/sandbox_campaign.py [--problems vec-scatter,rosenbrock] [--pairs 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hpcbench.site import site_configs_dir


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", default="vec-scatter,rosenbrock")
    ap.add_argument("--pairs", type=int, default=2)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sandbox-bench-"))
    local = (site_configs_dir() / "local.yaml").read_text()
    sites = {"bwrap": tmp / "bwrap.yaml", "none": tmp / "none.yaml"}
    sites["bwrap"].write_text(local)
    sites["none"].write_text(local.replace("\nisolation: bwrap", "\nisolation: none"))
    exe = Path(sys.executable).parent / "hpcbench"
    walls: dict[str, list[float]] = {"bwrap": [], "none": []}
    for i in range(args.pairs):
        for level, site in sites.items():
            t0 = time.perf_counter()
            subprocess.run([str(exe), "run", "--agent", "reference", "--problems", args.problems, "--site", str(site),
                            "--out", str(tmp / f"{level}{i}")], check=True, capture_output=True)
            walls[level].append(time.perf_counter() - t0)
            print(f"{level:6s} pair {i}: {walls[level][-1]:.1f} s", flush=True)
    ratios = [b / n for b, n in zip(walls["bwrap"], walls["none"])]
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(f"median wall: bwrap {med['bwrap']:.1f} s, none {med['none']:.1f} s;"
          f" pairwise ratio bwrap/none: median {statistics.median(ratios):.3f} (each: "
          f"{', '.join(f'{r:.3f}' for r in ratios)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
