"""`hpcbench explain CAMPAIGN H5PATH`: where a reported number comes from."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("h5path")
@click.option("--full", is_flag=True, help="do not shorten long values and evidence")
def explain(campaign_dir, h5path, full) -> None:
    """Print the value at H5PATH (a report's source: /scores/<id>/..., /submissions/...,
    resolved to rows of scores/<id>.h5 and campaign.h5's tables) and how it was derived
    (a composite: its categories, evaluators and weights; an evaluator: score,
    rationale, evidence, method). H5PATH may end in @attr, may use * per level."""
    from hpcbench.plan.campaign import Campaign
    from hpcbench.report.explain import explain as run

    c = Campaign(Path(campaign_dir))
    if not c.h5_path.is_file():
        raise FileNotFoundError(f"{c.h5_path}: not collected yet; run `hpcbench collect {campaign_dir}`")
    click.echo(run(c.h5_path, h5path, full), nl=False)
