"""Executors hand planned jobs to something that runs them: this machine, Slurm,
PBS Pro. Each registers itself by scheduler name (see base.register_executor)."""

from hpcbench.executors import local, pbs, slurm  # noqa: F401  (register "local", "pbs", "slurm")
from hpcbench.executors.base import Executor, executor_for, register_executor  # noqa: F401
