"""Turn a site's launcher template into the argv that starts N ranks."""

from __future__ import annotations

import os

from hpcbench.jobs.records import Launcher
from hpcbench.jobs.sandbox import Step, step_env


def mpi_env() -> dict[str, str]:
    """Environment the MPI launcher needs here. Open MPI refuses root unless told;
    real users are not root, so this is added only when running as root."""
    env = {"OMPI_MCA_rmaps_base_oversubscribe": "1"}  # a job may be wider than its cores
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def run_env(petsc_env: dict[str, str], launcher: Launcher) -> dict[str, str]:
    """The environment an untrusted program runs in: the allow-listed part of ours
    (never a key), PETSc's, MPI's and the launcher's, without PETSC_OPTIONS (no
    options the submitting user left around)."""
    return step_env({**petsc_env, **mpi_env(), **launcher.env})


def launch_argv(launcher: Launcher, ranks: int, cores: int, program: list[str],
                step: Step | None = None) -> tuple[list[str], bool]:
    """argv for `program` at `ranks` ranks, and whether that oversubscribes `cores`.
    With a per-rank `step` (batch schedulers) each rank is wrapped in its sandbox
    here; otherwise the caller wraps the whole launch (capture.run_captured)."""
    over = ranks > cores
    argv = launcher.argv(ranks, ranks)
    if over and launcher.oversubscribe_flag:
        argv.append(launcher.oversubscribe_flag)
    if step is not None and step.isolation.per_rank:
        program = step.wrap(program)
    return argv + program, over
