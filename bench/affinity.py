"""Benchmark: do runs that overlap in time get cores of their own?

    python bench/affinity.py [--site local|ci-slurm] [--copies 3] [--spin 0.4]

Writes `--copies` one-rank programs (the rosenbrock reference, which also prints the
`Cpus_allowed_list` line of its own /proc/self/status and spins `--spin` seconds so that the
runs overlap) as one submission tree, runs them with `hpcbench submit` through the real
pipeline (the local executor, or one packed allocation on the Slurm test cluster), and prints
for every instrumented and timing run: its start and end, the cores the program saw, and the
cores the job wrapper recorded (runs[].affinity, where the code records it). Then every pair of
runs that overlapped in time on a common core: with runs bound to cores of their own there is
none. It reads only the records, so it measures any version of hpcbench the same way (run it
with that version's Python)."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPIN = r"""
#include <stdio.h>
#include <string.h>
#include <time.h>
static void PrintAffinityAndSpin(double seconds)
{
  char line[512];
  FILE *f = fopen("/proc/self/status", "r");
  struct timespec t0, t;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "Cpus_allowed_list:", 18)) printf("program_cpus: %s", line + 19);
  if (f) fclose(f);
  fflush(stdout);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t); while ((t.tv_sec - t0.tv_sec) + 1e-9 * (t.tv_nsec - t0.tv_nsec) < seconds);
}
"""


def write_tree(root: Path, copies: int, spin: float) -> Path:
    ref = ROOT / "problems" / "rosenbrock" / "reference"
    src = (ref / "main.c").read_text()
    src = src.replace("#include <petsctao.h>", "#include <petsctao.h>\n" + SPIN, 1)
    init = re.search(r"  PetscCall\(PetscInitialize\([^\n]*\n", src)
    assert init, "rosenbrock's PetscInitialize line not found"
    src = src[:init.end()] + f"  PrintAffinityAndSpin({spin});\n" + src[init.end():]
    tree = root / "tree"
    for k in range(1, copies + 1):
        d = tree / "pinned" / "rosenbrock" / str(k)
        d.mkdir(parents=True)
        (d / "main.c").write_text(src)
        meta = json.loads((ref / "submission.json").read_text())
        (d / "submission.json").write_text(json.dumps({**meta, "agent": "pinned", "attempt": str(k)}))
    return tree


def parse_list(text: str) -> set[int]:
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if "-" in part:
            a, b = part.split("-")
            cpus.update(range(int(a), int(b) + 1))
        elif part.strip().isdigit():
            cpus.add(int(part))
    return cpus


def run_rows(out: Path) -> list[dict]:
    rows = []
    for p in sorted((out / "records").glob("*.json")):
        rec = json.loads(p.read_text())
        for r in rec.get("runs", []):
            if r["kind"] not in ("instrumented", "timing") or not r.get("started_at"):
                continue
            m = re.search(r"program_cpus: (\S+)", r.get("stdout", ""))
            recorded = ";".join(a.get("cpus", "?") for a in r.get("affinity", []) or [])
            rows.append({"agent": rec["agent"], "job": rec["attempt"], "kind": f"{r['kind']}{r['repeat']}",
                         "start": r["started_at"],
                         "end": r["started_at"] + r["wall_s"], "program": m.group(1) if m else "?",
                         "recorded": recorded or "-", "host": (r.get("hostnames") or ["?"])[0],
                         "command": " ".join(r["command"][:12])})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", default="local")
    ap.add_argument("--copies", type=int, default=3)
    ap.add_argument("--spin", type=float, default=0.4, help="seconds each run spins after printing its cores")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    root = Path(a.out or tempfile.mkdtemp(prefix="bench-affinity-"))
    tree = write_tree(root, a.copies, a.spin)
    out = root / "campaign"
    args = ["submit", "--site", a.site, "--submissions", str(tree), "--problems", "rosenbrock", "--out", str(out)]
    if a.site != "local":
        args += ["--pack", "--wait"]
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at start; {a.copies} copies", flush=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from hpcbench.cli import main; main()", *args], check=True,
                   stdout=subprocess.DEVNULL)
    print(f"submit took {time.perf_counter() - t0:.1f} s", flush=True)
    rows = [r for r in run_rows(out) if r["agent"] == "pinned"]  # the programs, not the reference
    t_first = min(r["start"] for r in rows)
    print(f"{'job':>3s} {'run':14s} {'start':>6s} {'end':>6s} {'program saw':>12s} {'recorded':>12s}  command")
    for r in sorted(rows, key=lambda r: r["start"]):
        print(f"{r['job']:>3s} {r['kind']:14s} {r['start'] - t_first:6.2f} {r['end'] - t_first:6.2f} "
              f"{r['program']:>12s} {r['recorded']:>12s}  {r['command']}")
    shared = [(x, y) for x, y in itertools.combinations(rows, 2)
              if x["job"] != y["job"] and x["host"] == y["host"] and x["start"] < y["end"] and y["start"] < x["end"]
              and parse_list(x["program"]) & parse_list(y["program"])]
    distinct = {r["program"] for r in rows}
    print(f"distinct Cpus_allowed_list values seen by the programs: {sorted(distinct)}")
    print(f"pairs of runs of different programs overlapping in time on a common core: {len(shared)}")
    for x, y in shared[:10]:
        print(f"  {x['job']}/{x['kind']} and {y['job']}/{y['kind']} on {x['program']} / {y['program']}, "
              f"overlap {min(x['end'], y['end']) - max(x['start'], y['start']):.2f} s")
    print(f"load average {os.getloadavg()[0]:.1f} at the end; campaign in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
