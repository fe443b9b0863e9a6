"""Campaign commands: run, submit (and its --dry-run), status, wait, cancel, collect."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from hpcbench import pipeline
from hpcbench.cli.agents import language_option
from hpcbench.cli.diskfull import stops_when_full
from hpcbench.cli.judge import judge_options
from hpcbench.cli.progress import JOB_STATES_KIND, Display
from hpcbench.cli.score import exit_if_unscored, scoring_options, scoring_settings, time_metric_option
from hpcbench.cli.stages import Shown, show_scripts

agent_opt = click.option("--agent", "agents", multiple=True,
                         help="reference | samples | dir:PATH | litellm:MODEL | a2a:URL | repair:INNER:N "
                              "(repeatable; generated into <out>/generated)")
endpoint_opts = [
    click.option("--base-url", metavar="URL",
                 help="OpenAI-compatible endpoint of litellm:MODEL agents (default: $HPCBENCH_BASE_URL)"),
    click.option("--api-key-env", metavar="VAR", default="HPCBENCH_API_KEY", show_default=True,
                 help="environment variable holding the generating agents' API key (or the provider's own, "
                      "e.g. OPENAI_API_KEY, when this one is unset)"),
    language_option,
]
attempts_opt = click.option("--attempts", default=1, show_default=True, type=click.IntRange(1, 1000),
                            help="attempts per problem of each generating agent")
account_opt = click.option("--account", help="allocation to charge on batch sites (default: $HPCBENCH_ACCOUNT)")
common = [
    click.option("--site", default="local", show_default=True, help="site name or path to a site YAML"),
    click.option("--submissions", type=click.Path(file_okay=False), help="tree <agent>/<problem>/<attempt>/"),
    click.option("--problems", "problem_ids", help="comma-separated problem ids (default: all)"),
    click.option("--out", type=click.Path(file_okay=False), help="campaign folder"),
]
profile_opt = click.option("--profile", default="full", show_default=True, metavar="NAME|FILE",
                           help="what the campaign measures (hpcbench/profile.py): full (every instrument, the "
                                "performance case), quick (gates and hidden checks only: no valgrind, no "
                                "-malloc_debug, one timing run), or a YAML/JSON file of CampaignProfile's fields; "
                                "recorded in campaign.json")
seed_opt = click.option("--held-out-seed", type=click.IntRange(0, 2 ** 31 - 1),
                        help="seed of the held-out test cases drawn at planning (default: random; a campaign "
                             "keeps its first draw, recorded in snapshot/held_out.json)")
wait_lock_opt = click.option("--wait-lock", is_flag=True,
                             help="if another run/submit is writing this campaign, wait for it (default: refuse)")
trust_opt = click.option("--trust-submissions", "trust_submissions", is_flag=True,
                         help="run agents' programs even on a site with isolation: none (they get your rights)")
keep_work_opt = click.option("--keep-work", is_flag=True,
                             help="keep work/<job> (sources, objects, binary, logs) after its record is written")
campaign_arg = click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))


def with_common(f):
    for opt in reversed([agent_opt, *common, *endpoint_opts, attempts_opt]):
        f = opt(f)
    return f


def default_out(site) -> str:
    import datetime as dt

    return str(Path(site.storage_root) / dt.datetime.now().strftime("campaign-%Y%m%d-%H%M%S"))


def run_options(ctx: click.Context, verb: str, resume: bool, out: str | None, **given):
    """The campaign's options: from the command line, or with --resume from the campaign's
    own run.json (then the command line may not name them again)."""
    from hpcbench.plan.options import JudgeOptions, RunOptions, load_options

    judge = {k: given.pop(k) for k in list(given) if k.startswith("judge_")}
    if resume:
        if not out:
            raise click.UsageError("--resume continues a campaign: give it with --out CAMPAIGN")
        again = sorted(f"--{k.replace('_', '-')}" for k in {**given, **judge}
                       if ctx.get_parameter_source(k) not in (click.core.ParameterSource.DEFAULT, None))
        if again:
            raise click.UsageError(f"--resume takes the options from {Path(out) / 'run.json'}; "
                                   f"do not give them again ({', '.join(again)})")
        return load_options(out)
    agents = list(given.pop("agents"))
    subs = given.pop("submissions")
    if not agents and verb == "run":  # the bundled samples only when asked for, or when nothing is
        # (the Python references with them: a Python row beside each problem's C reference)
        agents = ["reference"] if subs else ["reference", "reference-python", "samples"]
    elif not agents:
        agents = [] if subs else ["reference"]
    return RunOptions(verb=verb, agents=agents, submissions=str(Path(subs).resolve()) if subs else None,
                      problems=given.pop("problem_ids"), judge=JudgeOptions(**judge), **given)


def run_campaign_and_exit(opts, out: str | None, wait_lock: bool, dry_run: bool = False, pack: bool | None = None,
                 block: bool = True, rerun_done: bool = False) -> None:
    """run and submit (and retry, which repeats one of them) through pipeline.run_campaign, shown;
    exit 1 naming every infrastructure error left (generation or judge) and every problem not scored."""
    from hpcbench.site import load_site

    s = load_site(opts.site)
    out = out or default_out(s)
    judge_cfg, settings = run_scoring(opts) if opts.verb == "run" else (None, None)  # fails before any job
    if dry_run:  # runs nothing: shows what would be asked for, even of an unisolated site
        got = pipeline.dry_run_campaign(Path(out), s, opts, pack, Shown(out))
        assert got.scripts is not None
        show_scripts(s, got.campaign, got.planned.plan.jobs, got.scripts)
        return
    stages = pipeline.Stages(block=block, pack=pack, rerun_done=rerun_done, judge=judge_cfg, settings=settings)
    with stops_when_full(out):
        outcome = pipeline.run_campaign(Path(out), s, opts, stages, Shown(out), wait_lock)
    if not outcome.scored:
        click.echo(f"campaign: {outcome.campaign.root}")
        exit_if_errors(outcome, out)
        return
    click.echo(summary_text(outcome.campaign))
    exit_if_errors(outcome, out)
    exit_if_unscored(outcome.scores)


def run_scoring(opts):
    """The judge (with its samples) and the bootstrap settings a run's scoring uses."""
    judge = opts.judge.model_dump()
    samples = judge.pop("judge_samples")
    return scoring_settings(judge, samples, opts.bootstrap_resamples, opts.bootstrap_seed)


def summary_text(campaign) -> str:
    """What `run` prints at the end: the leaderboard in brief and where the whole report is
    (the markdown report itself is a file: printed whole it scrolled the summary away)."""
    from hpcbench.report.data import fmt, fmt_comp, leaderboard, load_report
    from hpcbench.report.uncertainty import row_interval

    rep = load_report(campaign.h5_path)
    rows = leaderboard(rep)
    width = max([len("agent"), *(len(r["agent"]) for r in rows)])
    lines = [f"{'rank':>5}  {'agent':<{width}}  {'n':>3}  {'composite':>9}  {'95% interval':>15}  {'pass@1':>6}  "
             f"{'gate pass':>9}"]
    for r in rows:
        lines.append(f"{r['rank'] or '-':>5}  {r['agent']:<{width}}  {r['submissions']:>3}  "
                     f"{fmt_comp(r['composite_mean'], bool(r['partial'])):>9}  {row_interval(r):>15}  "
                     f"{fmt(r['pass_at_1'], 2):>6}  {r['gate_pass_rate']:>9.0%}")
    if any(r["partial"] for r in rows):
        lines.append("* partial: some categories had no scored evaluator (e.g. no --judge); see the report")
    if any(r["uncertainty"]["scope"] == "these problems" for r in rows):
        lines.append("‡ about these problems only (stored by an earlier hpcbench); ranks are ranges no interval splits")
    if any(r["uncertainty"].get("note", "").startswith("wide") for r in rows):
        lines.append("† wide: fewer than 6 problems; ranks are ranges Holm's tests over all pairs do not split")
    report = campaign.report_dir
    return "\n".join([*lines, "", f"campaign: {campaign.root}", f"report:   {report / 'report.md'}",
                      f"browse:   {report / 'report.html'} (or: hpcbench view {campaign.root})"])


def exit_if_errors(outcome: pipeline.CampaignOutcome, out: str) -> None:
    """Infrastructure errors are not results: name each cause in full, say how to redo exactly
    those, and fail the command (a green exit would let an outage pass as a verdict)."""
    if not outcome.infrastructure_failed:
        return
    judged = outcome.judge_errors
    causes: Counter = Counter(f"{e.kind}: {e.cause}" for e in outcome.generation_errors)
    for cause, n in causes.most_common():
        click.echo(f"hpcbench: error: {n} generation(s) not made, infrastructure error (not scored): {cause}",
                   err=True)
    for cause, n in Counter(r.rationale for r in judged).most_common():
        click.echo(f"hpcbench: error: {n} judgement(s) not made (unscored): {cause}", err=True)
    click.echo(f"hpcbench: fix the cause, then `hpcbench retry {out}` redoes exactly these", err=True)
    raise SystemExit(1)


@click.command()
@with_common
@account_opt
@click.option("--dry-run", is_flag=True, help="plan and print what would run (no job, no LLM call)")
@click.option("--resume", is_flag=True, help="continue the campaign at --out with the options it was started with")
@seed_opt
@profile_opt
@wait_lock_opt
@keep_work_opt
@trust_opt
@judge_options
@scoring_options
@time_metric_option
@click.pass_context
def run(ctx, dry_run, resume, out, wait_lock, **given) -> None:
    """Plan, run, collect, score and report in one go (default: local site,
    the reference and the bundled sample agents, every supported problem)."""
    opts = run_options(ctx, "run", resume, out, **given)
    run_campaign_and_exit(opts, out, wait_lock, dry_run)


@click.command()
@with_common
@click.option("--resume/--no-resume", "skip_done", default=True, help="skip jobs that already have a record")
@account_opt
@click.option("--dry-run", is_flag=True, help="plan and print the batch scripts; submit nothing, ask no LLM")
@click.option("--wait/--no-wait", "block", default=False, help="batch sites: follow the jobs until they end")
@click.option("--pack/--no-pack", default=None,
              help="run all jobs of a variant in one allocation (default: on where the site's nodes are exclusive)")
@seed_opt
@profile_opt
@wait_lock_opt
@keep_work_opt
@trust_opt
@click.pass_context
def submit(ctx, skip_done, dry_run, block, pack, out, wait_lock, **given) -> None:
    """Plan jobs and hand them to the site's executor (Slurm/PBS: queue them and return)."""
    opts = run_options(ctx, "submit", False, out, **given)
    run_campaign_and_exit(opts, out, wait_lock, dry_run, pack, block, rerun_done=not skip_done)


@click.command()
@campaign_arg
@wait_lock_opt
def retry(campaign_dir, wait_lock) -> None:
    """Redo what infrastructure errors left undone (generations kept from the model by a
    missing key, an outage or a quota; judge calls that failed), with the campaign's own
    options. Nothing that finished is redone: answers, job records and judge answers are kept."""
    from hpcbench.plan import Campaign
    from hpcbench.plan.options import load_options

    opts = load_options(campaign_dir)
    c = Campaign(Path(campaign_dir))
    errors = c.manifest().errors if c.exists() else []
    click.echo(f"retry {campaign_dir}: {len(errors)} generation error(s) recorded; `hpcbench {opts.verb}` again "
               "with the options in run.json", err=True)
    run_campaign_and_exit(opts, campaign_dir, wait_lock)


def open_campaign(campaign_dir: str):
    """A planned campaign, the site it was planned for, and that site's executor."""
    from hpcbench.executors import executor_for
    from hpcbench.plan import Campaign
    from hpcbench.site import planned_site

    c = Campaign(Path(campaign_dir))
    site = planned_site(c.manifest().site_config)
    return c, site, executor_for(site, c)


@click.command()
@campaign_arg
def status(campaign_dir) -> None:
    """Per-state counts and per-job states of a campaign."""
    c, _, ex = open_campaign(campaign_dir)
    specs = c.specs()
    states = ex.states(specs)
    counts = Counter(states.values())
    if getattr(ex, "unreachable", ""):
        click.echo(f"scheduler unreachable: {ex.unreachable}\n(states below come from the jobs' own records; "
                   "the others are unknown, and nothing is concluded until the scheduler answers)", err=True)
    click.echo(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "no jobs")
    details = ex.details(specs)  # scheduler id, its state, tries
    for jid, st in sorted(states.items()):
        d = details.get(jid)
        click.echo(f"  {st:9s} {jid}" + (f"  [{d.sched_id} {d.state}, try {d.tries}]" if d else ""))


@click.command()
@campaign_arg
@click.option("--poll", "poll_s", type=click.FloatRange(min=0, min_open=True),
              help="seconds between polls (default: the site's)")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0),
              help="give up after this many seconds (jobs keep running)")
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


@click.command()
@campaign_arg
def collect(campaign_dir) -> None:
    """Add new and changed job records to campaign.h5 (incremental, idempotent)."""
    from hpcbench import store
    from hpcbench.plan import Campaign

    c = Campaign(Path(campaign_dir))
    why = pipeline.ask_accounting(c)
    if why:
        click.echo(f"collect: scheduler accounting not read ({why}); the records are collected all the same", err=True)
    with stops_when_full(c.root):
        counts = store.collect(c)
    if counts.get("rebuilt"):
        click.echo(f"collect: {counts['rebuilt']}", err=True)
    for line in counts["unreadable"]:
        click.echo(f"skipped: {line}", err=True)
    if pipeline.sweep_again(c, changed=bool(counts["added"] or counts["replaced"] or counts["removed"])):
        click.echo(f"{c.h5_path}: /sweep derived again from the stored runs", err=True)
    click.echo(f"{c.h5_path}: {counts['submissions']} submissions, {counts['records']} with records, "
               f"{counts['missing']} still without; {counts['added']} added, {counts['replaced']} replaced, "
               f"{counts['unchanged']} unchanged" + (f", {counts['removed']} removed" if counts["removed"] else "")
               + (f"; scheduler accounting of {counts['allocations']} allocation(s)"
                  if counts.get("allocations") else ""))


def register(main: click.Group) -> None:
    for cmd in (run, submit, retry, status, wait, cancel, collect):
        main.add_command(cmd)
