"""Benchmark: how much of `hpcbench run --agent reference` is the programs themselves.

Prints, from one fresh run measured here:
- wall time of the whole command over (sum of build + run seconds in the store / cores used)
  (target <= 1.15: the driver, collection and scoring add little);
- per reference and case, the reported execution time over PETSc's own -log_view time
  (target <= 1.1: the time metric measures the program, not the launcher).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hpcbench.store import tables


def main() -> int:
    out = Path(tempfile.mkdtemp()) / "bench"
    exe = Path(sys.executable).parent / "hpcbench"
    t0 = time.perf_counter()
    subprocess.run([str(exe), "run", "--agent", "reference", "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    cores = os.cpu_count() or 1
    busy = core_s = 0.0
    rows = []
    t = tables(out / "campaign.h5")
    subs = t["submissions"]
    for sub in subs[(subs.agent == "reference") & (subs.builds_n > 0)].itertuples():
        pid = sub.problem  # refusal problems have no build: nothing built or run
        build_s = float(t["builds"][t["builds"].sub_id == sub.sub_id].wall_s.iloc[0])
        mine = t["runs"][t["runs"].sub_id == sub.sub_id]
        runs = list(zip(mine.wall_s.astype(float), mine.ranks.astype(int), strict=True))
        busy += build_s + sum(w for w, _ in runs)
        # a run of r ranks keeps min(r, cores) cores busy; a build keeps one
        core_s += build_s + sum(w * min(n, cores) for w, n in runs)
        for tm in t["timings"][t["timings"].sub_id == sub.sub_id].itertuples():
            rows.append((pid, tm.case, int(tm.ranks), float(tm.exec_s), float(tm.petsc_time_median_s),
                         float(tm.wall_minus_null_s), tm.exec_source))
    print(f"wall {wall:.1f} s; build+run seconds in store {busy:.1f} s, core-seconds {core_s:.1f}, {cores} cores")
    print(f"ratio wall / (busy/cores)       = {wall / (busy / cores):.2f}  (target <= 1.15)")
    print(f"ratio wall / (core-seconds/cores) = {wall / (core_s / cores):.2f}  (runs weighted by the cores they hold)")
    print(f"{'problem':14s} {'case':9s} ranks  exec_s   petsc_s  wall-null  exec/petsc  (wall-null)/petsc  source")
    worst = 0.0
    for pid, case, ranks, ex, petsc, wmn, src in rows:
        worst = max(worst, ex / petsc)
        print(f"{pid:14s} {case:9s} {ranks:5d}  {ex:7.4f}  {petsc:7.4f}  {wmn:9.4f}  {ex / petsc:10.2f}  "
              f"{wmn / petsc:17.2f}  {src}")
    print(f"largest exec/petsc ratio: {worst:.2f}  (target <= 1.1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
