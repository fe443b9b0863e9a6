"""A batch scheduler's commands (the one Backend of every batch executor: executors/batch.py
follows jobs through it, executors/pack.py plans the allocations it submits)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hpcbench.errors import HpcbenchError
from hpcbench.executors import pack
from hpcbench.executors.pack import PackPlan
from hpcbench.executors.shapes import ArrayPlan
from hpcbench.jobs.records import write_atomic
from hpcbench.site import SiteConfig

if TYPE_CHECKING:
    from hpcbench.plan.campaign import Campaign


@dataclass
class SchedInfo:
    state: str  # Slurm's vocabulary (PBS states are mapped onto it)
    exit_code: str = ""
    reason: str = ""




class Backend(ABC):
    """One scheduler's commands, for its arrays and its packed allocations. Subclasses:
    slurm.SlurmBackend, pbs.PbsBackend, and a plugin's."""

    name = ""
    submit_command = ""
    site: SiteConfig
    folder: Path  # scripts and logs
    python: str  # the interpreter the batch job runs

    @abstractmethod
    def submit_array(self, plan: ArrayPlan, account: str) -> tuple[str, list[str], str]:
        """Submit one array: (array id, per-job scheduler ids in plan.jobs order, script path)."""

    @abstractmethod
    def render(self, plan: ArrayPlan, account: str) -> str:
        """The batch script `submit_array` would hand the scheduler (for --dry-run)."""

    @abstractmethod
    def poll(self, ids: list[str]) -> dict[str, SchedInfo]:
        """States of the given scheduler ids; ids it cannot find are left out."""

    @abstractmethod
    def cancel(self, ids: list[str]) -> None: ...

    def log_tail(self, sched_id: str, n: int = 1500) -> str:
        return ""

    def usage(self, ids: list[str]) -> dict:
        """What the scheduler's accounting says of these allocations (executors/accounting.py):
        id -> accounting.Usage; those it cannot say are left out."""
        return {}

    def max_step_count(self) -> int:
        """The most steps one job may start (0: the scheduler sets no such limit)."""
        return 0

    def render_pack(self, plan: PackPlan, account: str, manifest: Path, command: str) -> str:
        """The script of one packed allocation (executors/pack.py) whose job runs `command`."""
        raise HpcbenchError(f"{self.name}: this scheduler cannot run a packed allocation (use --no-pack)")

    def submit_pack(self, plan: PackPlan, account: str, manifest: Path, key: str, command: str) -> tuple[str, str]:
        """Submit one packed allocation: (scheduler id, script path)."""
        raise HpcbenchError(f"{self.name}: this scheduler cannot run a packed allocation (use --no-pack)")

    def render_packed(self, plan: PackPlan, account: str, manifest: Path) -> str:
        """The script of a packed allocation as `submit --dry-run` shows it, its jobs listed."""
        text = self.render_pack(plan, account, manifest, pack.driver_command(self.python, manifest))
        jobs = "\n".join(f"#   {j.job_id}" for j in plan.jobs)
        return f"{text}\n# hpcbench: {len(plan.jobs)} job(s) packed in this allocation\n{jobs}\n"

    def submit_packed(self, campaign: Campaign, plan: PackPlan, account: str,
                      baseline_ranks: list[int] | None) -> tuple[str, str]:
        """Write the allocation's manifest and submit it: (scheduler id, script path)."""
        folder = campaign.root / "scheduler" / "pack"
        folder.mkdir(parents=True, exist_ok=True)
        key = pack.next_key(folder, plan.name)
        refused = pack.steps_refusal(plan, pack.planned_steps(plan, baseline_ranks), self.max_step_count())
        if refused:
            raise HpcbenchError(refused)
        path, manifest = pack.manifest_for(plan, campaign, self.site, key, baseline_ranks, self.python)
        write_atomic(path, manifest.model_dump_json(indent=1))
        return self.submit_pack(plan, account, path, key, pack.driver_command(self.python, path))
