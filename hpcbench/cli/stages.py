"""The pipelines (hpcbench/pipeline.py) as the verbs show them: the progress displays, the
messages on stderr, the dry run's scripts printed. Shared by cli/campaign.py and cli/sweep.py."""

from __future__ import annotations

from pathlib import Path

import click

from hpcbench import pipeline
from hpcbench.cli.progress import EVALUATE, JOBS, JUDGE, Display, JobOutcomes, evaluated, judge_calls


def say(msg: str) -> None:
    click.echo(msg, err=True)


def lock(out: str, wait: bool):
    from hpcbench.plan import campaign_lock

    return campaign_lock(Path(out), wait, notify=lambda m: click.echo(f"hpcbench: {m}", err=True))


def plan(out: str, site, opts, installs: dict | None = None, dry_run: bool = False):
    """Plan the campaign of `opts` (a plan.options.RunOptions) and say what was generated,
    kept apart as an infrastructure error, rejected and skipped."""
    from hpcbench.cli.agents import echo_summary
    from hpcbench.cli.progress import GENERATE

    with Display(GENERATE) as progress:
        planned = pipeline.plan_run(Path(out), site, opts, installs, dry_run, progress)
    if planned.gathered.generated is not None:
        echo_summary(str(Path(out) / "generated"), planned.gathered.generated)
    for line in planned.gathered.not_generated:
        click.echo(f"dry run: {line} (no LLM asked)", err=True)
    for r in planned.gathered.rejected:
        click.echo(f"rejected: {r}", err=True)
    for s in planned.plan.skipped:
        click.echo(f"skipped {s.problem}: {s.reason}", err=True)
    if planned.plan.held_out:
        from hpcbench.plan.held_out import held_out_path, read_draw

        n = sum(len(c) for c in planned.plan.held_out.values())
        click.echo(f"held-out cases: {n} drawn with seed {read_draw(planned.campaign.root)[0]} "
                   f"({held_out_path(planned.campaign.root)})", err=True)
    return planned


def run_jobs(site, campaign, plan, resume: bool = True, account: str | None = None, block: bool = True,
             pack: bool | None = None, baseline_ranks: list[int] | None = None) -> None:
    with Display(JOBS) as display:
        pipeline.run_jobs(site, campaign, plan, resume, account, block, pack, baseline_ranks, say=say,
                          progress=display, outcomes=JobOutcomes)
    click.echo("", err=True)


def collect_score_report(campaign, judge_cfg=None, settings=None, time_metric: str = "ratio") -> tuple[str, list]:
    """collect, score (judges' progress shown), report.md/html: the markdown and the scores."""
    with Display(EVALUATE) as ev, Display(JUDGE) as progress:
        return pipeline.collect_score_report(campaign, judge_cfg, settings, time_metric, say=say,
                                             evaluated=evaluated(ev), judge_progress=judge_calls(progress))


def print_scripts(site, campaign, jobs: list, account: str | None, pack: bool | None,
                  baseline_ranks: list[int] | None = None) -> None:
    """The batch scripts `submit` would hand the scheduler and every launch command they run."""
    got = pipeline.batch_scripts(site, campaign, jobs, account, pack, baseline_ranks)
    if not got.batch:
        click.echo(f"site {site.name!r} runs jobs on this machine ({len(jobs)} planned): no batch scripts; "
                   "launch commands:")
        click.echo("\n".join(got.launch_lines))
        return
    for p, text, lines in got.scripts:
        nodes = f", {p.nodes} node(s) packed" if hasattr(p, "nodes") else ""
        click.echo(f"# ===== {p.name}: {len(p.jobs)} job(s){nodes}, {p.walltime_min} min, partition "
                   f"{p.shape.partition or '(default)'}, at most {p.node_hours():.2f} node-hours =====")
        click.echo(text)
        click.echo(f"# ----- launch commands of {p.name} (<app>: the job's build, <null>: launcher calibration) -----")
        click.echo("\n".join(lines) + "\n")
    total = sum(p.node_hours() for p, _, _ in got.scripts)
    click.echo(f"dry run: {len(got.scripts)} batch script(s) for {len(jobs)} jobs, at most {total:.2f} node-hours "
               f"(nodes x walltime); nothing submitted. Campaign planned in {campaign.root}", err=True)
