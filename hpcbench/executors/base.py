"""The executor interface: a list of jobs with their resource shapes in, records
out (each job writes its own record), and states to follow them by."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from typing import ClassVar, Literal

from hpcbench.jobs.records import JobSpec
from hpcbench.plan.campaign import Campaign
from hpcbench.site import SiteConfig

# timeout: the job hit its walltime (a result); retrying: a node failure or preemption
# being resubmitted; unknown: the scheduler has not said (yet) what became of it.
JobState = Literal["pending", "running", "done", "failed", "cancelled", "timeout", "retrying", "unknown"]
Progress = Callable[[Counter], None]

_REGISTRY: dict[str, type[Executor]] = {}


def register_executor(name: str):
    def deco(cls: type[Executor]) -> type[Executor]:
        cls.scheduler = name
        _REGISTRY[name] = cls
        return cls

    return deco


def executor_for(site: SiteConfig, campaign: Campaign) -> Executor:
    try:
        cls = _REGISTRY[site.scheduler]
    except KeyError:
        raise NotImplementedError(
            f"site {site.name!r}: scheduler {site.scheduler!r} has no executor yet "
            f"(available: {', '.join(sorted(_REGISTRY))})"
        ) from None
    return cls(site, campaign)


class Executor(ABC):
    scheduler: ClassVar[str]

    def __init__(self, site: SiteConfig, campaign: Campaign):
        self.site, self.campaign = site, campaign

    @abstractmethod
    def submit(self, jobs: list[JobSpec], progress: Progress | None = None) -> None:
        """Start the jobs. A blocking executor (local) returns when they end."""

    def states(self, jobs: list[JobSpec]) -> dict[str, JobState]:
        """Default: a job with a record is done; without one it is pending."""
        return {j.job_id: ("done" if self.campaign.finished(j.job_id) else "pending") for j in jobs}

    def cancel(self, jobs: list[JobSpec]) -> int:
        return 0
