"""The compute-side face of a scheduler: what a job or a packed allocation's driver asks of the
allocation it runs in, and the settings a site file gives the scheduler.

A scheduler is one name with three faces: its executor (login side: submit, states, wait,
cancel, dry run; hpcbench/executors/), its allocation view and its settings model (here).
jobs/ reads the allocation through `view_for(name)` and never names a scheduler; the name
reaches a job in HPCBENCH_SCHEDULER (exported by every batch script, set by the packed
allocation's driver for its jobs).

In the tree a view registers itself with `@register_scheduler("<name>")`; an installed package
adds one through the `hpcbench.schedulers` entry-point group (the value: the view class,
whose `name` is the entry point's). This package imports nothing of hpcbench but the
registry and the errors, so the compute side, the site loader and the executors can all
import it."""

from __future__ import annotations

import importlib
import os
import pkgutil
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import ClassVar, Protocol, TypeVar

from hpcbench.errors import HpcbenchError
from hpcbench.registry import Registry
from hpcbench.schedulers.settings import BatchConfig

ENV = "HPCBENCH_SCHEDULER"  # the scheduler a job runs under (batch scripts export it)


class SubsetLauncher(Protocol):
    """What a view needs of a launcher (jobs/launchers.py) to start a step on some hosts."""

    def on_hosts(self, argv: list[str], hosts: list[str], over: bool, hostfile: Callable[[], Path]) -> list[str]: ...


class AllocationView:
    """The allocation a process runs in, read from the environment the scheduler gave it.
    The defaults describe no allocation at all: this machine, its planned cores, no id."""

    name: ClassVar[str] = ""
    # Jobs go to a batch scheduler (its executor's `batch` says the same): each rank in its own
    # sandbox, the site needs partitions.
    batch: ClassVar[bool] = False
    # The settings a site file's `batch:` holds for this scheduler (a BatchConfig subclass: its
    # own fields beside the common ones), validated by the site loader (hpcbench/site.py).
    settings: ClassVar[type[BatchConfig]] = BatchConfig
    # Variables of the scheduler's that a step's launcher must see (jobs/sandbox.step_env)...
    env_prefixes: ClassVar[tuple[str, ...]] = ()
    # ... and those of the allocation that a job started inside it must not inherit (its
    # per-node task count is the allocation's, not a step's).
    step_drops: ClassVar[tuple[str, ...]] = ()
    job_id_env: ClassVar[str] = ""  # the variable holding the allocation's id
    # Seconds a packed allocation's driver gives its jobs to write their records after a stop
    # (SIGTERM) before it kills them and writes its summary: within the time the scheduler
    # leaves between its SIGTERM and its SIGKILL (Slurm's KillWait, 30 s by default).
    stop_grace_s: ClassVar[float] = 20.0
    # The scheduler sends no warning before the walltime (PBS: SIGTERM at the limit, SIGKILL
    # kill_delay later): a job or driver under it warns itself, a timer at the walltime less the
    # margin (jobs/interrupt.warn_before_walltime), as Slurm's --signal=B:USR2@M does.
    warns_itself: ClassVar[bool] = False

    def __init__(self, environ: Mapping[str, str] | None = None):
        self.env = os.environ if environ is None else environ

    def hosts(self) -> list[str]:
        """The allocation's nodes, the one this process runs on first."""
        return [socket.gethostname()]

    def cores_per_node(self, planned: int) -> int:
        """Cores the scheduler gave per node, never more than `planned` (the site's)."""
        return planned

    def gpus_per_node(self, planned: int) -> int:
        """GPUs the scheduler gave per node (default: as planned)."""
        return planned

    def job_id(self) -> str:
        return self.env.get(self.job_id_env, "") if self.job_id_env else ""

    def own_step(self, cpus: int, host: str) -> list[str]:
        """The command prefix that runs a process (a build) as a step of its own on `cpus` CPUs (as
        the site's launcher counts them) of
        `host`, so that the scheduler places it beside the runs' steps and never under one;
        [] where steps are the launcher's business (the process runs where its caller does)."""
        return []

    def step(self, launcher: SubsetLauncher, argv: list[str], hosts: list[str], over: bool,
             hostfile: Callable[[], Path]) -> list[str]:
        """The launch line of a step on `hosts` (a subset of the allocation's): the launcher's own
        way to name hosts. A scheduler whose steps need more (its own step command) overrides it."""
        return launcher.on_hosts(argv, hosts, over, hostfile)


V = TypeVar("V", bound=type[AllocationView])


def _import_tree() -> None:
    for mod in pkgutil.iter_modules([str(Path(__file__).parent)], prefix="hpcbench.schedulers."):
        importlib.import_module(mod.name)


SCHEDULERS: Registry[type[AllocationView]] = Registry("scheduler", "hpcbench.schedulers", _import_tree)


def register_scheduler(name: str) -> Callable[[V], V]:
    """Class decorator: the allocation view (and settings) of scheduler `name`."""
    return SCHEDULERS.part(name)


def view_class(name: str) -> type[AllocationView]:
    """The view of scheduler `name`; one without a view of its own runs as this machine (local)."""
    cls = SCHEDULERS.get(name) or SCHEDULERS.get("local")
    if not (isinstance(cls, type) and issubclass(cls, AllocationView)):
        raise HpcbenchError(f"scheduler {name!r}: its view ({cls!r}) must subclass "
                            "hpcbench.schedulers.base.AllocationView")
    return cls


def view_for(name: str = "", environ: Mapping[str, str] | None = None) -> AllocationView:
    """The view of the allocation this process runs in: scheduler `name`, else $HPCBENCH_SCHEDULER."""
    env = os.environ if environ is None else environ
    name = name or env.get(ENV, "") or _detected(env)
    return view_class(name)(env)


def _detected(env: Mapping[str, str]) -> str:
    """A job started without HPCBENCH_SCHEDULER (a shell inside an allocation, `doctor` under
    salloc): the scheduler whose job id variable is set, else this machine."""
    for name, cls in SCHEDULERS.all().items():
        if cls.job_id_env and env.get(cls.job_id_env):
            return name
    return "local"


def settings_model(name: str) -> type[BatchConfig]:
    """The model of a site's `batch:` for scheduler `name` (BatchConfig where it brings none)."""
    cls = SCHEDULERS.get(name)
    model = getattr(cls, "settings", BatchConfig) if cls is not None else BatchConfig
    if not (isinstance(model, type) and issubclass(model, BatchConfig)):
        raise HpcbenchError(f"scheduler {name!r}: its settings ({model!r}) must subclass "
                            "hpcbench.schedulers.settings.BatchConfig")
    return model
