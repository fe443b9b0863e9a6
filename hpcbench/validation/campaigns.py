"""One validation campaign: a problem's programs beside its reference, through
pipeline.execute with the validation's profile, scored. The profiles say what differs from a
user's campaign (hpcbench/profile.py: no valgrind, no timed runs, a job ends at its first
failed run, one held-out draw, time-outs while starved retried, the cases a screen runs);
their runs take the machine's core slots (CampaignProfile.core_slots), so problems run side by
side, or beside any other campaign, never oversubscribe the cores."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hpcbench.errors import ConfigError
from hpcbench.pipeline import Reporter, Stages, execute
from hpcbench.plan import PlanRequest
from hpcbench.problem import ProblemBundle
from hpcbench.profile import CampaignProfile
from hpcbench.site import SiteConfig
from hpcbench.submission import LoadedSubmission, Rejected, load_submission, reference_submission


class Progressed(Reporter):
    """The jobs' progress to a validation's callback (None: nothing shown)."""

    def __init__(self, progress: Any = None) -> None:
        self.progress = progress

    @contextlib.contextmanager
    def running(self) -> Iterator[Any]:
        yield self.progress


def score_programs(root: Path, site: SiteConfig, profile: CampaignProfile, bundle: ProblemBundle,
                   subs: list[LoadedSubmission], progress: Any = None) -> tuple[list, str]:
    """The campaign at `root` executed and scored: (scores, why the problem was skipped or "")."""
    got = execute(profile, root, site, PlanRequest({bundle.id: bundle}, subs), Stages(), Progressed(progress))
    skipped = got.planned.plan.skipped
    return got.scores, f"skipped: {skipped[0].reason}" if skipped else ""


def load_programs(folder: Path, names: list[str], agent: str, bundle: ProblemBundle,
                  check_args: bool = False) -> list[LoadedSubmission]:
    """Submission trees `folder/<name>/`, loaded; a tree that does not load is an error of the
    library (`check_args`: its args must be ones the problem lets a submission set, as any
    submission's)."""
    rules = {bundle.id: bundle.problem} if check_args else None
    subs = []
    for name in names:
        got = load_submission(folder / name, agent, bundle.id, None, name, problems=rules)
        if isinstance(got, Rejected):
            raise ConfigError(got.path, got.field, got.reason)
        subs.append(got)
    return subs


def reference_of(bundle: ProblemBundle) -> LoadedSubmission:
    """The problem's bundled reference, every validation campaign's yardstick."""
    ref = reference_submission(bundle.folder, bundle.id)
    if isinstance(ref, Rejected):
        raise ConfigError(ref.path, ref.field, ref.reason)
    return ref


def accuracy(sc: Any) -> Any:
    """A scored program's numerical-accuracy result (None where it was never evaluated)."""
    return next((r for r in sc.results if r.evaluator == "numerical_accuracy"), None)


def why(sc: Any, acc: Any) -> str:
    """The failed gate's rationale, else the accuracy's."""
    if sc.failed_gate:
        gate = next((r for r in sc.results if r.evaluator == sc.failed_gate), None)
        return gate.rationale if gate else sc.failed_gate
    return acc.rationale if acc else "not scored"
