"""Running a sweep: choose the submissions (only those that passed every gate), plan the
sweep campaign (an ordinary campaign whose problems' cases are the sweep points, valgrind
off, K timing repeats), hand its jobs to the site's executor, measure the machine's own
baseline where we run the launcher ourselves, collect, analyse and store.

The sweep never talks to a scheduler: `executor_for(site, campaign)` does, and packs the
jobs into one allocation where the executor supports it (hpcbench.executors, issue 12 B)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from hpcbench.errors import HpcbenchError
from hpcbench.jobs.records import write_atomic
from hpcbench.plan.campaign import Campaign, PlanRequest
from hpcbench.problem import ProblemBundle
from hpcbench.profile import LOCAL_MPI_ENV, CampaignProfile, sweep_profile
from hpcbench.site import SiteConfig
from hpcbench.submission import LoadedSubmission, load_tree, reference_submission
from hpcbench.sweep.plan import SweepPlan, sweep_problem

PLAN_FILE = "sweep.json"
Notify = Callable[[str], None]


def gated_submissions(campaign_dir: Path, problems: dict[str, ProblemBundle], scoring_id: str | None = None
                      ) -> tuple[list[LoadedSubmission], list[str]]:
    """The staged copies of a scored campaign's submissions that passed every gate in its
    scoring (the latest by default), and a line for each one left out and why. The
    reference is not among them: the sweep always adds the bundled one."""
    from hpcbench.store.scorings import read_scoring

    Campaign(campaign_dir).manifest()  # "not a campaign folder" before "no scoring yet"
    sc = read_scoring(Path(campaign_dir), scoring_id)
    passed = {(r["agent"], r["problem"], r["attempt"]) for r in sc.rows
              if r["gates_passed"] and not r["refused"] and r["agent"] != "reference"}
    left = [f"{r['agent']}/{r['problem']}/{r['attempt']}: failed gate {r['failed_gate'] or r['status']}"
            for r in sc.rows if r["problem"] in problems and r["agent"] != "reference"
            and (r["agent"], r["problem"], r["attempt"]) not in passed]
    # the staged tree holds exactly the bytes that were gated (sha256 in .staged.json)
    subs, rejected = load_tree(Campaign(campaign_dir).submissions_dir, set(problems))
    left += [f"{r}" for r in rejected]
    return [s for s in subs if s.key in passed and s.meta.problem in problems], left


def with_references(subs: list[LoadedSubmission], problems: dict[str, ProblemBundle]) -> list[LoadedSubmission]:
    """The yardstick: every problem's bundled reference, swept beside the submissions."""
    out = [s for s in subs if s.meta.agent != "reference"]
    for pid, b in problems.items():
        ref = reference_submission(b.folder, pid)
        if not isinstance(ref, LoadedSubmission):
            raise HpcbenchError(f"{pid}: its reference does not load ({ref}); a sweep needs it as the yardstick")
        out.append(ref)
    return out


def sweep_request(problems: dict[str, ProblemBundle], plan: SweepPlan, subs: list[LoadedSubmission]
                  ) -> tuple[CampaignProfile, PlanRequest]:
    """The sweep as a campaign: each problem's cases are its sweep points (sweep_problem), the
    programs beside the references, under the sweep profile (its variant, K repeats, no
    valgrind, ranks that yield locally: hpcbench/profile.py)."""
    swept = {ps.problem: sweep_problem(problems[ps.problem], ps) for ps in plan.problems}
    return sweep_profile(plan.variant, plan.repeats), PlanRequest(swept, with_references(subs, swept))


def write_plan(campaign: Campaign, plan: SweepPlan) -> None:
    campaign.root.mkdir(parents=True, exist_ok=True)
    write_atomic(campaign.root / PLAN_FILE, plan.model_dump_json(indent=1))


def read_plan(root: Path) -> SweepPlan | None:
    p = Path(root) / PLAN_FILE
    return SweepPlan.model_validate_json(p.read_text()) if p.is_file() else None


def baseline_path(campaign: Campaign, variant: str) -> Path:
    return campaign.root / "machine" / f"baseline-{variant}.json"


def measure_baseline(site: SiteConfig, profile: CampaignProfile, campaign: Campaign, plan: SweepPlan,
                     notify: Notify) -> Path | None:
    """The machine's own latency, bandwidth and allreduce at the sweep's rank counts.
    On a batch site the allocation measures it before the jobs (the packing executor);
    here only where the launcher runs on this machine."""
    path = baseline_path(campaign, plan.variant)
    if path.is_file() or site.is_batch():
        return path if path.is_file() else None
    try:
        from hpcbench import machine_baseline
    except ImportError:
        notify("machine baseline: not measured (hpcbench.machine_baseline is not in this build); "
               "efficiencies are shown without it")
        return None
    try:
        env = LOCAL_MPI_ENV if profile.yield_when_idle and site.scheduler == "local" else {}
        machine_baseline.measure_locally(site, plan.rank_counts(), path, plan.variant, env)  # as the runs launch
    except Exception as e:  # noqa: BLE001 - the sweep goes on without the baseline and says why
        notify(f"machine baseline: measurement failed ({type(e).__name__}: {e}); shown without it")
        return None
    return path if path.is_file() else None


def read_baseline(campaign_root: Path, variant: str) -> dict | None:
    p = Path(campaign_root) / "machine" / f"baseline-{variant}.json"
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text())
    except ValueError:
        return None


def finish(campaign: Campaign, plan: SweepPlan, notify: Notify) -> bool:
    """Collect, analyse and store /sweep; False when no job has a record yet. The scaling report
    is the caller's (hpcbench/pipeline.py): a stage below report does not write reports."""
    from hpcbench import store

    if not any(campaign.records_dir.glob("*.json")):
        notify("no job has finished yet; run the same command again (it resumes) to analyse")
        return False
    store.collect(campaign)
    analyse_and_store(campaign, plan)
    return True


def analyse_and_store(campaign: Campaign, plan: SweepPlan) -> None:
    """/sweep derived from the collected store: by `finish`, and by `hpcbench collect` when the
    store was rebuilt from the records (the group is derived, never kept only there)."""
    from hpcbench import store
    from hpcbench.plan.campaign import git_commit
    from hpcbench.sweep.analysis import analyse_sweep
    from hpcbench.sweep.tables import write_sweep

    stored = store.read_campaign(campaign.h5_path, events=True)
    records = {(s.meta.agent, s.meta.problem, s.meta.attempt): s.record for s in stored.submissions}
    checks = {pid: c for pid, (_, c) in stored.problems.items()}
    analysis = analyse_sweep(plan, records, checks)
    baseline = read_baseline(campaign.root, plan.variant)
    write_sweep(campaign.h5_path, plan, analysis, baseline, sum(r is not None for r in records.values()),
                git_commit())
