"""Schedulers by name: this package's executors (`@register_executor("slurm")` in
executors/base.py) and those installed packages add through the `hpcbench.executors`
entry-point group. Kept apart from base.py so the site config can check its
`scheduler` field against it without importing the executors."""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

from hpcbench.registry import Registry

if TYPE_CHECKING:
    from hpcbench.executors.base import Executor


def _import_tree() -> None:
    import hpcbench.executors as pkg

    for mod in pkgutil.iter_modules(pkg.__path__, prefix="hpcbench.executors."):
        importlib.import_module(mod.name)


EXECUTORS: Registry[type[Executor]] = Registry("executor", "hpcbench.executors", _import_tree)


def scheduler_names() -> list[str]:
    return EXECUTORS.names()
