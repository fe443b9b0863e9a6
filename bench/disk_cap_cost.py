"""What the kernel's disk limit (jobs/disk_cap.py) costs one step: the wall time of
run_captured for a program that does nothing (`/bin/true`) and for one that writes a few files,
in a bwrap sandbox whose folder is a tmpfs of disk_mb (copied in, held open, copied out) and in
the same sandbox with the folder watched only (bwrap_sizes_tmpfs forced off), interleaved
ABAB... so load on the machine falls on both alike.

    python bench/disk_cap_cost.py [PAIRS]      (default 40)"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

from hpcbench.jobs import sandbox
from hpcbench.jobs.capture import Confinement, run_captured
from hpcbench.jobs.records import Isolation, Limits
from hpcbench.jobs.sandbox import Step, step_env
from hpcbench.petsc_env import find_petsc

WRITES = ["/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do head -c 100000 /dev/zero > f$i; done"]


def one(root: Path, argv: list[str], kernel: bool) -> tuple[float, str]:
    folder = Path(tempfile.mkdtemp(dir=root))
    for i in range(5):  # a submission's few staged files
        (folder / f"src{i}.c").write_text("int x;\n" * 200)
    step = Step(Isolation(), find_petsc(), cwd=folder, writable=[folder])
    original = sandbox.bwrap_sizes_tmpfs
    try:
        if not kernel:
            sandbox.bwrap_sizes_tmpfs = lambda: False  # type: ignore[assignment]
        cap = run_captured(argv, cwd=folder, env=step_env({}), timeout_s=60, step=step,
                           confinement=Confinement(Limits()))
    finally:
        sandbox.bwrap_sizes_tmpfs = original
    assert cap.exit_code == 0, cap.stderr
    return cap.wall_s, cap.disk_limit


def main() -> int:
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    root = Path(tempfile.mkdtemp(prefix="disk-cap-bench-"))
    for name, argv in (("true", ["/bin/true"]), ("8 files of 100 KB", WRITES)):
        kern, watched = [], []
        for _ in range(pairs):
            w, how = one(root, argv, True)
            assert how == "kernel (tmpfs)", how
            kern.append(w)
            w, how = one(root, argv, False)
            assert how == "watched every 0.2 s", how
            watched.append(w)
        diff = [a - b for a, b in zip(kern, watched, strict=True)]
        print(f"{name}: kernel {statistics.median(kern) * 1e3:.1f} ms, "
              f"watched {statistics.median(watched) * 1e3:.1f} ms, "
              f"paired difference median {statistics.median(diff) * 1e3:+.1f} ms ({pairs} pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
