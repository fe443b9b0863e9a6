"""`hpcbench plan-power`: how many attempts per problem (or problems) a campaign would
need to detect a wanted difference of mean composite between two agents, from the
variance a scored campaign shows (hpcbench.stats.power)."""

from __future__ import annotations

from pathlib import Path

import click

from hpcbench.errors import HpcbenchError


@click.command("plan-power")
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--difference", type=click.FloatRange(min=0, min_open=True), multiple=True,
              help="the difference of mean composite (points, 0-100) to detect between two agents; repeatable "
                   "(default: 10, 5 and 2)")
@click.option("--problems", type=click.IntRange(1), help="problems of the planned campaign (default: this one's)")
@click.option("--power", type=click.FloatRange(0.5, 0.99), default=0.8, show_default=True)
@click.option("--scoring", "--scoring-id", "scoring_id", help="which scoring (default: the latest)")
def plan_power(campaign_dir, difference, problems, power, scoring_id) -> None:
    """Attempts per problem (or problems) needed to detect each DIFFERENCE with POWER among the
    pairs the leaderboard tests."""
    from hpcbench.plan import Campaign
    from hpcbench.score import uncertainty
    from hpcbench.stats import power as pw
    from hpcbench.stats.analysis import (
        COMPOSITE,
        DIFFERENCES,
        by_agent,
        cells,
        common_groups,
        pair_count,
        pass_passes,
    )
    from hpcbench.store.scorings import read_scoring

    c = Campaign(Path(campaign_dir))
    sc = read_scoring(c.root, scoring_id)
    doc = uncertainty.load_uncertainty(c.root, sc.sid, sc.rows)
    settings = uncertainty.settings_of(doc)
    groups, _ = common_groups(by_agent(uncertainty.attempts_from_rows(sc.rows)))
    comp = pw.components({a: cells(m, COMPOSITE) for a, m in groups.items()},
                         passes={a: pass_passes(m) for a, m in groups.items()}, level=settings.level)
    pairs = pair_count(len(groups))  # the leaderboard tests every pair: each at 5% / pairs (Holm's first step)
    p = problems or comp.problems
    click.echo(f"scoring {sc.sid}: {len(groups)} agent{'s' * (len(groups) != 1)}; spread of attempts within a "
               f"problem s_w^2 = {_f(comp.within)} (df {comp.within_df}), agent-by-problem interaction "
               f"s_g^2 = {_f(comp.interaction)}")
    try:
        now = pw.detectable(comp, comp.problems, max(1, comp.attempts), settings, power, pairs)
        click.echo(f"this design ({comp.problems} problem{'s' * (comp.problems != 1)}, {comp.attempts} attempts per "
                   "agent and problem) detects "
                   f"{now['difference']:.1f} points ({now['scope']}; as one of {pairs} pair{'s' * (pairs != 1)} "
                   "the leaderboard tests)")
        for diff in difference or sorted(DIFFERENCES, reverse=True):
            click.echo(_plan_line(comp, diff, p, settings, power, pairs))
    except ValueError as e:
        raise HpcbenchError(f"cannot plan from {c.root} (scoring {sc.sid}): {e}") from None


def _plan_line(comp, difference: float, p: int, settings, power: float, pairs: int) -> str:
    """What detecting `difference` needs (power.plan): attempts on `p` problems, or problems at this
    campaign's attempts."""
    from hpcbench.stats import power as pw

    row = pw.plan(comp, difference, p, settings, power, pairs)
    more, n = row["problems"], row["attempts"]
    each = f"{more} problems with {comp.attempts} attempt{'s' * (comp.attempts != 1)} each"
    if n is not None:
        d = pw.detectable(comp, p, n, settings, power, pairs)
        return (f"to detect {difference:g} points with {p} problem{'s' * (p != 1)}: {n} attempts per agent and "
                f"problem (detects {d['difference']:.1f}; {d['scope']})" + (f"; or {each}" if more else ""))
    if row["note"]:  # one attempt each: more problems can be planned, more attempts not
        return (f"to detect {difference:g} points: {each if more else 'more problems than can be planned'} "
                f"(more attempts cannot be planned: {row['note']})")
    return (f"to detect {difference:g} points no number of attempts on {p} problems suffices: the agents' gap "
            "varies from problem to problem more than attempts average out"
            + (f"; {each} would" if more else ""))


def _f(x: float | None) -> str:
    return "unknown" if x is None else f"{x:.2f}"


def register(main: click.Group) -> None:
    main.add_command(plan_power)
