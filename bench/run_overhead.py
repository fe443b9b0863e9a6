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

import h5py


def main() -> int:
    out = Path(tempfile.mkdtemp()) / "bench"
    exe = Path(sys.executable).parent / "hpcbench"
    t0 = time.perf_counter()
    subprocess.run([str(exe), "run", "--agent", "reference", "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    cores = os.cpu_count() or 1
    busy = 0.0
    rows = []
    with h5py.File(out / "campaign.h5") as f:
        for pid, g in f["submissions/reference"].items():
            s = g["1"]
            busy += float(s["build"].attrs["wall_s"]) + sum(float(r.attrs["wall_s"]) for r in s["runs"].values())
            for t in s["timings"][()] if "timings" in s else []:
                petsc = float(t["petsc_time_median_s"])
                rows.append((pid, t["case"].decode(), int(t["ranks"]), float(t["exec_s"]), petsc,
                             float(t["null_median_s"])))
    print(f"wall {wall:.1f} s; build+run seconds in store {busy:.1f} s on {cores} cores")
    print(f"ratio wall / (busy/cores) = {wall / (busy / cores):.2f}  (target <= 1.15)")
    print(f"{'problem':14s} {'case':8s} ranks  exec_s   petsc_s  null_s  exec/petsc")
    for pid, case, ranks, ex, petsc, null in rows:
        print(f"{pid:14s} {case:8s} {ranks:5d}  {ex:7.4f}  {petsc:7.4f}  {null:6.3f}  {ex / petsc:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
