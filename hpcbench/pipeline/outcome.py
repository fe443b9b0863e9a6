"""What a composed campaign tells whoever runs it (`Reporter`) and what it came to
(`CampaignOutcome`): the pipeline prints nothing itself; cli/stages.py shows each stage."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpcbench.plan import Campaign, Planned

if TYPE_CHECKING:  # scoring's imports (h5py, pandas) are not paid for by every command's start
    from hpcbench.agents.generate import GenerationError
    from hpcbench.evaluators.base import EvalResult
    from hpcbench.score import SubmissionScore

Say = Callable[[str], None]
Progress = Callable[[Counter], None]
# wraps a local run's progress so that it also counts how the finished jobs ended (their records)
Outcomes = Callable[[Path, Progress], Progress]


def quiet(_: str) -> None:
    pass


@dataclass
class BatchScripts:
    """What `submit --dry-run` shows: the batch scripts with their launch lines, or, on a site
    that runs jobs on this machine, the launch lines alone."""

    batch: bool
    scripts: list[tuple[Any, str, list[str]]] = field(default_factory=list)  # (array plan, script, launch lines)
    launch_lines: list[str] = field(default_factory=list)


@dataclass
class ScoringProgress:
    """Scoring's two progress callbacks: (submissions evaluated, total) and (judge calls answered, total)."""

    evaluated: Callable[[int, int], None] | None = None
    judge: Callable[[int, int], None] | None = None


class Reporter:
    """What a composed campaign tells whoever runs it, stage by stage. This one hears nothing
    (a script's or a test's default); cli/stages.py's shows each stage as the verbs do."""

    outcomes: Outcomes | None = None  # see run_jobs

    def say(self, msg: str) -> None:
        pass

    def lock_wait(self, msg: str) -> None:
        """Another writer holds the campaign's lock (plan/locking.py)."""

    @contextlib.contextmanager
    def generating(self) -> Iterator[Progress | None]:
        yield None

    def planned(self, planned: Planned) -> None:
        """Planning is done, nothing has run yet: what was generated, rejected, skipped."""

    @contextlib.contextmanager
    def running(self) -> Iterator[Progress | None]:
        yield None

    @contextlib.contextmanager
    def scoring(self) -> Iterator[ScoringProgress]:
        yield ScoringProgress()


def judge_errors(scores: list[SubmissionScore]) -> list[EvalResult]:
    """Judged evaluators a configured judge left unscored: outages, refused keys, quotas. What the
    submission caused is scored (0 with its reason), and no judge at all is a choice, not an error."""
    from hpcbench.evaluators.judged.base import NO_JUDGE

    return [r for sc in scores for r in sc.results
            if r.status == "unscored" and r.method == "llm_judge" and r.rationale != NO_JUDGE]


def not_scored(scores: list[SubmissionScore]) -> dict[str, str]:
    """Problems without a usable reference run, which were not scored: problem -> why."""
    from hpcbench.score import NOT_SCORED

    return {sc.problem: sc.status for sc in scores if sc.status.startswith(NOT_SCORED)}


@dataclass
class CampaignOutcome:
    """What run/submit/retry came to. Infrastructure errors (generations or judgements an
    outage, a key or a quota kept from being made) are not results: `retry` redoes them. A
    program's own failure (a gate failed) is a result, scored like any other."""

    planned: Planned
    scored: bool = False  # `run` collected and scored; `submit` stops after the jobs
    scores: list[SubmissionScore] = field(default_factory=list)
    report_md: str = ""
    scripts: BatchScripts | None = None  # a dry run: what would be submitted, nothing ran

    @property
    def campaign(self) -> Campaign:
        return self.planned.campaign

    @property
    def generation_errors(self) -> list[GenerationError]:
        return self.planned.gathered.errors

    @property
    def judge_errors(self) -> list[EvalResult]:
        return judge_errors(self.scores)

    @property
    def infrastructure_failed(self) -> bool:
        return bool(self.generation_errors or self.judge_errors)

    @property
    def not_scored(self) -> dict[str, str]:
        return not_scored(self.scores)

    @property
    def failed_programs(self) -> list[SubmissionScore]:
        """Programs that failed a gate: their own failure, scored."""
        from hpcbench.score import NOT_SCORED

        return [sc for sc in self.scores if not sc.gates_passed and not sc.status.startswith(NOT_SCORED)]


