"""Benchmark: the CPU that processes waiting for core slots burn while they wait.

N processes wait for one slot that another process holds for T seconds (jobs/slots.CoreSlots),
then each takes it in turn; printed: the waiters' CPU seconds per second of waiting, with a
full look at every 20 ms poll (look_s 0: how it was) and with looks only on a change
(the default), side by side in one run, and how long the last waiter waited in each.

    python bench/slot_waiters.py [--waiters 12] [--hold 3]"""

from __future__ import annotations

import argparse
import fcntl
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WAITER = """
import sys, time
from pathlib import Path
from hpcbench.jobs.slots import CoreSlots
CoreSlots.look_s = float(sys.argv[2])
with CoreSlots(Path(sys.argv[1]), 1).hold(1):
    time.sleep(0.05)
"""


def trial(n: int, hold_s: float, look_s: float) -> tuple[float, float]:
    folder = Path(tempfile.mkdtemp(prefix="slot-waiters-"))
    fh = open(folder / "slot0", "a")  # noqa: SIM115 (held for the trial)
    fcntl.flock(fh, fcntl.LOCK_EX)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", WAITER, str(folder), str(look_s)]) for _ in range(n)]
    time.sleep(hold_s)
    fh.close()  # released without a word: as a holder killed outright
    for p in procs:
        p.wait()
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--waiters", type=int, default=12)
    ap.add_argument("--hold", type=float, default=3.0)
    a = ap.parse_args()
    base_cpu, _ = trial(a.waiters, 0.0, 0.25)  # startup and the turns alone, nothing to wait for
    print(f"{a.waiters} waiters, one slot held {a.hold:g} s (startup and turns alone: {base_cpu:.2f} CPU s)")
    rows = []
    for label, look in (("look at every poll (before)", 0.0), ("look on a change (now)", 0.25)):
        cpu, wall = trial(a.waiters, a.hold, look)
        waiting = max(cpu - base_cpu, 0.0)
        rows.append(waiting)
        print(f"  {label:28s} waiting CPU {waiting:6.2f} s = {waiting / a.hold:5.2f} cores, served in {wall:5.2f} s")
    if rows[1] > 0:
        print(f"  ratio before/now: {rows[0] / rows[1]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
