"""`hpcbench run` beside a load generator (issue 34): every problem scored, the references GOLD?

Starts N busy processes (default 8: eight runnable processes beside the run on this 2-core
machine, at the same priority as the run), runs `hpcbench run` with the arguments given
after `--` (none: the embedded default), samples the load average every 10 s, then reads the
campaign's report and prints, per problem, whether it was scored and the reference's tier and
stage, and the wall time. Exit 0 only when every problem was scored and every reference is GOLD.

    python bench/run_under_load.py --busy 8 --out /tmp/load-run
    python bench/run_under_load.py --busy 0 --out /tmp/quiet-run     # the same, quiet
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HPCBENCH = ROOT / ".venv" / "bin" / "hpcbench"
# what a reference lost to load leaves unscored ("no reference: ... stopped (timeout ...)"): its
# own metrics' status (a row's `unscored` also lists what the problem's composites leave out for
# every submission, and the LLM judges, unscored without a provider whatever the load)
METRICS = {"numerical_accuracy", "execution_time", "peak_memory"}


def _busy(n: int) -> list[subprocess.Popen]:
    # a shell loop: runnable all the time, no memory, no I/O
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True) for _ in range(n)]


class _Load(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(10.0):
            self.samples.append(os.getloadavg()[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--busy", type=int, default=8, help="busy processes beside the run")
    ap.add_argument("--out", required=True, help="campaign folder (must not exist)")
    ap.add_argument("rest", nargs="*", help="arguments of `hpcbench run` (after --)")
    ap.add_argument("--report-only", action="store_true", help="read the campaign at --out (already run)")
    a = ap.parse_args()
    if a.report_only:
        return _report(a.out, None, 0.0, a.busy, [])
    hogs, load = _busy(a.busy), _Load()
    load.start()
    t0 = time.monotonic()
    try:
        proc = subprocess.run([str(HPCBENCH), "run", "--out", a.out, *a.rest], cwd=ROOT)
    finally:
        wall = time.monotonic() - t0
        load.stop.set()
        for h in hogs:
            h.kill()
    return _report(a.out, proc.returncode, wall, a.busy, load.samples)


def _report(out: str, rc: int | None, wall: float, busy: int, samples: list[float]) -> int:
    report = subprocess.run([str(HPCBENCH), "report", out, "--format", "json"], capture_output=True, text=True)
    rows = json.loads(report.stdout)["submissions"] if report.returncode == 0 else []
    refs = {r["problem"]: r for r in rows if r["agent"] == "reference"}
    problems = sorted({r["problem"] for r in rows})
    if rc is not None:
        median = statistics.median(samples or [0.0])
        print(f"\nhpcbench run exit {rc}; wall {wall:.1f} s; {busy} busy processes; load average "
              f"(1 min, every 10 s) median {median:.1f}, max {max(samples, default=0):.1f}")
    print(f"{'problem':26s} {'reference tier':15s} {'stage':22s} {'composite':>9s}  reference's unscored metrics")
    ok = rc in (0, None) and bool(problems)
    for p in problems:
        ref = refs.get(p, {})
        refused = ref.get("stage") == "refused"  # a refusal problem: the reference declines, no tier
        evs = ref.get("evaluators", {})
        unscored = sorted(m for m in METRICS if m in evs and evs[m].get("status") != "scored")
        print(f"{p:26s} {str(ref.get('tier') or '-'):15s} {str(ref.get('stage', '-')):22s} "
              f"{_num(ref.get('composite')):>9s}  {', '.join(unscored) or '-'}")
        ok = ok and (refused or (ref.get("tier") == "GOLD" and not unscored))
    print("every problem scored, every reference GOLD" if ok else "NOT every problem scored with a GOLD reference")
    return 0 if ok else 1


def _num(x: object) -> str:
    return f"{x:.3f}" if isinstance(x, float) else "-"


if __name__ == "__main__":
    sys.exit(main())
