"""Campaign commands: run, submit (and its --dry-run), status, wait, cancel, collect."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from hpcbench.cli.judge import judge_config, judge_options
from hpcbench.cli.progress import EVALUATE, JOB_STATES_KIND, JOBS, JUDGE, Display, evaluated, judge_calls
from hpcbench.cli.score import exit_if_unscored

agent_opt = click.option("--agent", "agents", multiple=True,
                         help="reference | samples | dir:PATH | litellm:MODEL | a2a:URL | repair:INNER:N "
                              "(repeatable; generated into <out>/generated, endpoint and key from "
                              "$HPCBENCH_BASE_URL and $HPCBENCH_API_KEY)")
common = [
    click.option("--site", default="local", show_default=True, help="site name or path to a site YAML"),
    click.option("--submissions", type=click.Path(file_okay=False), help="tree <agent>/<problem>/<attempt>/"),
    click.option("--problems", "problem_ids", help="comma-separated problem ids (default: all)"),
    click.option("--out", type=click.Path(file_okay=False), help="campaign folder"),
]
wait_lock_opt = click.option("--wait-lock", is_flag=True,
                             help="if another run/submit is writing this campaign, wait for it (default: refuse)")
trust_opt = click.option("--trust-submissions", "trust", is_flag=True,
                         help="run agents' programs even on a site with isolation: none (they get your rights)")
keep_work_opt = click.option("--keep-work", is_flag=True,
                             help="keep work/<job> (sources, objects, binary, logs) after its record is written")
campaign_arg = click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))


def with_common(f):
    for opt in reversed([agent_opt, *common]):
        f = opt(f)
    return f


def default_out(site) -> str:
    import datetime as dt

    return str(Path(site.storage_root) / dt.datetime.now().strftime("campaign-%Y%m%d-%H%M%S"))


def lock(out: str, wait: bool):
    from hpcbench.plan import campaign_lock

    return campaign_lock(Path(out), wait, notify=lambda m: click.echo(f"hpcbench: {m}", err=True))


def plan(out: str, site, agents: list[str], submissions: str | None, problem_ids: str | None,
         installs: dict | None = None, keep_work: bool = False):
    """Plan the campaign and say what was generated, rejected and skipped."""
    from hpcbench.cli.agents import echo_summary
    from hpcbench.cli.progress import GENERATE
    from hpcbench.plan import plan_campaign

    with Display(GENERATE) as progress:
        planned = plan_campaign(Path(out), site, agents, submissions, problem_ids, installs, keep_work, progress)
    if planned.gathered.generated is not None:
        echo_summary(str(Path(out) / "generated"), planned.gathered.generated)
    for r in planned.gathered.rejected:
        click.echo(f"rejected: {r}", err=True)
    for s in planned.plan.skipped:
        click.echo(f"skipped {s.problem}: {s.reason}", err=True)
    return planned.campaign, planned.plan


def run_jobs(site, campaign, plan, resume: bool = True, account: str | None = None, block: bool = True,
             pack: bool | None = None, baseline_ranks: list[int] | None = None) -> None:
    from hpcbench.executors import executor_for
    from hpcbench.plan import pending

    todo = pending(campaign, plan.jobs) if resume else plan.jobs
    click.echo(f"campaign {campaign.root}: {len(plan.jobs)} jobs, {len(plan.jobs) - len(todo)} already done",
               err=True)
    # account: batch schedulers charge it; pack: one allocation per variant (executors/pack.py; locally
    # the core slots already pack); baseline_ranks: packed, the mpi4py machine baseline first
    ex = executor_for(site, campaign, account=account, pack=pack, baseline_ranks=baseline_ranks)
    with Display(JOBS) as progress:
        if todo:
            ex.submit(todo, progress=progress)
        if ex.batch:  # submit returned once the jobs were queued
            click.echo(f"submitted {len(todo)} jobs to {site.scheduler}", err=True)
            if block and todo:
                ex.wait(plan.jobs, progress=progress)
    click.echo("", err=True)


def collect_score_report(campaign, judge_cfg=None) -> tuple[str, list]:
    """collect, score (judges' progress shown), report.md/html: the markdown and the scores."""
    from hpcbench import report, store
    from hpcbench.score import scoring

    store.collect(campaign)
    with Display(EVALUATE) as ev, Display(JUDGE) as progress:
        sid, scores = scoring.score(campaign.h5_path, judge=judge_cfg, progress=judge_calls(progress),
                                    evaluated=evaluated(ev))
    return report.write_campaign_report(campaign.h5_path, campaign.report_dir, sid), scores


@click.command()
@with_common
@wait_lock_opt
@keep_work_opt
@trust_opt
@judge_options
def run(agents, site, submissions, problem_ids, out, wait_lock, keep_work, trust, **judge) -> None:
    """Plan, run, collect, score and report in one go (default: local site,
    the reference and the bundled sample agents, every supported problem)."""
    from hpcbench.plan.trust import require_trust
    from hpcbench.site import load_site

    # The bundled samples only when asked for, or when nothing is: `--submissions DIR` runs the user's tree.
    agents = list(agents) or (["reference"] if submissions else ["reference", "samples"])
    s = load_site(site)
    require_trust(s, agents, submissions, trust)
    out = out or default_out(s)
    judge_cfg = judge_config(**judge)  # a bad judge option fails before any job runs
    with lock(out, wait_lock):
        campaign, planned = plan(out, s, agents, submissions, problem_ids, keep_work=keep_work)
        run_jobs(s, campaign, planned)
        md, scores = collect_score_report(campaign, judge_cfg)
    click.echo(md)
    click.echo(f"campaign: {campaign.root}\nreport:   {campaign.report_dir / 'report.md'} (and report.html)")
    exit_if_unscored(scores)


@click.command()
@with_common
@click.option("--resume/--no-resume", default=True, help="skip jobs that already have a record")
@click.option("--account", help="allocation to charge (default: $HPCBENCH_ACCOUNT)")
@click.option("--dry-run", is_flag=True, help="plan and print the batch scripts; submit nothing")
@click.option("--wait/--no-wait", "block", default=False, help="batch sites: follow the jobs until they end")
@click.option("--pack/--no-pack", default=None,
              help="run all jobs of a variant in one allocation (default: on where the site's nodes are exclusive)")
@wait_lock_opt
@keep_work_opt
@trust_opt
def submit(agents, site, submissions, problem_ids, out, resume, account, dry_run, block, pack, wait_lock,
           keep_work, trust) -> None:
    """Plan jobs and hand them to the site's executor (Slurm/PBS: queue them and return)."""
    from hpcbench.plan.trust import require_trust
    from hpcbench.site import load_site

    agents = list(agents) or ([] if submissions else ["reference"])
    s = load_site(site)
    out = out or default_out(s)
    if not dry_run:  # a dry run runs nothing: it shows what would be asked for
        require_trust(s, agents, submissions, trust)
    if dry_run:
        show_dry_run(out, s, agents, submissions, problem_ids, account, pack)
        return
    with lock(out, wait_lock):
        campaign, planned = plan(out, s, agents, submissions, problem_ids, keep_work=keep_work)
        run_jobs(s, campaign, planned, resume, account, block, pack)
    click.echo(f"campaign: {campaign.root}")


def show_dry_run(out: str, site, agents: list[str], submissions: str | None, problem_ids: str | None,
                 account: str | None, pack: bool | None = None) -> None:
    """Plan with the PETSc the site declares (it may not be here) and print the batch scripts
    and every launch command they will run."""
    from hpcbench.plan import declared_installs

    campaign, planned = plan(out, site, agents, submissions, problem_ids, installs=declared_installs(site))
    print_scripts(site, campaign, planned.jobs, account, pack)


def print_scripts(site, campaign, jobs: list, account: str | None, pack: bool | None,
                  baseline_ranks: list[int] | None = None) -> None:
    """The batch scripts `submit` would hand the scheduler and every launch command they run."""
    from hpcbench.executors import executor_for
    from hpcbench.executors.pack import plan_launch_lines
    from hpcbench.executors.shapes import ArrayPlan, Shape

    ex = executor_for(site, campaign, account=account, pack=pack, baseline_ranks=baseline_ranks)
    if not ex.batch:
        click.echo(f"site {site.name!r} runs jobs on this machine ({len(jobs)} planned): no batch scripts; "
                   "launch commands:")
        whole = ArrayPlan(Shape("", site.total_cores(), 0, ""), jobs, 0, None)
        click.echo("\n".join(plan_launch_lines(whole, site)))
        return
    scripts = ex.dry_run(jobs)
    for p, text in scripts:
        nodes = f", {p.nodes} node(s) packed" if hasattr(p, "nodes") else ""
        click.echo(f"# ===== {p.name}: {len(p.jobs)} job(s){nodes}, {p.walltime_min} min, partition "
                   f"{p.shape.partition or '(default)'}, at most {p.node_hours():.2f} node-hours =====")
        click.echo(text)
        click.echo(f"# ----- launch commands of {p.name} (<app>: the job's build, <null>: launcher calibration) -----")
        click.echo("\n".join(plan_launch_lines(p, site)) + "\n")
    total = sum(p.node_hours() for p, _ in scripts)
    click.echo(f"dry run: {len(scripts)} batch script(s) for {len(jobs)} jobs, at most {total:.2f} node-hours "
               f"(nodes x walltime); nothing submitted. Campaign planned in {campaign.root}", err=True)


def open_campaign(campaign_dir: str):
    """A planned campaign, the site it was planned for, and that site's executor."""
    from hpcbench.executors import executor_for
    from hpcbench.plan import Campaign
    from hpcbench.site import SiteConfig

    c = Campaign(Path(campaign_dir))
    site = SiteConfig.model_validate(c.manifest().site_config)
    return c, site, executor_for(site, c)


@click.command()
@campaign_arg
def status(campaign_dir) -> None:
    """Per-state counts and per-job states of a campaign."""
    c, _, ex = open_campaign(campaign_dir)
    specs = c.specs()
    states = ex.states(specs)
    counts = Counter(states.values())
    click.echo(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "no jobs")
    details = ex.details(specs)  # scheduler id, its state, tries
    for jid, st in sorted(states.items()):
        d = details.get(jid)
        click.echo(f"  {st:9s} {jid}" + (f"  [{d.sched_id} {d.state}, try {d.tries}]" if d else ""))


@click.command()
@campaign_arg
@click.option("--poll", "poll_s", type=float, help="seconds between polls (default: the site's)")
@click.option("--timeout", "timeout_s", type=float, help="give up after this many seconds (jobs keep running)")
def wait(campaign_dir, poll_s, timeout_s) -> None:
    """Follow a campaign's jobs until none is queued or running; resubmit node failures."""
    c, site, ex = open_campaign(campaign_dir)
    specs = c.specs()
    with Display(JOB_STATES_KIND) as progress:
        states = ex.wait(specs, progress=progress, poll_s=poll_s, max_wait_s=timeout_s)
    click.echo("", err=True)
    counts = Counter(states.values())
    click.echo(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "no jobs")
    for jid, st in sorted(states.items()):
        if st != "done":
            click.echo(f"  {st:9s} {jid}")
    if counts.get("cancelled"):
        click.echo(f"rerun the cancelled jobs with: hpcbench submit --resume --site {site.name} --out {c.root} ...")


@click.command()
@campaign_arg
@click.option("--job", "job_ids", multiple=True, help="job id (agent__problem__attempt); default: all")
def cancel(campaign_dir, job_ids) -> None:
    """Cancel a campaign's queued and running jobs (or the --job ones)."""
    from hpcbench.errors import HpcbenchError

    c, _, ex = open_campaign(campaign_dir)
    specs = c.specs()
    if job_ids:
        known = {s.job_id for s in specs}
        unknown = [j for j in job_ids if j not in known]
        if unknown:
            raise HpcbenchError(f"--job {', '.join(unknown)}: not in {c.root} (jobs: {', '.join(sorted(known))})")
        specs = [s for s in specs if s.job_id in job_ids]
    n = ex.cancel(specs)
    click.echo(f"cancelled {n} job(s); `hpcbench submit --resume` reruns them")


def _sweep_again(c, changed: bool) -> None:
    """A sweep campaign's /sweep is derived from the stored rows: derived again when they changed
    or when the store was rebuilt without it (a killed collect, another store schema)."""
    from hpcbench.store.sweeps import read_sweep
    from hpcbench.sweep.run import analyse_and_store, read_plan

    plan = read_plan(c.root)
    if plan is not None and (changed or read_sweep(c.h5_path) is None):
        analyse_and_store(c, plan)
        click.echo(f"{c.h5_path}: /sweep derived again from the stored runs", err=True)


def _ask_accounting(c) -> None:
    """Batch sites: what the scheduler charged for every finished allocation (sacct, qstat -xf),
    into scheduler/accounting.json for collect to store. Its failure loses nothing else."""
    from hpcbench.errors import HpcbenchError
    from hpcbench.executors import executor_for
    from hpcbench.site import SiteConfig

    try:
        site = SiteConfig.model_validate(c.manifest().site_config)
        ex = executor_for(site, c)
        if ex.batch and hasattr(ex, "accounting"):
            ex.accounting(c.specs())
    except (HpcbenchError, OSError, ValueError) as e:
        click.echo(f"collect: scheduler accounting not read ({e}); the records are collected all the same", err=True)


@click.command()
@campaign_arg
def collect(campaign_dir) -> None:
    """Add new and changed job records to campaign.h5 (incremental, idempotent)."""
    from hpcbench import store
    from hpcbench.plan import Campaign

    c = Campaign(Path(campaign_dir))
    _ask_accounting(c)
    counts = store.collect(c)
    for line in counts["unreadable"]:
        click.echo(f"skipped: {line}", err=True)
    _sweep_again(c, changed=bool(counts["added"] or counts["replaced"] or counts["removed"]))
    click.echo(f"{c.h5_path}: {counts['submissions']} submissions, {counts['records']} with records, "
               f"{counts['missing']} still without; {counts['added']} added, {counts['replaced']} replaced, "
               f"{counts['unchanged']} unchanged" + (f", {counts['removed']} removed" if counts["removed"] else "")
               + (f"; scheduler accounting of {counts['allocations']} allocation(s)"
                  if counts.get("allocations") else ""))


def register(main: click.Group) -> None:
    for cmd in (run, submit, status, wait, cancel, collect):
        main.add_command(cmd)
