"""The `hpcbench` command line."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import click

from hpcbench.cli_judge import judge_config, judge_options, judge_summary
from hpcbench.errors import HpcbenchError


def _fail(msg: str, code: int = 2) -> None:
    click.echo(f"hpcbench: error: {msg}", err=True)
    sys.exit(code)


_last: list[Counter] = []


def _progress(counts: Counter) -> None:
    """One line per change of the counts (redrawn in place on a terminal)."""
    if _last and _last[-1] == counts:
        return
    _last[:] = [counts.copy()]
    msg = f"jobs: {counts['pending']} queued, {counts['running']} running, {counts['done']} done"
    if sys.stderr.isatty():
        click.echo(f"\r{msg}   ", nl=False, err=True)
    else:
        click.echo(msg, err=True)


def _gather(agents: list[str], submissions: str | None, problems: dict,
            generated: Path | None = None) -> tuple[list, list]:
    from hpcbench.agents import reserved_agent_names
    from hpcbench.resources import data_path
    from hpcbench.submission import load_tree, reference_submission

    ok, bad = [], []
    known = {p.name for p in data_path("problems").iterdir() if (p / "problem.json").is_file()}
    reserved = reserved_agent_names()  # user trees may not pose as the reference or a sample agent
    to_generate = []
    for agent in agents:
        if agent == "reference":
            continue  # added below for every problem, always from the bundle
        elif agent == "samples":
            o, b = load_tree(data_path("examples") / "submissions", known)
            ok += o
            bad += b
        elif agent.startswith("dir:"):
            o, b = load_tree(Path(agent[4:]), known, reserved)
            ok += o
            bad += b
        elif generated is not None and agent.split(":", 1)[0] in ("litellm", "a2a", "repair"):
            to_generate.append(agent)
        else:
            raise HpcbenchError(f"--agent {agent!r}: known agents are reference, samples, dir:PATH, "
                                "litellm:MODEL, a2a:URL, repair:INNER:N (or `hpcbench generate` first)")
    if to_generate:  # one attempt per problem into <out>/generated (resumable), then loaded like any tree
        from hpcbench.cli_agents import generate_tree

        generate_tree(to_generate, problems, generated)
        o, b = load_tree(generated, known, reserved)
        ok += o
        bad += b
    if submissions:
        o, b = load_tree(Path(submissions), known, reserved)
        ok += o
        bad += b
    ok = [s for s in ok if s.meta.problem in problems]  # --problems narrows, it does not reject
    # The reference is every campaign's baseline: its output is what reference_run checks compare to.
    # A problem whose bundled reference does not load is planned without one, and not scored.
    for pid, b in problems.items():
        res = reference_submission(b.folder, pid)
        (ok if hasattr(res, "meta") else bad).append(res)
    return ok, bad


def _plan(out: str, site_name: str, agents: list[str], submissions: str | None, problem_ids: str | None,
          installs: dict | None = None, keep_work: bool = False):
    from hpcbench.campaign import create_campaign
    from hpcbench.problem import load_problems
    from hpcbench.site import load_site

    site = load_site(site_name)
    ids = [p.strip() for p in problem_ids.split(",") if p.strip()] if problem_ids else None
    problems = load_problems(None, ids)
    subs, rejected = _gather(agents, submissions, problems, Path(out) / "generated")
    for r in rejected:
        click.echo(f"rejected: {r}", err=True)
    campaign, plan = create_campaign(Path(out), site, problems, subs, rejected, installs, keep_work)
    for s in plan.skipped:
        click.echo(f"skipped {s.problem}: {s.reason}", err=True)
    return site, campaign, plan


def _submit(site, campaign, plan, resume: bool = True, account: str | None = None, block: bool = True) -> None:
    from hpcbench.campaign import pending
    from hpcbench.executors import executor_for

    todo = pending(campaign, plan.jobs) if resume else plan.jobs
    click.echo(f"campaign {campaign.root}: {len(plan.jobs)} jobs, {len(plan.jobs) - len(todo)} already done",
               err=True)
    ex = executor_for(site, campaign)
    ex.account = account  # batch schedulers charge it (--account / HPCBENCH_ACCOUNT); local ignores it
    if todo:
        ex.submit(todo, progress=_progress)
    if hasattr(ex, "wait"):  # a batch scheduler: submit returned once the jobs were queued
        click.echo(f"submitted {len(todo)} jobs to {site.scheduler}", err=True)
        if block and todo:
            ex.wait(plan.jobs, progress=_progress)
    click.echo("", err=True)


def _collect_score_report(campaign, judge=None) -> tuple[str, list]:
    from hpcbench import report, scoring, store

    store.collect(campaign)
    sid, scores = scoring.score(campaign.h5_path, judge=judge)
    md = report.markdown(campaign.h5_path, sid)
    campaign.report_dir.mkdir(exist_ok=True)
    (campaign.report_dir / "report.md").write_text(md)
    report.write(campaign.h5_path, "html", campaign.report_dir / "report.html", sid)  # plots embedded
    return md, scores


def _exit_if_unscored(scores) -> None:
    """Problems without a usable reference run were not scored: say which, and fail the command."""
    from hpcbench.reference_status import NOT_SCORED

    why = {sc.problem: sc.status for sc in scores if sc.status.startswith(NOT_SCORED)}
    for pid, status in sorted(why.items()):
        n = sum(sc.problem == pid for sc in scores)
        click.echo(f"hpcbench: error: problem {pid}: {status} ({n} submission{'s' * (n != 1)})", err=True)
    if why:
        sys.exit(1)


def _default_out(site_name: str) -> str:
    import datetime as dt

    from hpcbench.site import load_site

    root = Path(load_site(site_name).storage_root)
    return str(root / dt.datetime.now().strftime("campaign-%Y%m%d-%H%M%S"))


class Main(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (HpcbenchError, FileNotFoundError, FileExistsError, LookupError, NotImplementedError) as e:
            _fail(str(e))
        except KeyboardInterrupt:
            # The local executor has stopped its jobs by now; nothing unfinished was recorded as done.
            click.echo("\nhpcbench: interrupted; jobs stopped. Rerun the same command to resume.", err=True)
            sys.exit(130)


@click.group(cls=Main)
@click.version_option(package_name="hpcbench")
def main() -> None:
    """Build, run and score PETSc programs written by AI agents."""


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


def with_common(f):
    for opt in reversed([agent_opt, *common]):
        f = opt(f)
    return f


wait_lock_opt = click.option("--wait-lock", is_flag=True,
                             help="if another run/submit is writing this campaign, wait for it (default: refuse)")


def _lock(out: str, wait: bool):
    from hpcbench.locking import campaign_lock

    return campaign_lock(Path(out), wait, notify=lambda m: click.echo(f"hpcbench: {m}", err=True))


keep_work_opt = click.option("--keep-work", is_flag=True,
                             help="keep work/<job> (sources, objects, binary, logs) after its record is written")


@main.command()
@with_common
@wait_lock_opt
@keep_work_opt
@judge_options
def run(agents, site, submissions, problem_ids, out, wait_lock, keep_work, **judge) -> None:
    """Plan, run, collect, score and report in one go (default: local site,
    the reference and the bundled sample agents, every supported problem)."""
    agents = list(agents) or ["reference", "samples"]
    out = out or _default_out(site)
    judge_cfg = judge_config(**judge)  # a bad judge option fails before any job runs
    with _lock(out, wait_lock):
        s, campaign, plan = _plan(out, site, agents, submissions, problem_ids, keep_work=keep_work)
        _submit(s, campaign, plan)
        md, scores = _collect_score_report(campaign, judge_cfg)
    click.echo(md)
    click.echo(f"campaign: {campaign.root}\nreport:   {campaign.report_dir / 'report.md'} (and report.html)")
    _exit_if_unscored(scores)


@main.command()
@with_common
@click.option("--resume/--no-resume", default=True, help="skip jobs that already have a record")
@click.option("--account", help="allocation to charge (default: $HPCBENCH_ACCOUNT)")
@click.option("--dry-run", is_flag=True, help="plan and print the batch scripts; submit nothing")
@click.option("--wait/--no-wait", "block", default=False, help="batch sites: follow the jobs until they end")
@wait_lock_opt
@keep_work_opt
def submit(agents, site, submissions, problem_ids, out, resume, account, dry_run, block, wait_lock,
           keep_work) -> None:
    """Plan jobs and hand them to the site's executor (Slurm/PBS: queue them and return)."""
    agents = list(agents) or ([] if submissions else ["reference"])
    out = out or _default_out(site)
    if dry_run:
        from hpcbench.cli_sched import dry_run as show

        show(out, site, agents, submissions, problem_ids, account)
        return
    with _lock(out, wait_lock):
        s, campaign, plan = _plan(out, site, agents, submissions, problem_ids, keep_work=keep_work)
        _submit(s, campaign, plan, resume, account, block)
    click.echo(f"campaign: {campaign.root}")


@main.command()
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
def status(campaign_dir) -> None:
    """Per-state counts and per-job states of a campaign."""
    from hpcbench.campaign import Campaign
    from hpcbench.executors import executor_for
    from hpcbench.site import SiteConfig

    c = Campaign(Path(campaign_dir))
    m = c.manifest()
    site = SiteConfig.model_validate(m.site_config)
    specs = c.specs()
    ex = executor_for(site, c)
    states = ex.states(specs)
    counts = Counter(states.values())
    click.echo(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "no jobs")
    details = ex.details(specs) if hasattr(ex, "details") else {}  # scheduler id, its state, tries
    for jid, st in sorted(states.items()):
        d = details.get(jid)
        click.echo(f"  {st:9s} {jid}" + (f"  [{d.sched_id} {d.state}, try {d.tries}]" if d else ""))


@main.command()
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
def collect(campaign_dir) -> None:
    """Add new and changed job records to campaign.h5 (incremental, idempotent)."""
    from hpcbench import store
    from hpcbench.campaign import Campaign

    c = Campaign(Path(campaign_dir))
    counts = store.collect(c)
    for line in counts["unreadable"]:
        click.echo(f"skipped: {line}", err=True)
    click.echo(f"{c.h5_path}: {counts['submissions']} submissions, {counts['records']} with records, "
               f"{counts['missing']} still without; {counts['added']} added, {counts['replaced']} replaced, "
               f"{counts['unchanged']} unchanged" + (f", {counts['removed']} removed" if counts["removed"] else ""))


@main.command()
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--scoring-id", help="name of the new scoring, scores/<id>.h5 (default: a timestamp)")
@judge_options
def score(campaign_dir, scoring_id, **judge) -> None:
    """Score campaign.h5 offline into a new scores/<id>.h5 (LLM judges with --judge)."""
    from hpcbench import scoring
    from hpcbench.campaign import Campaign

    c = Campaign(Path(campaign_dir))
    if not c.h5_path.is_file():
        _fail(f"{c.h5_path}: not collected yet; run `hpcbench collect {campaign_dir}`")
    sid, scores = scoring.score(c.h5_path, scoring_id, judge_config(**judge))
    from hpcbench.store.scorings import read_scoring, scoring_path

    click.echo(f"scoring {sid}: {len(scores)} submissions scored into {scoring_path(c.root, sid)}")
    click.echo(judge_summary(read_scoring(c.root, sid).config))
    _exit_if_unscored(scores)


@main.command()
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["md", "html", "csv", "json"]), default="md", show_default=True)
@click.option("--scoring-id", help="which scoring (default: the latest)")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="write to this file instead of stdout")
def report(campaign_dir, fmt, scoring_id, out_file) -> None:
    """Leaderboard, per-problem table, category profile, failure taxonomy, costs
    and judge agreement of a scored campaign (html: one self-contained file)."""
    from hpcbench import report as rep
    from hpcbench.campaign import Campaign

    c = Campaign(Path(campaign_dir))
    if out_file:
        for p in rep.write(c.h5_path, fmt, Path(out_file), scoring_id):
            click.echo(f"report: {p}", err=True)
    else:
        click.echo(rep.render(c.h5_path, fmt, scoring_id), nl=False)


@main.command()
def problems() -> None:
    """List the bundled problems and whether this PETSc supports them."""
    from hpcbench.campaign import choose_variant, resolve_variant
    from hpcbench.problem import load_problems
    from hpcbench.site import load_site

    site = load_site("local")
    installs = {}
    for v in site.variants:
        try:
            installs[v.name] = resolve_variant(v)
        except FileNotFoundError as e:
            installs[v.name] = e
    for pid, b in load_problems().items():
        got = choose_variant(b, site, installs)
        state = "ok" if not isinstance(got, str) else f"skipped: {got}"
        p = b.problem
        click.echo(f"{pid:16s} {p.difficulty:6s} {'+'.join(p.modules):22s} {state}")


@main.command("validate-checks")
@click.option("--problems", "problem_ids", help="comma-separated problem ids (default: every problem with mutants)")
@click.option("--only", help="comma-separated program names: run just these mutants/variants")
@click.option("--out", type=click.Path(file_okay=False), default="./validate-checks", show_default=True,
              help="work folder (reruns reuse finished jobs)")
@click.option("--markdown", "md_file", type=click.Path(dir_okay=False), help="also write a table per problem")
@click.option("--json", "json_file", type=click.Path(dir_okay=False), help="also write every outcome as JSON")
@click.option("--retry-time-factor", type=float, default=4.0, show_default=True,
              help="rerun jobs with a timed-out run once with time limits this many times longer (1: never)")
def validate_checks(problem_ids, only, out, md_file, json_file, retry_time_factor) -> None:
    """Measure the hidden checks by mutation testing: per problem the kill rate of wrong
    programs (accuracy < 0.5) and the acceptance rate of valid variants (accuracy >= 0.95);
    exit 1 when a problem misses kill >= 95% or acceptance 100%."""
    import json

    from hpcbench import validate_checks as vc

    ids = [p.strip() for p in problem_ids.split(",") if p.strip()] if problem_ids else None
    names = {n.strip() for n in only.split(",") if n.strip()} if only else None
    reports = vc.run(ids, Path(out), names, progress=_progress, retry_time_factor=retry_time_factor)
    click.echo(vc.summary(reports))
    if md_file:
        Path(md_file).write_text(vc.markdown(reports))
    if json_file:
        Path(json_file).write_text(json.dumps(vc.as_json(reports), indent=1))
    sys.exit(0 if all(r.meets_targets for r in reports) else 1)


@main.command()
@click.option("--site", default="local", show_default=True)
@click.option("--account", help="allocation to check (default: $HPCBENCH_ACCOUNT)")
@click.option("--no-launch", is_flag=True, help="skip the 2-rank MPI program through the launcher")
def doctor(site, account, no_launch) -> None:
    """Check a site before spending an allocation: scheduler commands, account, each PETSc
    variant (version, claimed configure options, features), compilers, the launcher, and
    which problems that rules out."""
    from hpcbench.cli_sched import doctor_report

    sys.exit(1 if doctor_report(site, account, run_launcher=not no_launch) else 0)


from hpcbench.cli_judge import agreement, calibrate  # noqa: E402

main.add_command(agreement)
main.add_command(calibrate)

from hpcbench.cli_agents import generate, mcp  # noqa: E402

main.add_command(generate)
main.add_command(mcp)

from hpcbench.cli_lint import lint  # noqa: E402

main.add_command(lint)

from hpcbench.cli_report import explain  # noqa: E402

main.add_command(explain)


from hpcbench.cli_sched import register as _register_sched  # noqa: E402

_register_sched(main)

from hpcbench.cli_sweep import register as _register_sweep  # noqa: E402

_register_sweep(main)


if __name__ == "__main__":
    main()
