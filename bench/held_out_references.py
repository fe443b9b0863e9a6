"""Each reference at the held-out draws of many seeds, against its problem's independent
solver, and the draws' answers told apart (a program printing one draw's answers must fail at
the others: draws_apart; the same comparisons as tests/test_held_out.py, which runs the six
newer problems at a few seeds and the others at 8 to stay cheap): prints, per problem, the
draws, the seconds and every failure.

    python bench/held_out_references.py                          # the six newer problems, 20 seeds
    python bench/held_out_references.py --problems all           # every problem with held-out cases
    python bench/held_out_references.py --problems bratu-fold --seeds 50
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.test_held_out import FEW_SEEDS, PROBLEMS, WITH_HELD_OUT, reference_at_draws  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default=",".join(FEW_SEEDS), help="comma-separated problem ids, or all")
    ap.add_argument("--seeds", type=int, default=20, help="seeds 0..N-1")
    args = ap.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory(prefix="held-out-refs-") as tmp:
        ids = ([p for p in WITH_HELD_OUT if not {"cuda", "kokkos"} & set(PROBLEMS[p].problem.requires)]
               if args.problems == "all" else args.problems.split(","))
        for pid in ids:
            t0 = time.monotonic()
            failures = reference_at_draws(pid, range(args.seeds), Path(tmp))
            print(f"{pid}: {args.seeds} seeds, {len(failures)} failures, {time.monotonic() - t0:.0f} s")
            for f in failures:
                print(f"  {f}")
            bad += bool(failures)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
