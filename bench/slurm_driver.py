"""Driver cost on a real Slurm cluster: seconds per job to plan and to submit a campaign,
and sbatch calls per campaign (one per resource shape, more only past MaxArraySize).

    SLURM_CONF=... .venv/bin/python bench/slurm_driver.py [--copies 50] [--max-array-size 1000]

Copies the references of two problems (1-rank rosenbrock, 3-rank vec-scatter: two shapes)
into --copies attempts each, plans and submits them to the ci-slurm site with the jobs
held (--hold: nothing runs), prints the numbers, and cancels everything it submitted."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hpcbench.executors import executor_for  # noqa: E402
from hpcbench.plan.campaign import PlanRequest, create_campaign  # noqa: E402
from hpcbench.problem import load_problems  # noqa: E402
from hpcbench.resources import data_path  # noqa: E402
from hpcbench.site import load_site  # noqa: E402
from hpcbench.submission import load_tree  # noqa: E402

PROBLEMS = ["rosenbrock", "vec-scatter"]


def make_tree(root: Path, copies: int) -> None:
    for pid in PROBLEMS:
        ref = data_path("problems") / pid / "reference"
        meta = json.loads((ref / "submission.json").read_text())
        for i in range(1, copies + 1):
            d = root / "copy" / pid / str(i)
            d.mkdir(parents=True)
            for f in meta["files"]:
                shutil.copyfile(ref / f, d / f)
            (d / "submission.json").write_text(json.dumps({**meta, "agent": "copy", "attempt": str(i)}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=50)
    ap.add_argument("--max-array-size", type=int, default=0, help="override the site's (shows splitting)")
    args = ap.parse_args()
    if shutil.which("sbatch") is None:
        print("sbatch not found: start scripts/slurm-test-cluster.sh and export SLURM_CONF", file=sys.stderr)
        return 2
    site = load_site("ci-slurm")
    site.batch.directives = [*site.batch.directives, "--hold"]  # measure the driver, run nothing
    if args.max_array_size:
        site.batch.max_array_size = args.max_array_size
    with tempfile.TemporaryDirectory(prefix="hpcbench-bench-") as tmp:
        tree = Path(tmp) / "subs"
        make_tree(tree, args.copies)
        problems = load_problems(None, PROBLEMS)
        subs, rejected = load_tree(tree, set(PROBLEMS))
        assert not rejected, rejected
        t0 = time.perf_counter()
        campaign, plan = create_campaign(Path(tmp) / "c", site, PlanRequest(problems, subs))
        t_plan = time.perf_counter() - t0
        ex = executor_for(site, campaign)
        t0 = time.perf_counter()
        ex.submit(plan.jobs)
        t_submit = time.perf_counter() - t0
        ledger = ex.load_ledger()
        t0 = time.perf_counter()
        ex.states(plan.jobs)
        t_poll = time.perf_counter() - t0
        ids = sorted({a.array_id for a in ledger.arrays})
        subprocess.run(["scancel", *ids], check=False)
    n = len(plan.jobs)
    print(f"jobs planned and submitted: {n} ({len(PROBLEMS)} shapes)")
    print(f"plan:   {t_plan:.2f} s total, {1000 * t_plan / n:.1f} ms per job")
    print(f"submit: {t_submit:.2f} s total, {1000 * t_submit / n:.1f} ms per job")
    print(f"poll (sacct, one call for all): {t_poll:.2f} s")
    print(f"sbatch calls: {ledger.submit_calls} for {n} jobs ({n / max(1, ledger.submit_calls):.0f} jobs per call)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
