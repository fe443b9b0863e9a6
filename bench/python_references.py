"""Each Python reference (problems/<id>/reference-python) beside its C reference, outside the
pipeline: the printed answers of both at every published case and at held-out draws of a few
seeds (every rank count of each case), and the wall time of both on the performance case, run
alternately (C, Python, C, ...) so that a load from outside falls on both; prints per problem
the cases that printed the same, the largest relative difference of any printed number, the
median seconds of each and their ratio.

    python bench/python_references.py                      # the four, 4 held-out seeds, 3 pairs
    python bench/python_references.py --problems poisson3d-mg --seeds 10 --repeats 5

The campaign measures the same ratio (execution_time, on the same cores, in the job); this is
the quick look without a campaign. The C references are compiled here with mpicc against the
venv's PETSc."""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hpcbench.petsc_env import find_petsc  # noqa: E402
from hpcbench.plan.held_out import draw  # noqa: E402
from hpcbench.problem import load_problems  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
       "OMPI_MCA_rmaps_base_oversubscribe": "1"}
NUMBER = re.compile(r"[-+]?\d+\.\d+e[-+]\d+|\b\d+\b")


def compile_c(pid: str, out: Path) -> Path:
    petsc = find_petsc()
    lib = petsc.petsc_dir / petsc.petsc_arch / "lib" if petsc.petsc_arch else petsc.petsc_dir / "lib"
    exe = out / pid
    subprocess.run(["mpicc", "-O2", *(f"-I{d}" for d in petsc.include_dirs),
                    str(ROOT / "problems" / pid / "reference" / "main.c"), f"-L{lib}", f"-Wl,-rpath,{lib}",
                    "-lpetsc", "-lm", "-o", str(exe)], check=True)
    return exe


def run(cmd: list[str], ranks: int, args: list[str]) -> tuple[str, float]:
    t0 = time.monotonic()
    p = subprocess.run(["mpiexec", "-n", str(ranks), *cmd, *args], capture_output=True, text=True, env=ENV,
                       timeout=600)
    dt = time.monotonic() - t0
    if p.returncode:
        return f"exit {p.returncode}: {p.stderr[-300:]}", dt
    return p.stdout, dt


def largest_difference(a: str, b: str) -> float:
    xs, ys = NUMBER.findall(a), NUMBER.findall(b)
    if len(xs) != len(ys):
        return float("inf")
    return max((abs(float(x) - float(y)) / max(abs(float(x)), 1e-300) for x, y in zip(xs, ys, strict=True)),
               default=0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default="vec-scatter,rosenbrock,robertson,poisson3d-mg")
    ap.add_argument("--seeds", type=int, default=4, help="held-out draws of seeds 0..N-1")
    ap.add_argument("--repeats", type=int, default=3, help="alternating pairs on the performance case")
    args = ap.parse_args()
    bundles = load_problems()
    bad = 0
    with tempfile.TemporaryDirectory(prefix="py-refs-") as tmp:
        for pid in args.problems.split(","):
            prob = bundles[pid].problem
            c = [str(compile_c(pid, Path(tmp)))]
            py = [sys.executable, str(ROOT / "problems" / pid / "reference-python" / "main.py")]
            cases = [*prob.cases, *(x for s in range(args.seeds) for x in draw(prob, s))]
            same, worst, diffs = 0, 0.0, []
            for case in cases:
                for r in case.ranks:
                    a, _ = run(c, r, case.args)
                    b, _ = run(py, r, case.args)
                    same += a == b
                    d = largest_difference(a, b)
                    worst = max(worst, d)
                    if a != b:
                        diffs.append(f"{case.name} {' '.join(case.args)} at {r}: largest difference {d:.1e}")
            total = sum(len(x.ranks) for x in cases)
            line = f"{pid}: {same}/{total} case runs printed the same, largest relative difference {worst:.1e}"
            perf = prob.performance
            if perf is not None:
                ct, pt = [], []
                for _ in range(args.repeats):
                    ct.append(run(c, perf.ranks[0], perf.args)[1])
                    pt.append(run(py, perf.ranks[0], perf.args)[1])
                mc, mp = statistics.median(ct), statistics.median(pt)
                line += (f"; performance case ({' '.join(perf.args)}, {perf.ranks[0]} ranks): C {mc:.2f} s, "
                         f"Python {mp:.2f} s, ratio {mp / mc:.2f}")
            print(line, flush=True)
            for d in diffs:
                print(f"  {d}")
            bad += worst > 1e-8
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
