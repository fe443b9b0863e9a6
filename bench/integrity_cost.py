"""Benchmark: what the run-time integrity checks cost `hpcbench run` (no arguments: the
references and the sample agents on every supported problem). Times the command of two
checkouts, alternating (A B A B ...) so drift in the machine's load hits both, and prints
each wall time, the median ratio after/before, and per run kind the median wall of the
runs in each store (the per-run cost: fresh folders, held files, -malloc_view, the checks).

    python bench/integrity_cost.py --before /path/to/before/venv/bin/hpcbench [--pairs 2]

The "after" command is this interpreter's hpcbench. A before checkout without a venv of its
own: `git archive <commit> | tar -x -C DIR`, copy this venv beside it and
`pip install --no-deps -e DIR` into the copy (as docs/security.md's figures were made).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hpcbench.store import tables


def _run(exe: str, out: Path) -> tuple[float, int]:
    """Wall seconds and exit status (1 when a problem lost its reference, e.g. a run past its
    time limit on a loaded machine: the time is still the command's)."""
    t0 = time.perf_counter()
    rc = subprocess.run([exe, "run", "--out", str(out)], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode
    return time.perf_counter() - t0, rc


def _kinds(out: Path) -> dict[str, float]:
    runs = tables(out / "campaign.h5")["runs"]
    return {str(k): float(statistics.median(g.wall_s.astype(float))) for k, g in runs.groupby("kind")}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="the hpcbench executable of the checkout to compare with")
    ap.add_argument("--pairs", type=int, default=2)
    args = ap.parse_args()
    after = str(Path(sys.executable).parent / "hpcbench")
    tmp = Path(tempfile.mkdtemp(prefix="integrity-bench-"))
    walls: dict[str, list[float]] = {"before": [], "after": []}
    kinds: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for i in range(args.pairs):
        for name, exe in (("before", args.before), ("after", after)):
            out = tmp / f"{name}-{i}"
            wall, rc = _run(exe, out)
            walls[name].append(wall)
            kinds[name].append(_kinds(out))
            print(f"{name:6s} pair {i}: {wall:7.1f} s  exit {rc}  load {os.getloadavg()[0]:.1f}", flush=True)
    ratios = [a / b for a, b in zip(walls["after"], walls["before"], strict=True)]
    print(f"median wall: before {statistics.median(walls['before']):.1f} s, after "
          f"{statistics.median(walls['after']):.1f} s; after/before per pair {[f'{r:.3f}' for r in ratios]}, "
          f"median {statistics.median(ratios):.3f} (target <= 1.05; `run` itself under 300 s)")
    for kind in sorted({k for d in kinds["before"] + kinds["after"] for k in d}):
        b = [d[kind] for d in kinds["before"] if kind in d]
        a = [d[kind] for d in kinds["after"] if kind in d]
        if a and b:
            print(f"  {kind:12s} median run wall: before {statistics.median(b):.3f} s, "
                  f"after {statistics.median(a):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
