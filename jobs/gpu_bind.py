"""One GPU (or GPU tile) per rank, for launchers that cannot bind GPUs themselves (PALS on
Polaris: docs/sites.md, polaris-gpu-bind).

    python -m hpcbench.jobs.gpu_bind VARIABLE ORDER PROGRAM [ARGS...]

sets VARIABLE (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK) to the entry of
the comma-separated ORDER at this rank's node-local index (modulo its length), then execs the
program in its place, so signals and exit status are the program's. Where VARIABLE is set
already (a packed run's own GPUs or tiles, jobs/binding.py), only those are chosen from, in the
order the run holds them (rank r's nearest its core r): runs sharing a node keep their GPUs
apart, and each rank of a run gets one of its own.

On Aurora this is gpu_tile_compact.sh's rule (ALCF's Aurora PE script: ZE_AFFINITY_MASK=
gpu.tile, local rank r on tile r % 2 of GPU r / 2) with ORDER 0.0,0.1,1.0,...,5.1; the script
itself cannot serve packed runs: it sets the mask from the local rank alone, so every concurrent
run took tiles 0.0, 0.1, ... (docs/sites.md, aurora-tiles)."""

from __future__ import annotations

import os
import sys

VARIABLES = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK")


def local_rank(env: dict[str, str]) -> int:
    """The rank's index on its node, where a launcher put it (the launcher that started this
    rank is not known here: every known launcher's variables, jobs/launchers.py)."""
    from hpcbench.jobs.launchers import local_rank_variables

    for var in local_rank_variables():
        if env.get(var, "").isdigit():
            return int(env[var])
    return 0


def device_for(order: str, env: dict[str, str], variable: str = "") -> str:
    devices = [d for d in order.split(",") if d]
    given = [d for d in env.get(variable, "").split(",") if d] if variable else []
    if given:
        # The run's own GPUs (a packed run's, jobs/binding.py), in the order it holds them: the
        # order of its cores, each taken nearest its GPU (jobs/slots.py), so rank r's GPU is the one
        # nearest rank r's core. ORDER is the whole node's rank-to-GPU rule for a run that holds
        # none (Polaris 3,2,1,0 for `--depth 8 --cpu-bind depth`, Aurora gpu_tile_compact.sh's).
        devices = given
    return devices[local_rank(env) % len(devices)]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3 or argv[0] not in VARIABLES or not argv[1].strip(","):
        print(f"usage: python -m hpcbench.jobs.gpu_bind {{{'|'.join(VARIABLES)}}} ORDER PROGRAM [ARGS...]",
              file=sys.stderr)
        return 2
    os.environ[argv[0]] = device_for(argv[1], dict(os.environ), argv[0])
    os.execvp(argv[2], argv[2:])
    return 127  # not reached: execvp replaces this process or raises


if __name__ == "__main__":
    sys.exit(main())
