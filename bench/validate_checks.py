"""Benchmark: the full mutation test of the hidden checks (too slow for CI on two cores).

Runs every problem's library of wrong programs and valid variants
(problems/<id>/mutants/mutants.json) through the real pipeline with
`hpcbench.validation.checks.validate_checks` (plan, local executor, collect, score) and prints per
problem the kill rate (wrong programs with accuracy < 0.5) and the acceptance rate (valid
variants that pass every check), each survivor and rejected variant by name; then the
generated mutants (a seeded sample per problem, each case at one rank count, probable
equivalents confirmed under valgrind; each first screened at the problem's cheapest case, where
most are killed): generated, broken, equivalent, killed, surviving.
It prints the wall time, the number of jobs, the load average and where the time went
(per part: runs and their core-seconds, valgrind's and time-outs' among them), so the figure
can be rerun on a quiet machine and compared. --markdown writes the per-program
tables docs/problems.md carries.

The work folder is reused: a rerun after editing only checks.json rescoring the same
records takes seconds; after editing a reference or a library only the changed jobs run.

Usage: python bench/validate_checks.py [--problems a,b] [--out DIR] [--generated N|all] [--seed S]
                                       [--markdown FILE] [--json FILE] [--language c|python]
Exit status 1 when a problem misses kill >= 95% (library and generated) or acceptance 100%."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from hpcbench.validation import as_json, markdown, summary
from hpcbench.validation import checks as vc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", help="comma-separated ids (default: every problem with a library)")
    ap.add_argument("--out", default="validate-checks", help="work folder (reused between runs)")
    ap.add_argument("--generated", default=str(vc.GENERATED_PER_PROBLEM), help="per problem; 'all'; 0: none")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--markdown", help="write the per-program tables here")
    ap.add_argument("--json", help="write every outcome as JSON here")
    ap.add_argument("--no-screen", action="store_true", help="run every program at every case (no screening)")
    ap.add_argument("--parallel", type=int, default=2, help="problems run at once (default 2)")
    ap.add_argument("--language", choices=["c", "python"], default="c",
                    help="whose library (python: mutants-python.json, no generated mutants)")
    a = ap.parse_args()
    ids = [p for p in a.problems.split(",") if p] if a.problems else None
    count = 0 if a.language == "python" else None if a.generated == "all" else int(a.generated)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    # one pass: each problem's worker runs its library, then its generated mutants, so a
    # problem that finishes early is followed at once by the next (no barrier between parts)
    options = vc.Options(generated=count, seed=a.seed, screen=not a.no_screen, parallel=a.parallel,
                         language=a.language)
    reports = vc.validate_checks(ids, Path(a.out), options)
    t1 = time.perf_counter()
    load1 = os.getloadavg()
    print(summary(reports))
    lib_jobs = sum(len(r.outcomes) for r in reports) + len(reports)
    gen_jobs = sum(len(r.generated.outcomes) + 1 for r in reports if r.generated is not None)
    screened = sum(o.screened for r in reports if r.generated is not None for o in r.generated.outcomes)
    print(f"\nlibrary: {lib_jobs} jobs; generated mutants: {gen_jobs} jobs ({screened} decided at the screening "
          f"case, the rest run at every case); total {t1 - t0:.0f} s wall on this machine (load average "
          f"{load0[0]:.1f} at the start, {load1[0]:.1f} at the end: timings under shared load are noisy)")
    print(run_time_table(vc.work_folder(Path(a.out), a.language)))
    if a.markdown:
        Path(a.markdown).write_text(markdown(reports))
    if a.json:
        Path(a.json).write_text(json.dumps(as_json(reports), indent=1))
    return 0 if all(r.meets_targets for r in reports) else 1


def run_time_table(out: Path) -> str:
    """Where the time went, from the records in the work folder: per part (the campaign kinds
    under `out`), jobs, runs, and the runs' core-seconds (wall x ranks) by kind, with the share
    spent in runs killed at their time limit. Core-seconds, not wall time: the parts overlap."""
    from hpcbench.jobs.records import JobResult

    rows = ["| part | jobs | runs | core-s instrumented | core-s valgrind | core-s timed out |",
            "|---|---|---|---|---|---|"]
    for part in sorted({p.parent.parent.name for p in out.glob("*/*/records")}):
        jobs = runs = 0
        inst = vg = late = 0.0
        for rec in out.glob(f"{part}/*/records/*.json"):
            r = JobResult.model_validate_json(rec.read_text())
            jobs += 1
            for run in r.runs:
                runs += 1
                cs = (run.wall_s or 0.0) * run.ranks
                vg += cs if run.kind == "valgrind" else 0.0
                inst += cs if run.kind != "valgrind" else 0.0
                late += cs if run.timed_out else 0.0
        rows.append(f"| {part} | {jobs} | {runs} | {inst:.0f} | {vg:.0f} | {late:.0f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
