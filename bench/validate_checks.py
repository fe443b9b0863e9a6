"""Benchmark: the full mutation test of the hidden checks (too slow for CI on two cores).

Runs every problem's library of wrong programs and valid variants
(problems/<id>/mutants/mutants.json) through the real pipeline with
`hpcbench.validate_checks.run` (plan, local executor, collect, score) and prints per
problem the kill rate (wrong programs with accuracy < 0.5) and the acceptance rate (valid
variants with accuracy >= 0.95), each survivor and rejected variant by name, the wall time
and the number of jobs. --markdown writes the per-program tables docs/problems.md carries.

The work folder is reused: a rerun after editing only checks.json rescoring the same
records takes seconds; after editing a reference or a library only the changed jobs run.

Usage: python bench/validate_checks.py [--problems a,b] [--out DIR] [--markdown FILE]
Exit status 1 when a problem misses kill >= 95% or acceptance 100%."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hpcbench import validate_checks as vc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", help="comma-separated ids (default: every problem with a library)")
    ap.add_argument("--out", default="validate-checks", help="work folder (reused between runs)")
    ap.add_argument("--markdown", help="write the per-program tables here")
    a = ap.parse_args()
    ids = [p for p in a.problems.split(",") if p] if a.problems else None
    t0 = time.perf_counter()
    reports = vc.run(ids, Path(a.out))
    wall = time.perf_counter() - t0
    print(vc.summary(reports))
    n = sum(len(r.outcomes) for r in reports) + len(reports)
    print(f"\n{n} jobs (programs and references), {wall:.0f} s wall on this machine "
          f"(timings under shared load are noisy)")
    if a.markdown:
        Path(a.markdown).write_text(vc.markdown(reports))
    return 0 if all(r.meets_targets for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
