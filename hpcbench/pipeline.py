"""The pipelines the CLI's verbs run (run, submit, retry, sweep, collect), as functions a script
or a notebook can call too: plan -> jobs -> collect -> score -> report, and the sweep's
plan -> baseline -> packed jobs -> analysis. They print nothing: what a person should read goes
to `say`, progress to the callbacks given (cli/stages.py passes its displays)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpcbench.errors import HpcbenchError
from hpcbench.plan import Campaign, Planned
from hpcbench.plan.campaign import Plan
from hpcbench.plan.options import RunOptions
from hpcbench.site import SiteConfig
from hpcbench.sweep.plan import SweepPlan

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
        site = SiteConfig.model_validate(c.manifest().site_config)
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
