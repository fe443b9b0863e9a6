"""Executors hand planned jobs to something that runs them: this machine, Slurm,
PBS Pro. Each registers itself by scheduler name (base.register_executor); installed
packages add more through the `hpcbench.executors` entry-point group (registry.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hpcbench.executors.base import Executor, executor_class, executor_for, register_executor

__all__ = ["Executor", "executor_class", "executor_for", "register_executor"]


def __getattr__(name: str) -> Any:
    # Lazily: the site config imports executors.registry to check its scheduler name,
    # and base imports the site config.
    if name in __all__:
        from hpcbench.executors import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
