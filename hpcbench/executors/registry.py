"""Schedulers by name: this package's executors (`@register_executor("slurm")` in
executors/base.py) and those installed packages add through the `hpcbench.executors`
entry-point group. Kept apart from base.py so that listing the names imports no executor
until one is asked for (the site loader checks a site's `scheduler` against the compute-side
registry, hpcbench/schedulers/base.py)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from hpcbench.registry import Registry


def _import_tree() -> None:
    # by folder, not `import hpcbench.executors`: its __init__ is lazy
    for mod in pkgutil.iter_modules([str(Path(__file__).parent)], prefix="hpcbench.executors."):
        importlib.import_module(mod.name)


# Classes, typed loosely: naming Executor here (even for type checking only) would close an
# import circle base -> registry -> base; executor_class() checks each is an Executor subclass.
EXECUTORS: Registry[type] = Registry("executor", "hpcbench.executors", _import_tree)


def scheduler_names() -> list[str]:
    return EXECUTORS.names()
