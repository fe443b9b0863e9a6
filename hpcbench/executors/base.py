"""The executor interface: a list of jobs with their resource shapes in, records
out (each job writes its own record), and states to follow them by.

Everything the CLI asks of an executor is declared here, so a scheduler is one
class in one file: its name, the commands `doctor` looks for, the variable that
holds a running job's id, and how a short MPI check is started from a login node."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, TypeVar

from hpcbench.errors import HpcbenchError
from hpcbench.executors.registry import EXECUTORS, scheduler_names
from hpcbench.jobs.records import JobSpec
from hpcbench.schedulers.base import view_class

if TYPE_CHECKING:
    from hpcbench.executors.shapes import ArrayPlan
    from hpcbench.plan.campaign import Campaign
    from hpcbench.site import SiteConfig

# timeout: the job hit its walltime (a result); retrying: a node failure or preemption
# being resubmitted; unknown: the scheduler has not said (yet) what became of it.
JobState = Literal["pending", "running", "done", "failed", "cancelled", "timeout", "retrying", "unknown"]
Progress = Callable[[Counter], None]
E = TypeVar("E", bound="Executor")


def register_executor(name: str) -> Callable[[type[E]], type[E]]:
    """Class decorator: this package's executor for scheduler `name` (a site's `scheduler:`)."""
    return EXECUTORS.part(name, "scheduler")


def executor_class(scheduler: str) -> type[Executor]:
    cls = EXECUTORS.get(scheduler)
    if cls is None:
        raise HpcbenchError(f"scheduler {scheduler!r} has no executor (known: {', '.join(scheduler_names())}; "
                            "a package adds one through the hpcbench.executors entry-point group)")
    if not (isinstance(cls, type) and issubclass(cls, Executor)) or getattr(cls, "scheduler", None) != scheduler:
        # A plugin's class: its records and ledger carry `scheduler`, so it must be the name it is known by.
        raise HpcbenchError(f"executor {scheduler!r} ({cls!r}) must be a subclass of hpcbench.executors.base.Executor "
                            f"with scheduler = {scheduler!r}")
    view = view_class(scheduler)
    if view.batch != cls.batch:  # the site (per-rank sandbox, partitions) reads the view's
        raise HpcbenchError(f"scheduler {scheduler!r}: its executor says batch = {cls.batch}, its allocation view "
                            f"({view.__qualname__}) batch = {view.batch}; they must agree")
    return cls


def executor_for(site: SiteConfig, campaign: Campaign, account: str | None = None, pack: bool | None = None,
                 baseline_ranks: list[int] | None = None) -> Executor:
    """The site's executor for a campaign; `account` is the allocation batch schedulers charge
    (--account, else $HPCBENCH_ACCOUNT; the local executor ignores it); `pack`: one allocation
    per variant (None: where the site's nodes are exclusive; locally the core slots already
    pack); `baseline_ranks`: packed, the mpi4py machine baseline at these rank counts first."""
    return executor_class(site.scheduler)(site, campaign, account=account, pack=pack, baseline_ranks=baseline_ranks)


@dataclass(frozen=True)
class JobDetail:
    """What a scheduler knows of one job, for `status`."""

    sched_id: str
    state: str
    tries: int = 1


class Executor(ABC):
    scheduler: ClassVar[str]
    # A batch scheduler: `submit` returns once the jobs are queued and `wait` follows them;
    # every rank is wrapped in its own sandbox (the launcher stays outside); a site needs a
    # partition; an account may be charged. Otherwise `submit` returns when the jobs have ended.
    batch: ClassVar[bool] = False
    tools: ClassVar[tuple[str, ...]] = ()  # commands `doctor` looks for on PATH

    def __init__(self, site: SiteConfig, campaign: Campaign, account: str | None = None, pack: bool | None = None,
                 baseline_ranks: list[int] | None = None):
        self.site, self.campaign = site, campaign
        self.account = account
        self.pack, self.baseline_ranks = pack, baseline_ranks

    @abstractmethod
    def submit(self, jobs: list[JobSpec], progress: Progress | None = None) -> None:
        """Start the jobs. A blocking executor (local) returns when they end."""

    def states(self, jobs: list[JobSpec]) -> dict[str, JobState]:
        """Each job's state. Default: a job with a record is done; without one it is pending."""
        return {j.job_id: ("done" if self.campaign.finished(j.job_id) else "pending") for j in jobs}

    @abstractmethod
    def cancel(self, jobs: list[JobSpec]) -> int:
        """Stop the jobs still queued or running; how many were."""

    def wait(self, jobs: list[JobSpec], progress: Progress | None = None, poll_s: float | None = None,
             max_wait_s: float | None = None) -> dict[str, JobState]:
        """Follow the jobs until none is active. Default: a blocking `submit` has already waited."""
        return self.states(jobs)

    def details(self, jobs: list[JobSpec]) -> dict[str, JobDetail]:
        """The scheduler's id, state and tries of the jobs it knows (none for a local run)."""
        return {}

    def dry_run(self, jobs: list[JobSpec]) -> list[tuple[ArrayPlan, str]]:
        """The batch scripts `submit` would hand the scheduler (none for a local run)."""
        return []

    @classmethod
    def login_launch(cls, site: SiteConfig, argv: list[str], account: str) -> list[str] | str:
        """The command line of `doctor`'s 2-rank MPI check from this node, or why it cannot run here."""
        return argv
