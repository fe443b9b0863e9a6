"""`hpcbench report` (a scoring as md/html/csv/json) and `hpcbench explain`
(where a reported number comes from)."""

from __future__ import annotations

from pathlib import Path

import click

campaign_arg = click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))


@click.command()
@campaign_arg
@click.option("--format", "fmt", type=click.Choice(["md", "html", "csv", "json"]), default="md", show_default=True)
@click.option("--scoring-id", help="which scoring (default: the latest)")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="write to this file instead of stdout")
def report(campaign_dir, fmt, scoring_id, out_file) -> None:
    """Leaderboard, per-problem table, category profile, failure taxonomy, costs
    and judge agreement of a scored campaign (html: one self-contained file)."""
    from hpcbench import report as rep
    from hpcbench.plan import Campaign
    from hpcbench.store.scorings import damaged_note

    c = Campaign(Path(campaign_dir))
    note = damaged_note(c.root)
    if note:
        click.echo(f"hpcbench: {note}", err=True)
    if out_file:
        for p in rep.write(c.h5_path, fmt, Path(out_file), scoring_id):
            click.echo(f"report: {p}", err=True)
    else:
        click.echo(rep.render(c.h5_path, fmt, scoring_id), nl=False)


@click.command()
@campaign_arg
@click.argument("h5path")
@click.option("--full", is_flag=True, help="do not shorten long values and evidence")
def explain(campaign_dir, h5path, full) -> None:
    """Print the value at H5PATH (a report's source: /scores/<id>/..., /submissions/...,
    resolved to rows of scores/<id>.h5 and campaign.h5's tables) and how it was derived
    (a composite: its categories, evaluators and weights; an evaluator: score,
    rationale, evidence, method). H5PATH may end in @attr, may use * per level."""
    from hpcbench.plan import Campaign
    from hpcbench.report.explain import explain as run

    c = Campaign(Path(campaign_dir))
    if not c.h5_path.is_file():
        raise FileNotFoundError(f"{c.h5_path}: not collected yet; run `hpcbench collect {campaign_dir}`")
    click.echo(run(c.h5_path, h5path, full), nl=False)


def register(main: click.Group) -> None:
    main.add_command(report)
    main.add_command(explain)
