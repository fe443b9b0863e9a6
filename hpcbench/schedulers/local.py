"""This machine, no scheduler: the default view (one host, the cores the site plans)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hpcbench.schedulers.base import AllocationView, SubsetLauncher, register_scheduler


@register_scheduler("local")
class LocalView(AllocationView):
    def step(self, launcher: SubsetLauncher, argv: list[str], hosts: list[str], over: bool,
             hostfile: Callable[[], Path]) -> list[str]:
        """One machine: every step runs on it, as the template says."""
        return argv
