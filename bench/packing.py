"""Benchmark: packed allocations. Scheduler calls per campaign and per sweep, and how close a
packed allocation's wall time comes to the work its builds and runs did.

    python bench/packing.py [--problems P,Q] [--modes local,unpacked,packed,sweep] [--repeats K]

Modes, each a fresh campaign of the references, measured in this one run:
  local              `submit --site local` (the core slots: what --pack means locally)
  slurm unpacked     `submit --site ci-slurm --no-pack --wait`: job arrays, one task per job
  slurm packed       `submit --site ci-slurm --pack --wait`: one allocation, runs as srun --exact steps
  slurm sweep packed sweep-shaped jobs (each reference's first case at 1, 2 and 4 ranks, one job per
                     program, as `hpcbench sweep` plans them) through the same executor API, packed
The Slurm modes need the test cluster up (scripts/slurm-test-cluster.sh start) and SLURM_CONF set.

Printed per mode: scheduler calls (sbatch invocations in the ledger; target 1 per variant when
packed), wall time of the command, and wall / (core-seconds / cores), where core-seconds sum
every build (one core) and every run (min(ranks, cores) cores) from the records: the measure
bench/run_overhead.py uses (target <= 1.15 packed). Beside it the same ratio over *distinct*
busy cores: at every moment the cores that some build or run really occupied, a core shared by
two runs counted once (the other run's share is idle time, not work). Where a record says which
CPUs each run was on (runs[].affinity, builds' cpus) that is used; records without (written
before runs were bound) are read as Open MPI 4.1 places them (mpirun(1): a job of <= 2 ranks
bound to cores from core 0, a wider one and every build not bound: they take free cores). Under
each row, where the idle core-seconds went (from the start time and the wait for cores that
every build and run records). Under
Slurm the wall time includes the queue wait of an idle cluster. Figures on a loaded machine are
noisy: compare modes of one run.
With --repeats K every mode runs K times (fresh campaigns) and a median line follows: one
packed campaign's ratio varies by about +-0.05 between runs on this 2-core machine."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_PROBLEMS = "advection1d,cavity-dmstag,darcy-dmplex,robertson,rosenbrock,vec-scatter"


def records(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]


def steps(recs: list[dict], cores: int) -> list[tuple[dict, int]]:
    """Every build (one core) and run (min(ranks, cores) cores) of the records, with its width."""
    return [(s, w) for rec in recs
            for s, w in ([(rec["build"], 1)] if rec.get("build") else [])
            + [(r, min(r["ranks"], cores)) for r in rec.get("runs", [])]]


def core_seconds(recs: list[dict], cores: int) -> tuple[float, int, int]:
    """(build and run core-seconds from the records, records, runs)."""
    total = sum(s["wall_s"] * w for s, w in steps(recs, cores))
    return total, len(recs), sum(len(rec.get("runs", [])) for rec in recs)


def cpu_sets(recs: list[dict], cores: int) -> list[tuple[float, float, frozenset, int]]:
    """Every build and run as (start, end, the CPUs it was bound to, cores it floats on)."""
    out = []
    for rec in recs:
        b = rec.get("build")
        if b and b.get("started_at"):
            bound = frozenset(_cpus(b.get("cpus", "")))
            out.append((b["started_at"], b["started_at"] + b["wall_s"], bound, 0 if bound else 1))
        for r in rec.get("runs", []):
            if not r.get("started_at"):
                continue
            seen = frozenset(c for a in r.get("affinity") or [] for c in _cpus(a.get("cpus", ""))) \
                or frozenset(_cpus((r.get("placement") or {}).get("cpus", "")))
            if not seen and "affinity" not in r and r["ranks"] <= 2:  # Open MPI's default: bound from core 0
                seen = frozenset(range(min(r["ranks"], cores)))
            out.append((r["started_at"], r["started_at"] + r["wall_s"], seen, 0 if seen else min(r["ranks"], cores)))
    return out


def _cpus(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        if lo.isdigit():
            out += range(int(lo), int(hi or lo) + 1)
    return out


def distinct_core_seconds(recs: list[dict], cores: int) -> float:
    """Core-seconds of distinct busy cores: a core two steps shared counts once."""
    steps = cpu_sets(recs, cores)
    edges = sorted({x for s in steps for x in s[:2]})
    total = 0.0
    for a, b in zip(edges, edges[1:]):
        mid = (a + b) / 2
        live = [s for s in steps if s[0] <= mid < s[1]]
        bound = frozenset().union(*(s[2] for s in live)) if live else frozenset()
        total += min(cores, len(bound) + sum(s[3] for s in live)) * (b - a)
    return total


def intervals(recs: list[dict], cores: int) -> tuple[list[tuple[float, float, int]], list[tuple[float, float]]]:
    """Every build and run as (start, end, cores) and every wait for cores as (start, end),
    from the records' started_at and slot_wait_s (Unix times)."""
    busy, waits = [], []
    for step, width in steps(recs, cores):
        t = step.get("started_at", 0.0)
        if t > 0:
            busy.append((t, t + step["wall_s"], width))
            if step.get("slot_wait_s", 0.0) > 0:
                waits.append((t - step["slot_wait_s"], t))
    return busy, waits


def idle_breakdown(recs: list[dict], cores: int, t0: float, t1: float) -> str:
    """Where the cores sat idle during [t0, t1]: before the first build or run and after the last
    (planning, sbatch, queue wait, polling, collecting), and between them split by whether a
    build or run was waiting for cores then (a wide run waiting for a narrow one to finish)
    or nothing was (jobs' own Python between steps, start-up of the job processes)."""
    busy, waits = intervals(recs, cores)
    if not busy:
        return "   (no start times in the records)"
    first, last = min(b[0] for b in busy), max(b[1] for b in busy)
    edges = sorted({first, last, *(x for b in busy for x in b[:2]), *(x for w in waits for x in w)})
    waiting_idle = free_idle = 0.0
    for a, b in zip(edges, edges[1:]):
        if a < first or b > last:
            continue
        mid = (a + b) / 2
        used = sum(c for s, e, c in busy if s <= mid < e)
        idle = max(0, cores - used) * (b - a)
        if any(s <= mid < e for s, e in waits):
            waiting_idle += idle
        else:
            free_idle += idle
    outside = cores * ((first - t0) + (t1 - last))
    return (f"   idle core-s: {outside:.0f} before/after the runs, {waiting_idle:.0f} while a step waited "
            f"for cores, {free_idle:.0f} with none waiting")


def submit_calls(out: Path) -> int:
    p = out / "scheduler" / "ledger.json"
    return json.loads(p.read_text())["submit_calls"] if p.is_file() else 0


def run_cli(*args: str) -> tuple[float, float]:
    """(Unix time at the start, wall seconds) of one hpcbench command."""
    exe = Path(sys.executable).parent / "hpcbench"
    start, t0 = time.time(), time.perf_counter()
    subprocess.run([str(exe), *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return start, time.perf_counter() - t0


def sweep_shaped(out: Path, problems: str) -> tuple[float, float]:
    """Plan the references like a campaign, turn each job into a sweep's (first case at 1, 2, 4
    ranks, one timed repeat), and submit them packed through the executor API; wait."""
    from hpcbench.executors import executor_for
    from hpcbench.pipeline import plan_campaign
    from hpcbench.plan.options import RunOptions
    from hpcbench.site import load_site

    site = load_site("ci-slurm")
    planned = plan_campaign(out, site, RunOptions(agents=["reference"], problems=problems))
    campaign, plan = planned.campaign, planned.plan
    jobs = []
    for j in plan.jobs:
        first = j.runs[0]
        runs = [first.model_copy(update={"case": f"{first.case}-r{r}", "ranks": r}) for r in (1, 2, 4)]
        spec = j.model_copy(update={"runs": runs, "valgrind": False, "timing_repeats": 1, "cores": 2})
        (campaign.specs_dir / f"{spec.job_id}.json").write_text(spec.model_dump_json(indent=1))
        jobs.append(spec)
    start, t0 = time.time(), time.perf_counter()
    ex = executor_for(site, campaign, pack=True, baseline_ranks=[1, 2, 4])
    ex.submit(jobs)
    ex.wait(jobs, poll_s=1.0)
    return start, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default=DEFAULT_PROBLEMS)
    ap.add_argument("--modes", default="local,unpacked,packed,sweep",
                    help="which of local, unpacked, packed, sweep to run (default: all)")
    ap.add_argument("--no-slurm", action="store_true", help="leave out the Slurm modes")
    ap.add_argument("--no-local", action="store_true", help="leave out the local mode")
    ap.add_argument("--repeats", type=int, default=1, help="run every mode K times; print each and the median")
    a = ap.parse_args()
    chosen = set(a.modes.split(",")) - ({"unpacked", "packed", "sweep"} if a.no_slurm else set()) \
        - ({"local"} if a.no_local else set())
    if unknown := chosen - {"local", "unpacked", "packed", "sweep"}:
        ap.error(f"--modes: unknown {', '.join(sorted(unknown))} (known: local, unpacked, packed, sweep)")
    cores = os.cpu_count() or 1
    root = Path(tempfile.mkdtemp(prefix="bench-packing-"))
    modes = []
    if "local" in chosen:
        modes.append(("local", ["submit", "--site", "local", "--problems", a.problems]))
    if "unpacked" in chosen:
        modes.append(("slurm unpacked", ["submit", "--site", "ci-slurm", "--no-pack", "--wait", "--problems",
                                         a.problems]))
    if "packed" in chosen:
        modes.append(("slurm packed", ["submit", "--site", "ci-slurm", "--pack", "--wait", "--problems",
                                       a.problems]))
    print(f"{cores} cores; problems {a.problems}; load average {os.getloadavg()[0]:.1f} at start")
    print(f"{'mode':20s} {'jobs':>4s} {'runs':>5s} {'sched calls':>11s} {'wall s':>7s} {'core-s':>7s} "
          f"{'wall/(core-s/cores)':>19s} {'distinct core-s':>15s} {'wall/(distinct/cores)':>21s}")
    def row(name: str, out: Path, timed: tuple[float, float], ratios: list[float], note: str = "") -> None:
        start, wall = timed
        recs = records(out)
        cs, n_rec, n_runs = core_seconds(recs, cores)
        ratios.append(wall / (cs / cores))
        distinct = distinct_core_seconds(recs, cores)
        print(f"{name:20s} {n_rec:4d} {n_runs:5d} {submit_calls(out):11d} {wall:7.1f} {cs:7.1f} "
              f"{ratios[-1]:19.2f} {distinct:15.1f} {wall / (distinct / cores):21.2f}{note}", flush=True)
        print(idle_breakdown(recs, cores, start, start + wall), flush=True)

    def median(name: str, ratios: list[float]) -> None:
        if len(ratios) > 1:
            print(f"{name + ' median':38s} of {len(ratios)} runs {'':25s}{statistics.median(ratios):13.2f}"
                  f"   ({min(ratios):.2f}-{max(ratios):.2f})", flush=True)

    for name, args in modes:
        ratios: list[float] = []
        for k in range(a.repeats):
            out = root / f"{name.replace(' ', '-')}-{k}"
            row(name, out, run_cli(*args, "--out", str(out)), ratios)
        median(name, ratios)
    if "sweep" in chosen:
        ratios = []
        for k in range(a.repeats):
            out = root / f"slurm-sweep-{k}"
            timed = sweep_shaped(out, a.problems)
            base = out / "machine" / "baseline-cpu.json"
            row("slurm sweep packed", out, timed, ratios, f"   baseline: {'written' if base.is_file() else 'MISSING'}")
        median("slurm sweep packed", ratios)
    print(f"load average {os.getloadavg()[0]:.1f} at the end; campaigns in {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
