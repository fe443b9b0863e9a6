"""The pipelines the CLI's verbs run (run, submit, retry, sweep, collect), as functions a script
or a notebook can call too: plan -> jobs -> collect -> score -> report, and the sweep's
plan -> baseline -> packed jobs -> analysis. They print nothing: what a person should read goes
to `say`, progress to the callbacks given, or, for the composed campaign, to a `Reporter`
(cli/stages.py passes its displays). What a campaign came to is returned (`CampaignOutcome`);
the CLI turns it into exit codes."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpcbench.errors import HpcbenchError
from hpcbench.plan import Campaign, Planned
from hpcbench.plan.campaign import Plan
from hpcbench.plan.options import RunOptions
from hpcbench.site import SiteConfig, planned_site
from hpcbench.sweep.plan import SweepPlan

if TYPE_CHECKING:  # scoring's imports (h5py, pandas) are not paid for by every command's start
    from hpcbench.agents.generate import GenerationError
    from hpcbench.evaluators.base import EvalResult
    from hpcbench.score import SubmissionScore

Say = Callable[[str], None]
Progress = Callable[[Counter], None]
# wraps a local run's progress so that it also counts how the finished jobs ended (their records)
Outcomes = Callable[[Path, Progress], Progress]


def _quiet(_: str) -> None:
    pass


def plan_run(out: Path, site: SiteConfig, opts: RunOptions, installs: dict | None = None, dry_run: bool = False,
             progress: Progress | None = None) -> Planned:
    """Plan the campaign of `opts` (generating agents write <out>/generated first)."""
    from hpcbench.plan import GatherOptions, plan_campaign
    from hpcbench.plan.gather import agent_options

    gather = GatherOptions(attempts=opts.attempts, dry_run=dry_run, agents=agent_options(opts.base_url,
                                                                                           opts.api_key_env))
    return plan_campaign(Path(out), site, opts.agents, opts.submissions, opts.problems, installs, opts.keep_work,
                         progress, gather, opts.held_out_seed)


def run_jobs(site: SiteConfig, campaign: Campaign, plan: Plan, resume: bool = True, account: str | None = None,
             block: bool = True, pack: bool | None = None, baseline_ranks: list[int] | None = None,
             say: Say = _quiet, progress: Progress | None = None, outcomes: Outcomes | None = None) -> None:
    """The site's executor runs every pending job (`resume`: those without a record); a batch
    site returns once they are queued unless `block`."""
    from hpcbench.executors import executor_for
    from hpcbench.plan import pending

    todo = pending(campaign, plan.jobs) if resume else plan.jobs
    say(f"campaign {campaign.root}: {len(plan.jobs)} jobs, {len(plan.jobs) - len(todo)} already done")
    # account: batch schedulers charge it; pack: one allocation per variant (executors/pack.py; locally
    # the core slots already pack); baseline_ranks: packed, the mpi4py machine baseline first
    ex = executor_for(site, campaign, account=account, pack=pack, baseline_ranks=baseline_ranks)
    shown = outcomes(campaign.records_dir, progress) if outcomes and progress and not ex.batch else progress
    if todo:
        ex.submit(todo, progress=shown)
    if ex.batch:  # submit returned once the jobs were queued
        say(f"submitted {len(todo)} jobs to {site.scheduler}")
        if block and todo:
            ex.wait(plan.jobs, progress=shown)


def collect_score_report(campaign: Campaign, judge: Any = None, settings: Any = None, time_metric: str = "ratio",
                         say: Say = _quiet, evaluated: Callable[[int, int], None] | None = None,
                         judge_progress: Callable[[int, int], None] | None = None) -> tuple[str, list]:
    """collect, score, write report.md/html: (the markdown, the scores)."""
    from hpcbench import report, store
    from hpcbench.score import scoring

    counts = store.collect(campaign)
    if counts.get("rebuilt"):
        say(f"collect: {counts['rebuilt']}")
    sid, scores = scoring.score(campaign.h5_path, judge=judge, progress=judge_progress, evaluated=evaluated,
                                stats=settings, options={"time_metric": time_metric})
    return report.write_campaign_report(campaign.h5_path, campaign.report_dir, sid), scores


@dataclass
class BatchScripts:
    """What `submit --dry-run` shows: the batch scripts with their launch lines, or, on a site
    that runs jobs on this machine, the launch lines alone."""

    batch: bool
    scripts: list[tuple[Any, str, list[str]]] = field(default_factory=list)  # (array plan, script, launch lines)
    launch_lines: list[str] = field(default_factory=list)


def batch_scripts(site: SiteConfig, campaign: Campaign, jobs: list, account: str | None, pack: bool | None,
                  baseline_ranks: list[int] | None = None) -> BatchScripts:
    from hpcbench.executors import executor_for
    from hpcbench.executors.pack import plan_launch_lines
    from hpcbench.executors.shapes import ArrayPlan, Shape

    ex = executor_for(site, campaign, account=account, pack=pack, baseline_ranks=baseline_ranks)
    if not ex.batch:
        whole = ArrayPlan(Shape("", site.total_cores(), 0, ""), jobs, 0, None)
        return BatchScripts(False, launch_lines=plan_launch_lines(whole, site))
    return BatchScripts(True, [(p, text, plan_launch_lines(p, site)) for p, text in ex.dry_run(jobs)])


def sweep_again(c: Campaign, changed: bool) -> bool:
    """A sweep campaign's /sweep is derived from the stored rows: derived again when they changed
    or when the store was rebuilt without it (a killed collect, another store schema)."""
    from hpcbench.sweep.run import analyse_and_store, read_plan
    from hpcbench.sweep.tables import read_sweep

    plan = read_plan(c.root)
    if plan is not None and (changed or read_sweep(c.h5_path) is None):
        analyse_and_store(c, plan)
        return True
    return False


def ask_accounting(c: Campaign) -> str:
    """Batch sites: what the scheduler charged for every finished allocation (sacct, qstat -xf),
    into scheduler/accounting.json for collect to store. Its failure loses nothing else: the
    reason is returned ("" when read or not a batch site)."""
    from hpcbench.executors import executor_for

    try:
        site = planned_site(c.manifest().site_config)
        ex = executor_for(site, c)
        if ex.batch and hasattr(ex, "accounting"):
            ex.accounting(c.specs())
    except (HpcbenchError, OSError, ValueError) as e:
        return str(e)
    return ""


def run_sweep(out: Path, site: SiteConfig, problems: dict, plan: SweepPlan, subs: list, resume: bool = True,
              account: str | None = None, block: bool = True, say: Say = _quiet, progress: Progress | None = None,
              outcomes: Outcomes | None = None, jobs_say: Say | None = None) -> tuple[Campaign, Path | None]:
    """The sweep campaign planned, the machine baseline measured, the jobs run packed (one
    allocation per variant, the baseline first), analysed into /sweep: (campaign, report or None).
    `jobs_say` (else `say`) hears what run_jobs says."""
    from hpcbench.report.scaling import write_scaling_report
    from hpcbench.sweep.run import finish, measure_baseline, plan_sweep

    ss, campaign, cplan = plan_sweep(out, site, problems, plan, subs)
    measure_baseline(ss, campaign, plan, say)
    run_jobs(ss, campaign, cplan, resume, account, block, pack=True, baseline_ranks=plan.rank_counts(),
             say=jobs_say or say, progress=progress, outcomes=outcomes)
    if not finish(campaign, plan, say):
        return campaign, None
    return campaign, write_scaling_report(campaign.root, campaign.report_dir)


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


def plan_reported(out: Path, site: SiteConfig, opts: RunOptions, reporter: Reporter, installs: dict | None = None,
                  dry_run: bool = False) -> Planned:
    with reporter.generating() as progress:
        planned = plan_run(out, site, opts, installs, dry_run, progress)
    reporter.planned(planned)
    return planned


def dry_run_campaign(out: Path, site: SiteConfig, opts: RunOptions, pack: bool | None = None,
                     reporter: Reporter | None = None) -> CampaignOutcome:
    """Plan with the PETSc the site declares (it may not be here): the batch scripts and every
    launch command they would run. Generating agents are listed, not asked; nothing runs, even
    on an unisolated site."""
    from hpcbench.plan import declared_installs

    rep = reporter or Reporter()
    planned = plan_reported(out, site, opts, rep, installs=declared_installs(site), dry_run=True)
    return CampaignOutcome(planned, scripts=batch_scripts(site, planned.campaign, planned.plan.jobs, opts.account,
                                                          pack))


def run_campaign(out: Path, site: SiteConfig, opts: RunOptions, wait_lock: bool = False, pack: bool | None = None,
                 block: bool = True, rerun_done: bool = False, judge: Any = None, settings: Any = None,
                 reporter: Reporter | None = None) -> CampaignOutcome:
    """run and submit (and retry, which repeats one of them) under the campaign's lock: save the
    options (run.json), plan, run the jobs (those without a record unless `rerun_done`); for
    `run` also collect, score (with `judge`, `settings`: the bootstrap's) and report."""
    from hpcbench.plan import campaign_lock
    from hpcbench.plan.options import save_options
    from hpcbench.plan.trust import require_trust

    rep = reporter or Reporter()
    require_trust(site, opts.agents, opts.submissions, opts.trust_submissions)
    with campaign_lock(Path(out), wait_lock, notify=rep.lock_wait):
        save_options(str(out), opts)
        planned = plan_reported(Path(out), site, opts, rep)
        with rep.running() as progress:
            run_jobs(site, planned.campaign, planned.plan, not rerun_done, opts.account, block, pack,
                     say=rep.say, progress=progress, outcomes=rep.outcomes)
        if opts.verb != "run":
            return CampaignOutcome(planned)
        with rep.scoring() as sp:
            md, scores = collect_score_report(planned.campaign, judge, settings, opts.time_metric, say=rep.say,
                                              evaluated=sp.evaluated, judge_progress=sp.judge)
    return CampaignOutcome(planned, True, scores, md)


def gate_campaign(out: Path, site: SiteConfig, agents: list[str], submissions: str | None, problem_ids: str,
                  wait_lock: bool = False, reporter: Reporter | None = None) -> CampaignOutcome:
    """A sweep's gating step: ungated programs run through the gates first, as an ordinary
    campaign in `out` (run, no judge); the sweep takes the programs that passed every gate."""
    from hpcbench.plan import campaign_lock

    rep = reporter or Reporter()
    opts = RunOptions(agents=agents, submissions=submissions, problems=problem_ids, site=site.name)
    with campaign_lock(Path(out), wait_lock, notify=rep.lock_wait):
        planned = plan_reported(Path(out), site, opts, rep)
        with rep.running() as progress:
            run_jobs(site, planned.campaign, planned.plan, block=True, say=rep.say, progress=progress,
                     outcomes=rep.outcomes)
        with rep.scoring() as sp:
            md, scores = collect_score_report(planned.campaign, say=rep.say, evaluated=sp.evaluated,
                                              judge_progress=sp.judge)
    return CampaignOutcome(planned, True, scores, md)
