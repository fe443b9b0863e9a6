"""`hpcbench score`: a new scoring of a collected campaign."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import click

from hpcbench.cli.diskfull import stops_when_full
from hpcbench.cli.judge import judge_config, judge_options, judge_summary
from hpcbench.judge.config import JudgeConfig
from hpcbench.stats.intervals import Settings


def scoring_options(f):
    """--judge-samples, --bootstrap-resamples, --bootstrap-seed (score and run)."""
    opts = [
        click.option("--judge-samples", type=click.IntRange(1, 20), default=1, show_default=True,
                     help="answers asked of the judge per judged evaluator; their mean scores, their spread goes "
                          "into the leaderboard's intervals (the report says how much)"),
        click.option("--bootstrap-resamples", type=click.IntRange(1000, 1_000_000), default=Settings.resamples,
                     show_default=True, help="recorded in the scoring only: the leaderboard's intervals are "
                          "closed-form since 2026-12-07 (docs/report.md); kept so earlier commands still run"),
        click.option("--bootstrap-seed", type=click.IntRange(0), default=Settings.seed, show_default=True,
                     help="recorded in the scoring only (as --bootstrap-resamples)"),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def scoring_settings(judge: dict, judge_samples: int, bootstrap_resamples: int,
                     bootstrap_seed: int) -> tuple[JudgeConfig | None, Settings]:
    """The judge (with its samples) and the bootstrap settings from the command line."""
    cfg = judge_config(**judge)
    if judge_samples > 1:
        if cfg is None:
            raise click.UsageError("--judge-samples needs --judge MODEL")
        cfg = dataclasses.replace(cfg, samples=judge_samples)
    return cfg, Settings(seed=bootstrap_seed, resamples=bootstrap_resamples)


def time_metric_option(f):
    """--time-metric: how execution_time scores (evaluators/metrics/execution_time.py)."""
    return click.option("--time-metric", type=click.Choice(["ratio", "absolute"]), default="ratio", show_default=True,
                        help="ratio: the performance case against the reference's, timed side by side; absolute: "
                             "every case against the paper's thresholds in seconds (problem.json "
                             "runtime_thresholds_s), for comparison with published figures")(f)


def exit_if_unscored(scores) -> None:
    """Problems without a usable reference run were not scored: say which, and fail the command."""
    from hpcbench.pipeline import not_scored

    why = not_scored(scores)
    for pid, status in sorted(why.items()):
        n = sum(sc.problem == pid for sc in scores)
        click.echo(f"hpcbench: error: problem {pid}: {status} ({n} submission{'s' * (n != 1)})", err=True)
    if why:
        sys.exit(1)


def exit_if_judge_errors(scores, campaign_dir: str) -> None:
    from collections import Counter

    from hpcbench.pipeline import judge_errors

    errs = judge_errors(scores)
    for cause, n in Counter(r.rationale for r in errs).most_common():
        click.echo(f"hpcbench: error: {n} judgement(s) not made (unscored, not 0): {cause}", err=True)
    if errs:
        click.echo(f"hpcbench: fix the cause, then score again (`hpcbench score {campaign_dir} --judge ...` or "
                   f"`hpcbench retry {campaign_dir}`): cached answers are not asked again", err=True)
        sys.exit(1)


@click.command()
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--scoring", "--scoring-id", "scoring_id",
              help="name of the new scoring, scores/<id>.h5 (default: a timestamp)")
@judge_options
@scoring_options
@time_metric_option
def score(campaign_dir, scoring_id, judge_samples, bootstrap_resamples, bootstrap_seed, time_metric, **judge) -> None:
    """Score campaign.h5 offline into a new scores/<id>.h5 (LLM judges with --judge)."""
    from hpcbench.cli.progress import EVALUATE, JUDGE, Display, evaluated, judge_calls
    from hpcbench.plan import Campaign
    from hpcbench.score import scoring
    from hpcbench.store.scorings import read_scoring, scoring_path

    judge_cfg, settings = scoring_settings(judge, judge_samples, bootstrap_resamples, bootstrap_seed)
    c = Campaign(Path(campaign_dir))
    if not c.h5_path.is_file():
        raise FileNotFoundError(f"{c.h5_path}: not collected yet; run `hpcbench collect {campaign_dir}`")
    with stops_when_full(c.root), Display(EVALUATE) as ev, Display(JUDGE) as progress:
        sid, scores = scoring.score(c.h5_path, scoring_id, judge_cfg, judge_calls(progress), evaluated(ev),
                                    stats=settings, options={"time_metric": time_metric})
    click.echo(f"scoring {sid}: {len(scores)} submissions scored into {scoring_path(c.root, sid)}")
    click.echo(judge_summary(read_scoring(c.root, sid).config))
    exit_if_unscored(scores)
    exit_if_judge_errors(scores, campaign_dir)


def register(main: click.Group) -> None:
    main.add_command(score)
