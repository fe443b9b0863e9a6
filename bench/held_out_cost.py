"""What the held-out cases cost `hpcbench run` (no arguments): the command's wall time, and,
within the same campaign (same machine, same load), the seconds of its runs at held-out cases
against all its runs: the share that does not depend on how loaded the machine is.

    python bench/held_out_cost.py                 # a fresh `hpcbench run`, then its figures
    python bench/held_out_cost.py --campaign C    # the figures of a campaign already run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def figures(campaign: Path) -> dict:
    by: dict[str, float] = {"held_out": 0.0, "public": 0.0}
    runs = {"held_out": 0, "public": 0}
    core_s = 0.0
    for rec in sorted((campaign / "records").glob("*.json")):
        d = json.loads(rec.read_text())
        for r in d.get("runs", []):
            kind = "held_out" if r["case"].startswith("held-out-") else "public"
            by[kind] += r["wall_s"]
            runs[kind] += 1
            core_s += r["wall_s"] * r["ranks"]
        core_s += (d.get("build") or {}).get("wall_s", 0.0)
    total = by["held_out"] + by["public"]
    return {"runs_public": runs["public"], "runs_held_out": runs["held_out"],
            "run_s_public": round(by["public"], 1), "run_s_held_out": round(by["held_out"], 1),
            "held_out_share_of_run_s": round(by["held_out"] / total, 4) if total else 0.0,
            "core_s_builds_and_runs": round(core_s, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--campaign", help="a campaign already run (default: run one now)")
    args = ap.parse_args()
    out: dict = {"load_before": os.getloadavg()}
    if args.campaign:
        camp = Path(args.campaign)
    else:
        camp = Path(tempfile.mkdtemp()) / "c"
        exe = Path(sys.executable).parent / "hpcbench"
        t0 = time.perf_counter()
        subprocess.run([str(exe), "run", "--out", str(camp)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out["run_wall_s"] = round(time.perf_counter() - t0, 1)
    out["load_after"] = os.getloadavg()
    out.update(figures(camp))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
