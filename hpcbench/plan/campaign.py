"""A campaign folder and the plan of jobs in it.

    <campaign>/
      campaign.json            manifest: site, problems, agents, skips, rejections, provenance
      submissions/<agent>/<problem>/<attempt>/   staged copies (only the declared files, read-only,
                               sha256 of each in .staged.json, checked by collect)
      specs/<job>.json         one JobSpec per job
      work/<job>/              build and run folders of a job
      records/<job>.json       one JobResult per finished job (written by the job)
      snapshot/                problems and PETSc API facts as planned (hpcbench.plan.snapshot)
      .hpcbench.lock           held by run/submit while they plan and run (hpcbench.plan.locking)
      campaign.h5              written only by collect (columnar tables, docs/store.md)
      scores/<id>.h5           one file per scoring; judge_cache.jsonl: judge answers
      report/                  written by report
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import BaseModel

from hpcbench import __version__
from hpcbench.errors import ConfigError, HpcbenchError
from hpcbench.jobs.records import CaseRun, JobSpec, PerfPlan, Variant, write_atomic
from hpcbench.petsc_env import PetscInstall, find_variant, parse_version
from hpcbench.plan import escalations, staging
from hpcbench.plan.cases import select_cases
from hpcbench.plan.held_out import ensure_draw, read_draw, read_performance_draw
from hpcbench.plan.perf_draw import performance_args, published_as
from hpcbench.problem import Problem, ProblemBundle, ResidualCheck, TestCase
from hpcbench.profile import FULL, LOCAL_MPI_ENV, CampaignProfile
from hpcbench.site import SiteConfig, VariantConfig
from hpcbench.submission import LoadedSubmission, Rejected, Submission, request_rejected


class Skip(BaseModel):
    problem: str
    agent: str = "*"
    reason: str


class Manifest(BaseModel):
    campaign_id: str
    created: str
    hpcbench_version: str = __version__
    git_commit: str = ""
    site: str
    site_config: dict
    problems: list[str]
    agents: list[str]
    skipped: list[Skip] = []
    rejected: list[dict] = []
    refused: list[dict] = []
    petsc: dict[str, dict] = {}  # variant -> version, configure options, dir
    # The CampaignProfile it was planned with (hpcbench/profile.py); {} for campaigns planned
    # before profiles existed, read as the full profile
    profile: dict = {}
    # hpcbench.plan.staging.SCHEMA when submissions were staged with sha256s (collect then requires
    # them); 0 for campaigns planned before staging recorded hashes.
    staging: int = 0
    # Generations the infrastructure kept from being made (agents.generate.GenerationError): not
    # submissions, never scored; the report lists them and `hpcbench retry` redoes them.
    errors: list[dict] = []


def git_commit() -> str:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "") if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


@dataclass
class Campaign:
    root: Path

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()

    manifest_path = property(lambda self: self.root / "campaign.json")
    h5_path = property(lambda self: self.root / "campaign.h5")
    specs_dir = property(lambda self: self.root / "specs")
    records_dir = property(lambda self: self.root / "records")
    work_dir = property(lambda self: self.root / "work")
    submissions_dir = property(lambda self: self.root / "submissions")
    report_dir = property(lambda self: self.root / "report")

    def exists(self) -> bool:
        return self.manifest_path.is_file()

    def manifest(self) -> Manifest:
        if not self.exists():
            raise HpcbenchError(f"{self.root}: not a campaign folder (no campaign.json)")
        try:
            return Manifest.model_validate_json(self.manifest_path.read_bytes())
        except ValueError as e:  # pydantic's ValidationError too
            raise HpcbenchError(f"{self.manifest_path}: unreadable ({str(e).splitlines()[0][:200]}); planning "
                                "writes it: rerun `hpcbench run` or `submit` with --out on this folder") from None

    def save_manifest(self, m: Manifest) -> None:
        write_atomic(self.manifest_path, m.model_dump_json(indent=1))

    def profile(self) -> CampaignProfile:
        """The profile this campaign was planned with (campaigns from before profiles: full)."""
        p = self.manifest().profile
        return CampaignProfile.model_validate(p) if p else FULL

    def specs(self) -> list[JobSpec]:
        out = []
        for p in sorted(self.specs_dir.glob("*.json")):
            try:
                out.append(JobSpec.model_validate_json(p.read_bytes()))
            except ValueError as e:
                raise HpcbenchError(f"{p}: unreadable job spec ({str(e).splitlines()[0][:200]}); planning writes "
                                    "it: rerun `hpcbench run` or `submit` with --out on this campaign") from None
        return out

    def record_path(self, job_id: str) -> Path:
        return self.records_dir / f"{job_id}.json"

    def finished(self, job_id: str) -> bool:
        return self.record_path(job_id).is_file()


def resolve_variant(v: VariantConfig) -> PetscInstall:
    return find_variant(v.petsc_dir, v.petsc_arch)


@dataclass
class Plan:
    jobs: list[JobSpec] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    refused: list[LoadedSubmission] = field(default_factory=list)
    restaged: set[str] = field(default_factory=set)  # job ids whose staged sources changed
    rejected: list[Rejected] = field(default_factory=list)  # args or ranks the problem does not allow
    held_out: dict[str, list[TestCase]] = field(default_factory=dict)  # problem -> its drawn cases
    performance: dict[str, list[str]] = field(default_factory=dict)  # problem -> its perf case's drawn options


def choose_variant(problem: ProblemBundle, site: SiteConfig,
                   installs: dict[str, PetscInstall | Exception]) -> tuple[VariantConfig, PetscInstall] | str:
    """The first site variant whose PETSc offers what the problem requires, or why none does."""
    reasons = []
    for v in site.variants:
        inst = installs[v.name]
        if isinstance(inst, Exception):
            reasons.append(f"variant {v.name}: {inst}")
            continue
        have = set(inst.features) | set(v.provides)
        missing = [r for r in problem.problem.requires if r not in have]
        if missing:
            reasons.append(f"variant {v.name} lacks {', '.join(missing)}")
            continue
        if inst.version and parse_version(inst.version) < parse_version(problem.problem.min_petsc_version):
            reasons.append(f"variant {v.name} has PETSc {inst.version} < {problem.problem.min_petsc_version}")
            continue
        return v, inst
    return f"requires {', '.join(problem.problem.requires) or 'PETSc'} "\
           f">= {problem.problem.min_petsc_version}: " + "; ".join(reasons)


def job_id(agent: str, problem: str, attempt: str) -> str:
    return f"{agent}__{problem}__{attempt}"


def stage_submission(campaign: Campaign, sub: LoadedSubmission) -> tuple[Path, bool]:
    """Copy exactly the declared files and the metadata into the campaign, read-only,
    with their sha256s (hpcbench.plan.staging); True when the staged bytes changed."""
    m = sub.meta
    dest = campaign.submissions_dir / m.agent / m.problem / m.attempt
    return dest, staging.stage(sub, dest)


def case_runs(prob: Problem, args: list[str], held_out: list[TestCase], time_limit_factor: float = 1.0
              ) -> list[CaseRun]:
    """Every run of a submission: its `args` before each case's own, at each case's rank counts
    (limits `time_limit_factor` times the problem's); the held-out cases checked but not timed."""
    runs = [CaseRun(case=c.name, args=[*args, *c.args], ranks=r, time_limit_s=c.time_limit_s * time_limit_factor,
                    nodes=c.nodes) for c in prob.cases for r in c.ranks]
    return runs + [CaseRun(case=c.name, args=[*args, *c.args], ranks=r,
                           time_limit_s=c.time_limit_s * time_limit_factor, repeats=0)
                   for c in held_out for r in c.ranks]


def binds_refusal(site: SiteConfig, root: Path) -> str | None:
    """Why the site's isolation_binds would show a program what its sandbox hides (docs/security.md):
    the campaign folder (other jobs, specs, the snapshot's hidden checks), the problems folder
    (references, checks), hpcbench's own code and Python environment."""
    import hpcbench
    from hpcbench.problem import default_problems_dir

    hidden = {"the campaign folder": (Path(root), True),
              "the problems folder (hidden checks and references)": (default_problems_dir(), True),
              "hpcbench's own code": (Path(hpcbench.__file__).parent, True),
              "hpcbench's Python environment": (Path(sys.prefix), False)}
    for b in site.isolation_binds:
        bind = Path(os.path.expandvars(b)).resolve()
        for what, (path, inside_too) in hidden.items():
            path = path.resolve()
            if bind == path or bind in path.parents or (inside_too and path in bind.parents):
                return (f"{b!r} would show every build and run {what} ({path}); bind only the toolchain's "
                        "own folders")
    return None


def _installs(site: SiteConfig, given: Mapping[str, PetscInstall | Exception] | None
              ) -> dict[str, PetscInstall | Exception]:
    """Each variant's PETSc: as given (a dry run's declared install), else found here, else why not."""
    installs = dict(given or {})
    for v in site.variants:
        if v.name not in installs:
            try:
                installs[v.name] = resolve_variant(v)
            except FileNotFoundError as e:
                installs[v.name] = e
    return installs


@dataclass
class PlanRequest:
    """What a campaign runs: the problems, the loaded submissions (and those refused at loading),
    generation errors to record, the site's PETSc where it is not found here (a dry run for a
    cluster), and whether each job's work folder stays after its record."""

    problems: dict[str, ProblemBundle]
    submissions: list[LoadedSubmission]
    rejected: list[Rejected] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    installs: Mapping[str, PetscInstall | Exception] | None = None
    keep_work: bool = False


def _job_spec(campaign: Campaign, site: SiteConfig, profile: CampaignProfile, m: Submission, staged: Path,
              chosen: tuple[VariantConfig, PetscInstall], runs: list[CaseRun]) -> JobSpec:
    """One job as the profile asks it of this site (the site says what the machine allows)."""
    vcfg, inst = chosen
    jid = job_id(m.agent, m.problem, m.attempt)
    variant = Variant(name=vcfg.name, petsc_dir=str(inst.petsc_dir), petsc_arch=inst.petsc_arch,
                      runtime_options=vcfg.runtime_options, features=sorted(inst.features))
    launcher = site.launcher_for(vcfg.name)
    if profile.yield_when_idle and site.scheduler == "local":
        launcher = launcher.model_copy(update={"env": {**LOCAL_MPI_ENV, **launcher.env}})
    repeats = site.timing_repeats if profile.timing_repeats is None else profile.timing_repeats
    return JobSpec(
        job_id=jid, agent=m.agent, problem=m.problem, attempt=m.attempt, source_dir=str(staged), entry=m.entry,
        files=m.files, runs=runs, variant=variant, launcher=launcher, limits=site.limits, isolation=site.sandbox(),
        timing_repeats=repeats, valgrind=site.valgrind and profile.valgrind == "every",
        malloc_debug=site.malloc_debug and profile.malloc_debug, work_dir=str(campaign.work_dir / jid),
        record_path=str(campaign.record_path(jid)),
        cores=min(width := max(r.ranks for r in runs), site.job_cores(vcfg.name, width)),
        null_program_dir=str(campaign.work_dir / f"_null_{vcfg.name}"),
        gpus_per_rank=int("gpu" in vcfg.provides or bool({"cuda", "hip", "sycl"} & set(inst.features))),
        stop_at_failure=profile.stop_at_failure, build_cache=build_cache_dir(site, profile))


def build_cache_dir(site: SiteConfig, profile: CampaignProfile) -> str:
    """Where this campaign's jobs reuse built binaries ("": they build everything). Never where
    programs run unsandboxed: one could write into the cache what another job then runs."""
    if not profile.build_cache or site.isolation == "none" or site.build_cache == "none":
        return ""
    if site.build_cache:
        return os.path.expanduser(os.path.expandvars(site.build_cache))
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache_home, "hpcbench", "builds")


def chosen_variants(site: SiteConfig, profile: CampaignProfile, problems: dict[str, ProblemBundle],
                    installs: dict[str, PetscInstall | Exception]) -> tuple[dict, list[Skip]]:
    """Each problem's variant (among those the profile allows), or why none will do."""
    allowed = site if profile.variants is None else site.model_copy(
        update={"variants": [site.variant(v) for v in profile.variants]})
    chosen, skipped = {}, []
    for pid, bundle in problems.items():
        got = choose_variant(bundle, allowed, installs)
        if isinstance(got, str):
            skipped.append(Skip(problem=pid, reason=got))
        else:
            chosen[pid] = got
    return chosen, skipped


def valgrind_draw(seed: int | None, jid: str) -> int:
    """A job's draw of the case valgrind runs (JobSpec.valgrind_draw): from the campaign's
    held-out seed and the job, so a resumed campaign draws the same; 0 without a seed (the
    cheapest case, as a sweep's gating step has no held-out draw)."""
    if seed is None:
        return 0
    import hashlib

    return 1 + int.from_bytes(hashlib.sha256(f"{seed}:{jid}:valgrind".encode()).digest()[:4], "big") % (2 ** 30)


def plan_jobs(campaign: Campaign, site: SiteConfig, request: PlanRequest, profile: CampaignProfile = FULL,
              held_out: dict[str, list[TestCase]] | None = None) -> Plan:
    """Every job of `request` as `profile` asks it of `site` (`held_out`: each problem's cases
    drawn at planning, hpcbench/plan/held_out.py), escalations the pipeline made applied."""
    if site.isolation != "none" and (why := binds_refusal(site, campaign.root)):
        raise ConfigError(f"site {site.name}", "isolation_binds", why)
    installs = _installs(site, request.installs)
    chosen, skipped = chosen_variants(site, profile, request.problems, installs)
    plan = Plan(skipped=skipped)
    references: dict[str, Path] = {}
    escalated = escalations.read(campaign.root)
    seed = read_draw(campaign.root)[0]  # the held-out seed, never shown to a program
    plan.performance = read_performance_draw(campaign.root) if profile.performance != "off" else {}
    for sub in sorted(request.submissions, key=lambda s: s.meta.agent != "reference"):  # the references first
        m = sub.meta
        if m.problem not in chosen:
            continue
        # Defence in depth: loading checked these already; only allowed args ever reach a spec.
        bad = request_rejected(sub, request.problems[m.problem].problem)
        if bad is not None:
            plan.rejected.append(bad)
            continue
        staged, changed = stage_submission(campaign, sub)
        if m.agent == "reference" and not m.refused:
            references.setdefault(m.problem, staged)
        jid = job_id(m.agent, m.problem, m.attempt)
        if changed:
            plan.restaged.add(jid)
            if escalated.pop(jid, None) is not None:  # asked of the program it replaces
                escalations.drop(campaign.root, [jid])
        if m.refused:
            plan.refused.append(sub)
            continue
        if m.generation_error:  # nothing to build; collect stores it as a failed generation
            continue
        prob = request.problems[m.problem]
        runs = case_runs(prob.problem, m.args, (held_out or {}).get(m.problem, []), profile.time_limit_factor)
        spec = _job_spec(campaign, site, profile, m, staged, chosen[m.problem], runs)
        spec.solver_monitor = any(isinstance(c, ResidualCheck) for c in prob.checks.checks)
        spec.valgrind_draw = valgrind_draw(seed, jid) if profile.valgrind_case == "drawn" else 0
        if profile.performance != "off" and spec.timing_repeats:  # 0: nothing is timed, the perf case neither
            mine = None if profile.performance == "against-itself" else (staged, m.entry)
            spec.perf = perf_plan(campaign, site, prob, m.args, chosen[m.problem][0].name, references.get(m.problem),
                                  mine, plan.performance.get(m.problem, []))
        spec.keep_work = request.keep_work
        plan.jobs.append(escalations.apply(spec, escalated.get(jid)))
    return plan


def perf_plan(campaign: Campaign, site: SiteConfig, bundle: ProblemBundle, args: list[str], variant: str,
              reference: Path | None, program: tuple[Path, str] | None = None, drawn: list[str] | None = None
              ) -> PerfPlan | None:
    """The performance case of a job (None: the problem declares none, or no reference is staged
    in this campaign to measure it against). A site may run a bigger case (`performance_args`).
    `drawn`: the campaign's draw of its `params` (plan/perf_draw.py), applied to those arguments.
    `program` (its staged folder and entry): where it is the reference's files, entry and
    arguments byte for byte, the job times it once (`same_program`)."""
    perf = bundle.problem.performance
    if perf is None or reference is None:
        return None
    if perf.params and not drawn:  # never the public nominal case in its place
        raise HpcbenchError(f"{bundle.id}: its performance case draws {', '.join(p.option for p in perf.params)} "
                            f"but {campaign.root}/snapshot/held_out.json records no draw for it; plan it with "
                            "create_campaign (which draws), or into a new folder")
    case_args = performance_args(bundle.problem, drawn or [], site.performance_args.get(bundle.id))
    public = published_as(bundle.problem, case_args) if perf.params else None
    if public is not None:
        raise ConfigError(f"site {site.name}", f"performance_args.{bundle.id}",
                          f"with the drawn {' '.join(drawn or [])} it is {public}, whose answer is published; "
                          "set there only options the problem does not draw")
    home, meta = _program_home(campaign, "_perf_ref", bundle, variant, reference)
    par_home, par_meta = (_program_home(campaign, "_perf_par", bundle, variant, bundle.par_dir)
                          if bundle.has_par else (None, {}))

    def runs(extra: list[str]) -> list[CaseRun]:
        return [CaseRun(case="perf", args=[*extra, *case_args], ranks=r, time_limit_s=perf.time_limit_s)
                for r in perf.ranks]

    same = False
    hashes = staging.staged_hashes(reference)
    if program is not None and program[1] == meta["entry"] and args == meta.get("args", []):
        # the program's files only: submission.json differs by agent and attempt
        mine, theirs = staging.staged_hashes(program[0]), {f: hashes.get(f) for f in meta["files"]}
        same = None not in theirs.values() and {f: mine.get(f) for f in mine if f != "submission.json"} == theirs
    return PerfPlan(runs=runs(args), reference_runs=runs(meta.get("args", [])), repeats=perf.repeats,
                    reference_files=list(meta["files"]), reference_entry=meta["entry"], reference_dir=str(home),
                    same_program=same, max_repeats=max(perf.repeats, perf.max_repeats),
                    par_runs=runs(par_meta.get("args", [])) if par_home else [],
                    par_files=list(par_meta.get("files", [])), par_entry=par_meta.get("entry", ""),
                    par_dir=str(par_home or ""))


def _program_home(campaign: Campaign, kind: str, bundle: ProblemBundle, variant: str, folder: Path
                  ) -> tuple[Path, dict]:
    """Where the reference's (or the par's) performance binary is built and run in this campaign
    (`<work>/<kind>/<problem>-<variant>-<sources sha>`, its files copied to `src/` there once), and
    its submission.json."""
    meta = json.loads((folder / "submission.json").read_text())
    # a staged reference has its manifest; the par is read from the problem's folder
    hashes = staging.staged_hashes(folder) or {f: staging.sha256((folder / f).read_bytes()) for f in meta["files"]}
    tag = staging.sha256(json.dumps(hashes, sort_keys=True).encode())[:12]
    home = campaign.work_dir / kind / f"{bundle.id}-{variant}-{tag}"
    src = home / "src"  # the program's own files, where its performance binary is built (jobs/perf.py)
    if not src.is_dir():
        tmp = home / f".src.{os.getpid()}"
        tmp.mkdir(parents=True, exist_ok=True)
        for name in meta["files"]:
            shutil.copyfile(folder / name, tmp / name)
        try:
            tmp.rename(src)
        except OSError:  # another planner won: theirs is the same bytes (the folder's name is their hash)
            shutil.rmtree(tmp, ignore_errors=True)
    return home, meta


def create_campaign(root: Path, site: SiteConfig, request: PlanRequest, profile: CampaignProfile = FULL
                    ) -> tuple[Campaign, Plan]:
    """Create (or extend, resumably) a campaign folder and write its plan: `request` run as
    `profile` asks (recorded in campaign.json) on `site`."""
    campaign = Campaign(root)
    campaign.root.mkdir(parents=True, exist_ok=True)
    for d in (campaign.specs_dir, campaign.records_dir, campaign.work_dir, campaign.submissions_dir):
        d.mkdir(exist_ok=True)
    problems, none_left = as_run(request.problems, profile)
    from hpcbench.plan.snapshot import clear_problems, write_snapshot  # here: hpcbench.store imports this module

    if profile.resnapshot:  # validation measures the problems as they are now (the records stay valid)
        clear_problems(campaign.root)
    drawn = ensure_draw(campaign.root, problems, profile.held_out_seed, profile.held_out,
                        performance=profile.performance != "off", draws=profile.held_out_draws,
                        redraw_changed=profile.resnapshot, cases=profile.held_out_cases)
    plan = plan_jobs(campaign, site, replace(request, problems=problems), profile, drawn)
    plan.held_out = drawn
    plan.skipped += none_left
    write_specs(campaign, plan)
    petsc = petsc_facts(site)
    save_plan_manifest(campaign, site, request, profile, plan, petsc)
    write_snapshot(campaign.root, problems, petsc, as_run=profile.cases != "all")
    from hpcbench.plan.contamination import staged_programs, write_contamination

    planned = {(j.agent, j.problem, j.attempt) for j in plan.jobs}
    write_contamination(campaign.root, staged_programs(campaign.submissions_dir,
                                                       [s for s in request.submissions if s.key in planned]), petsc)
    return campaign, plan


def as_run(problems: dict[str, ProblemBundle], profile: CampaignProfile) -> tuple[dict[str, ProblemBundle],
                                                                                  list[Skip]]:
    """The problems reduced to the profile's cases, and a skip for each with no check left there."""
    out, skipped = {}, []
    for pid, b in problems.items():
        got = select_cases(b, profile.cases)
        if got is None:
            skipped.append(Skip(problem=pid, reason=f"no hidden check judges the cases of profile {profile.name} "
                                                    f"({profile.cases})"))
        else:
            out[pid] = got
    return out, skipped


def replan(campaign: Campaign, site: SiteConfig, request: PlanRequest, profile: CampaignProfile, plan: Plan) -> Plan:
    """The jobs planned again, as create_campaign did (its held-out draw kept), with the
    escalations recorded since (hpcbench/plan/escalations.py); changed specs lose their records."""
    problems, _ = as_run(request.problems, profile)
    again = plan_jobs(campaign, site, replace(request, problems=problems), profile, plan.held_out)
    again.held_out = plan.held_out
    write_specs(campaign, again)
    return again


def write_specs(campaign: Campaign, plan: Plan) -> None:
    """Each job's spec; a job whose sources or spec changed since its record was written loses it."""
    for spec in plan.jobs:
        path = campaign.specs_dir / f"{spec.job_id}.json"
        if campaign.finished(spec.job_id) and (
                spec.job_id in plan.restaged or (path.is_file() and _spec_changed(path, spec))):
            campaign.record_path(spec.job_id).unlink()
        write_atomic(path, spec.model_dump_json(indent=1))


def petsc_facts(site: SiteConfig) -> dict[str, dict]:
    """Each variant's PETSc as found here (version, configure options, features), or why not."""
    petsc: dict[str, dict] = {}
    for v in site.variants:
        try:
            inst = resolve_variant(v)
            petsc[v.name] = {"version": inst.version, "configure_options": inst.configure_options,
                             "petsc_dir": str(inst.petsc_dir), "petsc_arch": inst.petsc_arch,
                             "features": sorted(inst.features)}
        except FileNotFoundError as e:
            petsc[v.name] = {"error": str(e)}
    return petsc


def save_plan_manifest(campaign: Campaign, site: SiteConfig, request: PlanRequest, profile: CampaignProfile,
                       plan: Plan, petsc: dict[str, dict]) -> None:
    try:
        old = campaign.manifest() if campaign.exists() else None
    except HpcbenchError:  # unreadable: this plan writes it again (its id is the folder's name)
        old = None
    campaign.save_manifest(Manifest(
        campaign_id=old.campaign_id if old else campaign.root.name,
        created=old.created if old else dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        git_commit=git_commit(), site=site.name, site_config=site.model_dump(mode="json"),
        profile=profile.model_dump(mode="json"),
        problems=sorted(request.problems), agents=sorted({s.meta.agent for s in request.submissions}),
        skipped=plan.skipped, rejected=[r.as_dict() for r in [*request.rejected, *plan.rejected]],
        refused=[{"agent": s.meta.agent, "problem": s.meta.problem, "attempt": s.meta.attempt,
                  "reason": s.meta.refusal_reason} for s in plan.refused],
        petsc=petsc, staging=staging.SCHEMA, errors=request.errors,
    ))


def _spec_changed(path: Path, spec: JobSpec) -> bool:
    """Whether what the job computes changed (keeping its work folder or not does not, nor the
    campaign folder having been moved or copied: its own paths are compared relative to it)."""
    try:
        text = path.read_text()
        old_root = Path(json.loads(text)["record_path"]).parent.parent
    except (OSError, ValueError, KeyError, TypeError):
        return True
    new_root = Path(spec.record_path).parent.parent
    if old_root != new_root:
        text = text.replace(json.dumps(f"{old_root}/")[1:-1], json.dumps(f"{new_root}/")[1:-1])
    old = json.loads(text)
    old.pop("keep_work", None)
    return old != json.loads(spec.model_dump_json(exclude={"keep_work"}))


def pending(campaign: Campaign, jobs: list[JobSpec]) -> list[JobSpec]:
    """Jobs without a record: what a resumed submit still has to run."""
    return [j for j in jobs if not campaign.finished(j.job_id)]


def dump(obj: object) -> str:
    return json.dumps(obj, indent=1, default=str)
