"""`hpcbench sweep`: multi-rank scaling sweeps (docs/sweeps.md). Hung on the command
group by `register(group)`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hpcbench.errors import HpcbenchError


def _ints(text: str | None, opt: str) -> list[int] | None:
    if not text:
        return None
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{text!r}: comma-separated integers, e.g. 1,2,4", param_hint=opt) from None
    if not out or any(x < 1 for x in out):
        raise click.BadParameter(f"{text!r}: positive integers", param_hint=opt)
    return out


def _say(msg: str) -> None:
    click.echo(f"sweep: {msg}", err=True)


def _problems(problem_ids: str | None) -> dict:
    from hpcbench.problem import load_problems

    ids = [p.strip() for p in problem_ids.split(",") if p.strip()] if problem_ids else None
    problems = load_problems(None, ids)
    if ids is None:  # default: every problem that says how it scales
        problems = {k: v for k, v in problems.items() if v.problem.scaling is not None}
    return problems


def _gate(out: Path, site, agents: list[str], submissions: str | None, problem_ids: str, wait_lock: bool):
    """Ungated programs run through the gates first, as an ordinary campaign in <out>/gates."""
    from hpcbench.cli.stages import Shown
    from hpcbench.pipeline import gate_campaign

    gates = out / "gates"
    _say(f"running the gates first (an ordinary campaign in {gates}); only programs that pass every gate are swept")
    gate_campaign(gates, site, agents, submissions, problem_ids, wait_lock, Shown(gates))
    return gates


def _programs(out: Path, site, problems: dict, from_campaign: str | None, agents: list[str],
              submissions: str | None, dry_run: bool, wait_lock: bool) -> tuple[list, str]:
    """The programs to sweep (those that passed every gate) and the campaign that gated them."""
    from hpcbench.sweep.run import gated_submissions

    ungated = [a for a in agents if a != "reference"] or ([] if not submissions else ["(tree)"])
    if from_campaign:
        gates = Path(from_campaign)
    elif ungated and dry_run:
        _say("the programs would first run through the gates (an ordinary campaign in <out>/gates); "
             "the dry run shows the reference's points only")
        return [], ""
    elif ungated:
        gates = _gate(out, site, agents, submissions, ",".join(problems), wait_lock)
    else:
        return [], ""
    subs, left = gated_submissions(gates, problems)
    for line in left:
        _say(f"not swept: {line}")
    return subs, str(gates.resolve())


def _dry_run(plan, subs) -> None:
    click.echo(f"sweep plan (site {plan.site}, variant {plan.variant}, modes {','.join(plan.modes)}, "
               f"{plan.repeats} repeats, {plan.cores} cores per node):")
    for ps in plan.problems:
        click.echo(f"  {ps.problem}: {ps.option} sizes {sorted({p.size for p in ps.points})}; outputs that must "
                   f"stay right: {', '.join(ps.outputs) or '(none declared)'}")
        for p in ps.points:
            click.echo(f"    {p.mode:6s} {ps.option} {p.size:<8d} ranks {p.ranks:<5d} nodes {p.nodes}"
                       + ("  oversubscribed" if p.oversubscribed else ""))
    for note in plan.notes:
        click.echo(f"  note: {note}")
    progs = sorted({f"{s.meta.agent}/{s.meta.problem}/{s.meta.attempt}" for s in subs})
    click.echo(f"programs ({len(progs)}; the reference of each problem always): {', '.join(progs)}")


def _dry_run_scripts(out: Path, site, problems: dict, plan, subs: list, account: str | None) -> None:
    """The sweep campaign planned with the PETSc the site declares, and the one packed
    allocation per variant it would submit, with every launch command."""
    from dataclasses import replace

    from hpcbench.cli.stages import print_scripts
    from hpcbench.pipeline import Stages, execute
    from hpcbench.plan import declared_installs
    from hpcbench.sweep.run import sweep_request, write_plan

    profile, request = sweep_request(problems, plan, subs)
    got = execute(profile, out, site, replace(request, installs=declared_installs(site)), Stages(run=False))
    write_plan(got.campaign, plan)
    try:
        print_scripts(site, got.campaign, got.planned.plan.jobs, account, pack=True, baseline_ranks=plan.rank_counts())
    except HpcbenchError as e:  # e.g. no account yet: the plan above still stands
        _say(f"no batch script shown: {e}")


def register(group: click.Group) -> None:
    group.add_command(sweep)


@click.command()
@click.option("--site", default="local", show_default=True, help="site name or path to a site YAML")
@click.option("--agent", "agents", multiple=True, help="reference | samples | dir:PATH (repeatable): "
              "run through the gates first (<out>/gates), then the programs that passed are swept")
@click.option("--submissions", type=click.Path(file_okay=False), help="tree <agent>/<problem>/<attempt>/ "
              "(gated first, like --agent)")
@click.option("--from", "from_campaign", type=click.Path(exists=True, file_okay=False),
              help="a scored campaign: sweep its programs that passed every gate (latest scoring)")
@click.option("--problems", "problem_ids", help="comma-separated problem ids (default: every problem with a "
              "scaling field)")
@click.option("--ranks", help="rank counts, e.g. 1,2,4,8 (default: the problem's scaling.ranks)")
@click.option("--nodes", help="node counts, e.g. 1,2 (batch sites)")
@click.option("--sizes", help="sizes of the problem's scaling option (default: its scaling.values)")
@click.option("--mode", type=click.Choice(["strong", "weak", "both"]), default="strong", show_default=True)
@click.option("--repeats", type=int, default=3, show_default=True, help="timing repeats per point (median, spread)")
@click.option("--variant", help="PETSc variant of the site (default: its first)")
@click.option("--account", help="allocation to charge (default: $HPCBENCH_ACCOUNT)")
@click.option("--dry-run", is_flag=True, help="print the plan and refuse what cannot run; submit nothing")
@click.option("--resume/--no-resume", default=True, help="skip points already recorded")
@click.option("--wait/--no-wait", "block", default=True, help="batch sites: wait for the allocation, then analyse")
@click.option("--wait-lock", is_flag=True, help="wait for another run/submit writing this folder")
@click.option("--out", type=click.Path(file_okay=False), help="sweep campaign folder (default with --from: "
              "CAMPAIGN/sweeps/<time>)")
@click.option("--trust-submissions", "trust", is_flag=True,
              help="run agents' programs even on a site with isolation: none (they get your rights)")
def sweep(site, agents, submissions, from_campaign, problem_ids, ranks, nodes, sizes, mode, repeats, variant,
          account, dry_run, resume, block, wait_lock, out, trust) -> None:
    """Strong and weak scaling of programs that passed every gate, beside each problem's reference."""
    import datetime as dt

    from hpcbench.cli.progress import JOBS, Display
    from hpcbench.cli.stages import Jobs, lock, say
    from hpcbench.pipeline import Stages, run_sweep
    from hpcbench.site import load_site
    from hpcbench.sweep.plan import Mode, make_plan
    from hpcbench.sweep.run import with_references

    if from_campaign and (agents or submissions):
        raise HpcbenchError("--from takes the programs of a scored campaign; do not add --agent/--submissions")
    if not out:
        if not from_campaign:
            raise click.UsageError("--out DIR is needed (or --from CAMPAIGN, which defaults to CAMPAIGN/sweeps/<time>)")
        out = str(Path(from_campaign) / "sweeps" / dt.datetime.now().strftime("sweep-%Y%m%d-%H%M%S"))
    s = load_site(site)
    if not dry_run:
        from hpcbench.plan.trust import require_trust

        require_trust(s, list(agents), submissions, trust, from_campaign)
    problems = _problems(problem_ids)
    if not problems:
        raise HpcbenchError("no problem to sweep (none of them has a scaling field)")
    modes: list[Mode] = ["strong", "weak"] if mode == "both" else [mode]
    plan = make_plan(problems, s, modes=modes, ranks=_ints(ranks, "--ranks"), nodes=_ints(nodes, "--nodes"),
                     sizes=_ints(sizes, "--sizes"), repeats=repeats, variant=variant)  # refusals: nothing ran yet
    outp = Path(out)
    subs, gated_by = _programs(outp, s, problems, from_campaign, list(agents), submissions, dry_run, wait_lock)
    plan = plan.model_copy(update={"gated_by": gated_by})
    for pid in problems:
        if gated_by and not dry_run and not any(x.meta.problem == pid for x in subs):
            _say(f"{pid}: no program passed every gate; sweeping its reference only")
    if dry_run:
        _dry_run(plan, with_references(subs, problems))
        _dry_run_scripts(outp, s, problems, plan, subs, account)
        return
    with lock(str(outp), wait_lock):
        # a sweep always runs in one allocation per variant (batch sites), the machine baseline first
        with Display(JOBS) as display:
            stages = Stages(rerun_done=not resume, account=account, block=block)
            campaign, report = run_sweep(outp, s, problems, plan, subs, stages, _say, Jobs(display, say))
        click.echo("", err=True)
    if report is None:
        sys.exit(0)
    from hpcbench.sweep.tables import read_sweep

    stored = read_sweep(campaign.h5_path)
    assert stored is not None
    bad = [p for p in stored.analysis.points if p.status != "ok"]
    for p in bad:
        _say(f"{p.agent}/{p.problem}/{p.attempt} {p.mode} {p.size} at {p.ranks} ranks: {p.status}: {p.reason}")
    click.echo(f"sweep: {campaign.root}\nreport: {report}")
