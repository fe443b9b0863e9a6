"""`execute`: the one way a campaign runs, whoever asks for it (run, submit, a sweep's gating
and its points, calibrate, validate-checks, validate-performance).

    plan (create_campaign: the request as the profile asks it of the site, the profile in
    campaign.json) -> the site's executor runs the jobs without a record -> jobs the profile
    escalates run again (a time-out while waiting for a CPU: longer limits) -> collect -> score
    -> programs that passed every check get valgrind where the profile says so -> report.

What differs between these drivers is the profile (hpcbench/profile.py, recorded) and the
stages they want (`Stages`: plan only, stop once the jobs are queued, score, report); none of
them rewrites a plan, a spec or a site. What the pipeline asks of a job after it ran is an
escalation (hpcbench/plan/escalations.py), recorded, applied again by every later plan."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpcbench.pipeline.outcome import CampaignOutcome, Reporter, Say, quiet
from hpcbench.plan import Campaign, Gathered, Plan, Planned, PlanRequest, create_campaign, pending
from hpcbench.plan.campaign import replan
from hpcbench.profile import CampaignProfile
from hpcbench.site import SiteConfig

if TYPE_CHECKING:
    from hpcbench.pipeline.outcome import Outcomes, Progress, ScoringProgress


@dataclass
class Stages:
    """How far a campaign goes and how its jobs are handed over."""

    run: bool = True  # False: plan only (a dry run: nothing runs)
    score: bool = True  # collect and score once the jobs ended (False: submit, which may return once queued)
    report: bool = False  # report.md and report.html (run)
    block: bool = True  # a batch site: wait for the jobs
    rerun_done: bool = False  # run jobs that already have a record too
    account: str | None = None
    pack: bool | None = None  # one allocation per variant (executors/pack.py); None: the site's default
    baseline_ranks: list[int] | None = None  # packed: the mpi4py machine baseline first (sweeps)
    judge: Any = None
    settings: Any = None  # the bootstrap's (hpcbench.stats)
    time_metric: str = "ratio"
    scoring_options: dict = field(default_factory=dict)


def run_jobs(site: SiteConfig, campaign: Campaign, plan: Plan, stages: Stages, say: Say = quiet,
             progress: Progress | None = None, outcomes: Outcomes | None = None) -> bool:
    """The site's executor runs every pending job (those without a record unless
    `stages.rerun_done`); a batch site returns once they are queued unless `stages.block`.
    Whether the jobs have ended (False: queued on a batch site)."""
    from hpcbench.executors import executor_for

    todo = plan.jobs if stages.rerun_done else pending(campaign, plan.jobs)
    say(f"campaign {campaign.root}: {len(plan.jobs)} jobs, {len(plan.jobs) - len(todo)} already done")
    ex = executor_for(site, campaign, account=stages.account, pack=stages.pack, baseline_ranks=stages.baseline_ranks)
    shown = outcomes(campaign.records_dir, progress) if outcomes and progress and not ex.batch else progress
    if todo:
        ex.submit(todo, progress=shown)
    if not ex.batch:
        return True
    say(f"submitted {len(todo)} jobs to {site.scheduler}")
    if stages.block and todo:
        ex.wait(plan.jobs, progress=shown)
    return stages.block or not todo


def collect_and_score(campaign: Campaign, stages: Stages, say: Say = quiet, sp: ScoringProgress | None = None
                      ) -> tuple[str, list]:
    """collect, then score: (the scoring's id, the scores)."""
    from hpcbench import store
    from hpcbench.score import scoring

    counts = store.collect(campaign)
    if counts.get("rebuilt"):
        say(f"collect: {counts['rebuilt']}")
    options = {"time_metric": stages.time_metric, **stages.scoring_options}
    return scoring.score(campaign.h5_path, judge=stages.judge, progress=sp.judge if sp else None,
                         evaluated=sp.evaluated if sp else None, stats=stages.settings, options=options)


def execute(profile: CampaignProfile, out: Path, site: SiteConfig, request: PlanRequest,
            stages: Stages | None = None, reporter: Reporter | None = None,
            gathered: Gathered | None = None) -> CampaignOutcome:
    """Plan `request` at `out` as `profile` asks of `site`, then run, escalate, collect, score and
    report as far as `stages` says; `gathered`: how the submissions were gathered (run's agents)."""
    st = stages or Stages()
    rep = reporter or Reporter()
    campaign, plan = create_campaign(Path(out), site, request, profile)
    planned = Planned(campaign, plan, gathered or Gathered(list(request.submissions), list(request.rejected)))
    rep.planned(planned)
    if not st.run:
        return CampaignOutcome(planned)
    with rep.running() as progress:
        ended = run_jobs(site, campaign, plan, st, rep.say, progress, rep.outcomes)
        if ended and profile.retry_starved > 1:
            _retry_starved(site, campaign, request, profile, plan, st, progress)
    if not (st.score and ended):
        return CampaignOutcome(planned)
    with rep.scoring() as sp:
        sid, scores = collect_and_score(campaign, st, rep.say, sp)
        if profile.valgrind == "passing" and _valgrind_passing(site, campaign, request, profile, plan, scores, st):
            sid, scores = collect_and_score(campaign, st, rep.say, sp)
        md = ""
        if st.report:
            from hpcbench import report

            md = report.write_campaign_report(campaign.h5_path, campaign.report_dir, sid)
    return CampaignOutcome(planned, True, scores, md)


def _retry_starved(site: SiteConfig, campaign: Campaign, request: PlanRequest, profile: CampaignProfile,
                   plan: Plan, stages: Stages, progress: Any) -> None:
    """Jobs with a run killed at its time limit while the machine held it back run once more
    with `profile.retry_starved` times longer limits (an escalation: a later plan keeps them)."""
    from hpcbench.pipeline.starved import timed_out_starved
    from hpcbench.plan import escalations

    before = escalations.read(campaign.root)
    again = [j.job_id for j in timed_out_starved(campaign, plan.jobs, profile.retry_unmeasured)
             if before.get(j.job_id) is None or before[j.job_id].time_limit_factor == 1.0]
    if not again:
        return
    escalations.add(campaign.root, again, time_limit_factor=profile.retry_starved)
    run_jobs(site, campaign, replan(campaign, site, request, profile, plan), stages, progress=progress)


def _valgrind_passing(site: SiteConfig, campaign: Campaign, request: PlanRequest, profile: CampaignProfile,
                      plan: Plan, scores: list, stages: Stages) -> bool:
    """Programs that passed every gate and every hidden check run once more under valgrind
    (whether any did). Without it a read past an array that happens to find a plausible value
    prints numbers the checks accept, where `hpcbench run` (valgrind on) stops it at the memory
    gate. The job keeps its finished runs (handed to it as a stopped try's partial record,
    jobs/resume.py) and adds only the valgrind run."""
    from hpcbench.jobs import resume
    from hpcbench.plan import escalations
    from hpcbench.score.scoring import accuracy_passed

    passed = {(sc.agent, sc.attempt) for sc in scores if not sc.failed_gate and accuracy_passed(sc.results)}
    again = [j for j in plan.jobs if j.agent != "reference" and not j.valgrind and (j.agent, j.attempt) in passed
             and campaign.finished(j.job_id)]
    if not again or not site.valgrind:
        return False
    for spec in again:
        resume.hand_back(campaign.record_path(spec.job_id), Path(spec.work_dir))
    escalations.add(campaign.root, [j.job_id for j in again], valgrind=True)
    run_jobs(site, campaign, replan(campaign, site, request, profile, plan), stages)
    return True
