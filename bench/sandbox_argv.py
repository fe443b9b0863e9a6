"""Print the sandboxed and the bare command of one run of a built program, for a
paired timing of the sandbox's cost (farm-bench --vs BARE -- SANDBOXED):

    python bench/sandbox_argv.py BUILD_DIR RANKS [ARGS...]   -> two lines: sandboxed, bare

Both run with the same allow-listed environment (`env -i K=V ...`)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from hpcbench.jobs.launch import launch_argv, run_env
from hpcbench.jobs.records import Isolation, Launcher
from hpcbench.jobs.sandbox import Step
from hpcbench.petsc_env import find_petsc


def main() -> int:
    folder, ranks, args = Path(sys.argv[1]).resolve(), int(sys.argv[2]), sys.argv[3:]
    petsc = find_petsc()
    launcher = Launcher()
    argv, _ = launch_argv(launcher, ranks, 1, [str(folder / "app"), *args])
    env = ["env", "-i", *(f"{k}={v}" for k, v in run_env(petsc.env(), launcher).items())]
    step = Step(Isolation(), petsc, cwd=folder, writable=[folder])
    print(shlex.join([*env, *step.wrap(argv)]))
    print(shlex.join([*env, "sh", "-c", f"cd {shlex.quote(str(folder))} && exec {shlex.join(argv)}"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
