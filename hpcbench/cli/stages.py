"""The pipelines (hpcbench/pipeline/) as the verbs show them: the progress displays, the
messages on stderr, the dry run's scripts printed. Shared by cli/campaign.py and cli/sweep.py."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import click

from hpcbench import pipeline
from hpcbench.cli.progress import EVALUATE, JOBS, JUDGE, Display, JobOutcomes, evaluated, judge_calls


def say(msg: str) -> None:
    click.echo(msg, err=True)


def lock(out: str, wait: bool):
    from hpcbench.plan import campaign_lock

    return campaign_lock(Path(out), wait, notify=lock_wait)


def lock_wait(msg: str) -> None:
    click.echo(f"hpcbench: {msg}", err=True)


def show_planned(out: Path, planned) -> None:
    """Say what was generated, kept apart as an infrastructure error, rejected and skipped."""
    from hpcbench.cli.agents import echo_summary

    if planned.gathered.generated is not None:
        echo_summary(str(Path(out) / "generated"), planned.gathered.generated)
    for line in planned.gathered.not_generated:
        click.echo(f"dry run: {line} (no LLM asked)", err=True)
    for line in planned.gathered.notes:
        click.echo(line, err=True)
    for r in planned.gathered.rejected:
        click.echo(f"rejected: {r}", err=True)
    for s in planned.plan.skipped:
        click.echo(f"skipped {s.problem}: {s.reason}", err=True)
    profile = planned.campaign.profile()
    if profile.name != "full":
        click.echo(f"{profile.summary()} (campaign.json)", err=True)
    if planned.plan.held_out:
        from hpcbench.plan.held_out import held_out_path, read_draw

        n = sum(len(c) for c in planned.plan.held_out.values())
        click.echo(f"held-out cases: {n} drawn with seed {read_draw(planned.campaign.root)[0]} "
                   f"({held_out_path(planned.campaign.root)})", err=True)
    if planned.plan.performance:
        from hpcbench.plan.held_out import held_out_path

        drawn = "; ".join(f"{pid} {' '.join(a)}" for pid, a in sorted(planned.plan.performance.items()))
        click.echo(f"performance cases drawn: {drawn} ({held_out_path(planned.campaign.root)})", err=True)


class Shown(pipeline.Reporter):
    """A composed campaign as the verbs show it: each stage's progress display, the messages on stderr."""

    outcomes = JobOutcomes

    def __init__(self, out: Path | str) -> None:
        self.out = Path(out)

    def say(self, msg: str) -> None:
        say(msg)

    def lock_wait(self, msg: str) -> None:
        lock_wait(msg)

    @contextlib.contextmanager
    def generating(self) -> Iterator[Display]:
        from hpcbench.cli.progress import GENERATE

        with Display(GENERATE) as progress:
            yield progress

    def planned(self, planned) -> None:
        show_planned(self.out, planned)

    @contextlib.contextmanager
    def running(self) -> Iterator[Display]:
        with Display(JOBS) as display:
            yield display
        click.echo("", err=True)

    @contextlib.contextmanager
    def scoring(self) -> Iterator[pipeline.ScoringProgress]:
        with Display(EVALUATE) as ev, Display(JUDGE) as progress:
            yield pipeline.ScoringProgress(evaluated(ev), judge_calls(progress))


class Jobs(pipeline.Reporter):
    """A campaign's jobs shown on a display the verb already holds open (the sweep's), with
    run_jobs' messages through `say`."""

    outcomes = JobOutcomes

    def __init__(self, display: Display, say_to) -> None:
        self.display, self.say_to = display, say_to

    def say(self, msg: str) -> None:
        self.say_to(msg)

    @contextlib.contextmanager
    def running(self) -> Iterator[Display]:
        yield self.display


def print_scripts(site, campaign, jobs: list, account: str | None, pack: bool | None,
                  baseline_ranks: list[int] | None = None) -> None:
    """The batch scripts `submit` would hand the scheduler and every launch command they run."""
    show_scripts(site, campaign, jobs, pipeline.batch_scripts(site, campaign, jobs, account, pack, baseline_ranks))


def show_scripts(site, campaign, jobs: list, got: pipeline.BatchScripts) -> None:
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
