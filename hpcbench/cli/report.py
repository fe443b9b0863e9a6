"""`hpcbench report` (a scoring as md/html/csv/json) and `hpcbench explain`
(where a reported number comes from)."""

from __future__ import annotations

from pathlib import Path

import click

campaign_arg = click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))


@click.command()
@campaign_arg
@click.option("--format", "fmt", type=click.Choice(["md", "html", "csv", "json", "jsonl", "parquet"]), default="md",
              show_default=True, help="html also writes the results browser (browse/) beside the file")
@click.option("--scoring", "--scoring-id", "scoring_id", help="which scoring (default: the latest)")
@click.option("--out", "out_file", type=click.Path(dir_okay=False),
              help="file to write; '-': standard output. Default: C/report/report.<format> on a terminal "
                   "(the file is named), standard output when piped")
def report(campaign_dir, fmt, scoring_id, out_file) -> None:
    """Leaderboard, per-problem table, category profile, failure taxonomy, costs
    and judge agreement of a scored campaign (html: report.html and the results browser)."""
    import sys

    from hpcbench import report as rep
    from hpcbench.plan import Campaign
    from hpcbench.store.scorings import damaged_note

    c = Campaign(Path(campaign_dir))
    note = damaged_note(c.root)
    if note:
        click.echo(f"hpcbench: {note}", err=True)
    if out_file is None and (sys.stdout.isatty() or fmt == "parquet"):
        # A person at a terminal (or a format that is files): a file, named, not pages scrolling past.
        (c.root / "report").mkdir(exist_ok=True)
        out_file = str(c.root / "report" / f"report.{'md' if fmt == 'md' else fmt}")
    if out_file == "-":
        out_file = None
    if out_file and not Path(out_file).parent.is_dir():
        raise click.BadParameter(f"{Path(out_file).parent}: no such folder (the report and its figures are "
                                 "written beside each other there)", param_hint="--out")
    if out_file:
        for p in rep.write_report(c.h5_path, fmt, Path(out_file), scoring_id):
            click.echo(f"report: {p}", err=True)
    else:
        click.echo(rep.render_report(c.h5_path, fmt, scoring_id), nl=False)


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


@click.command()
@campaign_arg
@click.option("--scoring", "--scoring-id", "scoring_id", help="which scoring (default: the latest)")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on")
@click.option("--port", default=8700, show_default=True, type=click.IntRange(0, 65535), help="port (0: any free one)")
@click.option("--public", is_flag=True, help="allow a --host other than this machine's loopback (anyone who can "
              "reach it reads every source and output of the campaign)")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="another name the browser may use for this server (a tunnel's or proxy's), repeatable")
def view(campaign_dir, scoring_id, host, port, public, allow_hosts) -> None:
    """Serve the results browser of a scored campaign (submissions sortable and filterable, a page
    per submission with source, build, runs, -log_view and every evaluator's rationale). Read-only;
    Ctrl-C stops it."""
    from hpcbench.plan import Campaign
    from hpcbench.report.browser.server import BrowserServer, is_loopback

    if not is_loopback(host):
        if not public:
            raise click.UsageError(f"--host {host}: serves the campaign's sources and outputs beyond this machine; "
                                   "add --public to mean it (or use an SSH tunnel to 127.0.0.1)")
        click.echo(f"hpcbench view: warning: serving on {host}, beyond this machine: anyone who can reach it "
                   "reads every source, output and log of the campaign, with no password", err=True)
    c = Campaign(Path(campaign_dir))
    try:
        srv = BrowserServer(c.h5_path, scoring_id, host, port, tuple(allow_hosts))
    except OSError as e:
        raise click.UsageError(f"--host {host} --port {port}: cannot listen there ({e.strerror or e}); "
                               "try --port 0 for any free port") from None
    click.echo(f"hpcbench view: {srv.url}  ({len(srv.index['rows'])} submissions, scoring {srv.index['scoring']}); "
               "Ctrl-C stops it", err=True)
    try:
        srv.serve_forever()
    finally:
        srv.stop()


@click.command()
@campaign_arg
@click.argument("other", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--scoring", help="scoring of CAMPAIGN_DIR (default: the latest)")
@click.option("--against", help="scoring of OTHER, or a second scoring of CAMPAIGN_DIR (default: the latest other)")
@click.option("--agent", help="compare two agents: this one ...")
@click.option("--against-agent", help="... against this one (problem by problem, means of their attempts)")
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
def compare(campaign_dir, other, scoring, against, agent, against_agent, fmt) -> None:
    """Two campaigns, two scorings of one campaign, or two agents side by side: per cell the
    change of composite, tier, gates, hidden checks and each evaluator; new failures and passes."""
    import json

    from hpcbench.report.compare import compare as run
    from hpcbench.report.compare import comparison_markdown

    res = run(Path(campaign_dir), Path(other) if other else None, scoring, against, agent, against_agent)
    click.echo(json.dumps(res, indent=1, default=str) if fmt == "json" else comparison_markdown(res), nl=False)


def register(main: click.Group) -> None:
    main.add_command(compare)
    main.add_command(report)
    main.add_command(explain)
    main.add_command(view)
