"""The pipelines the CLI's verbs run (run, submit, retry, sweep, collect), as functions a script
or a notebook can call too. Each campaign goes through `execute` (hpcbench/pipeline/execute.py)
with its profile; what differs here is how the submissions are gathered and what each verb
wants done. They print nothing: what a person should read goes to a `Reporter` (cli/stages.py
passes its displays). What a campaign came to is returned (`CampaignOutcome`); the CLI turns it
into exit codes."""

from __future__ import annotations

from pathlib import Path

from hpcbench.errors import HpcbenchError
from hpcbench.pipeline.execute import Stages, execute
from hpcbench.pipeline.outcome import BatchScripts, CampaignOutcome, Reporter, Say, quiet
from hpcbench.plan import Campaign, Planned
from hpcbench.plan.options import RunOptions
from hpcbench.profile import CampaignProfile, load_profile
from hpcbench.site import SiteConfig, planned_site
from hpcbench.sweep.plan import SweepPlan


def profile_of(opts: RunOptions) -> CampaignProfile:
    """The profile a run/submit asks for, with its held-out seed when one was given."""
    return load_profile(opts.profile).with_seed(opts.held_out_seed)


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


def run_sweep(out: Path, site: SiteConfig, problems: dict, plan: SweepPlan, subs: list, stages: Stages,
              say: Say = quiet, reporter: Reporter | None = None) -> tuple[Campaign, Path | None]:
    """The machine baseline measured, then the sweep campaign (the sweep profile: its sizes as
    cases, K repeats, one variant) executed packed (one allocation per variant, the baseline
    first on batch sites), analysed into /sweep: (campaign, report or None)."""
    from hpcbench.report.scaling import write_scaling_report
    from hpcbench.sweep.run import finish, measure_baseline, sweep_request, write_plan

    profile, request = sweep_request(problems, plan, subs)
    campaign = Campaign(out)
    write_plan(campaign, plan)
    measure_baseline(site, profile, campaign, plan, say)  # before any job: locally they would share its cores
    packed = Stages(rerun_done=stages.rerun_done, account=stages.account, block=stages.block, pack=True,
                    baseline_ranks=plan.rank_counts(), score=False)
    execute(profile, out, site, request, packed, reporter)
    if not finish(campaign, plan, say):
        return campaign, None
    return campaign, write_scaling_report(campaign.root, campaign.report_dir)


def plan_campaign(out: Path, site: SiteConfig, opts: RunOptions, reporter: Reporter | None = None) -> Planned:
    """A campaign of `opts` gathered and planned at `out` under its profile, nothing run (a
    script that inspects or hands on the plan; `run` and `submit` go on from here)."""
    from hpcbench.plan import request_for

    rep = reporter or Reporter()
    with rep.generating() as progress:
        gathered, request = request_for(out, opts, progress)
    return execute(profile_of(opts), out, site, request, Stages(run=False), rep, gathered).planned


def dry_run_campaign(out: Path, site: SiteConfig, opts: RunOptions, pack: bool | None = None,
                     reporter: Reporter | None = None) -> CampaignOutcome:
    """Plan with the PETSc the site declares (it may not be here): the batch scripts and every
    launch command they would run. Generating agents are listed, not asked; nothing runs, even
    on an unisolated site."""
    from dataclasses import replace

    from hpcbench.plan import declared_installs, request_for

    rep = reporter or Reporter()
    with rep.generating() as progress:
        gathered, request = request_for(out, opts, progress, dry_run=True)
    request = replace(request, installs=declared_installs(site))
    got = execute(profile_of(opts), out, site, request, Stages(run=False), rep, gathered)
    got.scripts = batch_scripts(site, got.campaign, got.planned.plan.jobs, opts.account, pack)
    return got


def run_campaign(out: Path, site: SiteConfig, opts: RunOptions, stages: Stages | None = None,
                 reporter: Reporter | None = None, wait_lock: bool = False) -> CampaignOutcome:
    """run and submit (and retry, which repeats one of them) under the campaign's lock: save the
    options (run.json), gather the submissions (generating agents answer first), then execute
    with the profile the options name: for `run` to the report, for `submit` until the jobs are
    queued (or ended, with `stages.block`)."""
    from dataclasses import replace

    from hpcbench.plan import campaign_lock, request_for
    from hpcbench.plan.options import save_options
    from hpcbench.plan.trust import require_trust

    rep = reporter or Reporter()
    st = stages or Stages()
    st = replace(st, score=opts.verb == "run", report=opts.verb == "run", account=opts.account,
                 time_metric=opts.time_metric)
    require_trust(site, opts.agents, opts.submissions, opts.trust_submissions)
    profile = profile_of(opts)
    with campaign_lock(Path(out), wait_lock, notify=rep.lock_wait):
        save_options(str(out), opts)
        with rep.generating() as progress:
            gathered, request = request_for(out, opts, progress)
        return execute(profile, out, site, request, st, rep, gathered)


def gate_campaign(out: Path, site: SiteConfig, agents: list[str], submissions: str | None, problem_ids: str,
                  wait_lock: bool = False, reporter: Reporter | None = None) -> CampaignOutcome:
    """A sweep's gating step: ungated programs run through the gates first, as an ordinary
    campaign in `out` (the gates profile: full's instruments, nothing timed; no judge); the sweep
    takes the programs that passed every gate. (The sweep verb asked for trust already.)"""
    from hpcbench.plan import campaign_lock, request_for
    from hpcbench.profile import GATES

    rep = reporter or Reporter()
    opts = RunOptions(agents=agents, submissions=submissions, problems=problem_ids, site=site.name)
    with campaign_lock(Path(out), wait_lock, notify=rep.lock_wait):
        with rep.generating() as progress:
            gathered, request = request_for(out, opts, progress)
        return execute(GATES, out, site, request, Stages(report=True), rep, gathered)
