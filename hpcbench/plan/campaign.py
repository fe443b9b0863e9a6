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
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from hpcbench import __version__
from hpcbench.errors import ConfigError, HpcbenchError
from hpcbench.jobs.records import CaseRun, JobSpec, PerfPlan, Variant, write_atomic
from hpcbench.petsc_env import PetscInstall, find_variant, parse_version
from hpcbench.plan import staging
from hpcbench.plan.held_out import ensure_draw
from hpcbench.problem import Problem, ProblemBundle, TestCase
from hpcbench.site import SiteConfig, VariantConfig
from hpcbench.submission import LoadedSubmission, Rejected, request_rejected


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


def case_runs(prob: Problem, args: list[str], held_out: list[TestCase]) -> list[CaseRun]:
    """Every run of a submission: its `args` before each case's own, at each case's rank counts;
    the held-out cases checked but not timed."""
    runs = [CaseRun(case=c.name, args=[*args, *c.args], ranks=r, time_limit_s=c.time_limit_s)
            for c in prob.cases for r in c.ranks]
    return runs + [CaseRun(case=c.name, args=[*args, *c.args], ranks=r, time_limit_s=c.time_limit_s, repeats=0)
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


def _installs(site: SiteConfig, given: dict[str, PetscInstall | Exception] | None
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


def plan_jobs(campaign: Campaign, site: SiteConfig, problems: dict[str, ProblemBundle],
              submissions: list[LoadedSubmission], installs: dict[str, PetscInstall | Exception] | None = None,
              keep_work: bool = False, held_out: dict[str, list[TestCase]] | None = None,
              reference_against_itself: bool = False, stop_at_failure: bool = False) -> Plan:
    """`installs` overrides looking PETSc up here (a dry run for a cluster's PETSc); `held_out`:
    each problem's cases drawn at planning (hpcbench/plan/held_out.py); `reference_against_itself`:
    time the reference's own performance case against a second copy of it (validate-performance's
    control of the measurement's noise) instead of once (PerfPlan.same_program); `stop_at_failure`: JobSpec's."""
    if site.isolation != "none" and (why := binds_refusal(site, campaign.root)):
        raise ConfigError(f"site {site.name}", "isolation_binds", why)
    installs = _installs(site, installs)
    plan = Plan()
    chosen: dict[str, tuple[VariantConfig, PetscInstall]] = {}
    for pid, bundle in problems.items():
        got = choose_variant(bundle, site, installs)
        if isinstance(got, str):
            plan.skipped.append(Skip(problem=pid, reason=got))
        else:
            chosen[pid] = got
    cores = site.total_cores()
    references: dict[str, Path] = {}
    for sub in sorted(submissions, key=lambda s: s.meta.agent != "reference"):  # the references first
        m = sub.meta
        if m.problem not in chosen:
            continue
        # Defence in depth: loading checked these already; only allowed args ever reach a spec.
        bad = request_rejected(sub, problems[m.problem].problem)
        if bad is not None:
            plan.rejected.append(bad)
            continue
        staged, changed = stage_submission(campaign, sub)
        if m.agent == "reference" and not m.refused:
            references.setdefault(m.problem, staged)
        if changed:
            plan.restaged.add(job_id(m.agent, m.problem, m.attempt))
        if m.refused:
            plan.refused.append(sub)
            continue
        if m.generation_error:  # nothing to build; collect stores it as a failed generation
            continue
        vcfg, inst = chosen[m.problem]
        prob = problems[m.problem].problem
        runs = case_runs(prob, m.args, (held_out or {}).get(m.problem, []))
        jid = job_id(m.agent, m.problem, m.attempt)
        variant = Variant(name=vcfg.name, petsc_dir=str(inst.petsc_dir), petsc_arch=inst.petsc_arch,
                          runtime_options=vcfg.runtime_options, features=sorted(inst.features))
        width = max(r.ranks for r in runs)
        plan.jobs.append(JobSpec(
            job_id=jid, agent=m.agent, problem=m.problem, attempt=m.attempt, source_dir=str(staged),
            entry=m.entry, files=m.files, runs=runs, variant=variant, launcher=site.launcher_for(vcfg.name),
            limits=site.limits, isolation=site.sandbox(), keep_work=keep_work,
            timing_repeats=site.timing_repeats, valgrind=site.valgrind, malloc_debug=site.malloc_debug,
            work_dir=str(campaign.work_dir / jid), record_path=str(campaign.record_path(jid)),
            cores=min(width, cores), null_program_dir=str(campaign.work_dir / f"_null_{vcfg.name}"),
            gpus_per_rank=int("gpu" in vcfg.provides or bool({"cuda", "hip", "sycl"} & set(inst.features))),
            perf=perf_plan(campaign, site, problems[m.problem], m.args, vcfg.name, references.get(m.problem),
                           None if reference_against_itself else (staged, m.entry)),
            stop_at_failure=stop_at_failure,
        ))
    return plan


def perf_plan(campaign: Campaign, site: SiteConfig, bundle: ProblemBundle, args: list[str], variant: str,
              reference: Path | None, program: tuple[Path, str] | None = None) -> PerfPlan | None:
    """The performance case of a job (None: the problem declares none, or no reference is staged
    in this campaign to measure it against). A site may run a bigger case (`performance_args`).
    `program` (its staged folder and entry): where it is the reference's files, entry and
    arguments byte for byte, the job times it once (`same_program`)."""
    perf = bundle.problem.performance
    if perf is None or reference is None or site.timing_repeats == 0:  # 0: an accuracy-only tool (validate-checks)
        return None
    case_args = site.performance_args.get(bundle.id, perf.args)
    hashes = staging.staged_hashes(reference)
    tag = staging.sha256(json.dumps(hashes, sort_keys=True).encode())[:12]
    meta = json.loads((reference / "submission.json").read_text())
    home = campaign.work_dir / "_perf_ref" / f"{bundle.id}-{variant}-{tag}"
    src = home / "src"  # the reference's own files, where its performance binary is built (jobs/perf.py)
    if not src.is_dir():
        tmp = home / f".src.{os.getpid()}"
        tmp.mkdir(parents=True, exist_ok=True)
        for name in meta["files"]:
            shutil.copyfile(reference / name, tmp / name)
        try:
            tmp.rename(src)
        except OSError:  # another planner won: theirs is the same bytes (the folder's name is their hash)
            shutil.rmtree(tmp, ignore_errors=True)

    def runs(extra: list[str]) -> list[CaseRun]:
        return [CaseRun(case="perf", args=[*extra, *case_args], ranks=r, time_limit_s=perf.time_limit_s)
                for r in perf.ranks]

    same = False
    if program is not None and program[1] == meta["entry"] and args == meta.get("args", []):
        # the program's files only: submission.json differs by agent and attempt
        mine, theirs = staging.staged_hashes(program[0]), {f: hashes.get(f) for f in meta["files"]}
        same = None not in theirs.values() and {f: mine.get(f) for f in mine if f != "submission.json"} == theirs
    return PerfPlan(runs=runs(args), reference_runs=runs(meta.get("args", [])), repeats=perf.repeats,
                    reference_files=list(meta["files"]), reference_entry=meta["entry"], reference_dir=str(home),
                    same_program=same)


def create_campaign(root: Path, site: SiteConfig, problems: dict[str, ProblemBundle],
                    submissions: list[LoadedSubmission], rejected: list[Rejected],
                    installs: dict[str, PetscInstall | Exception] | None = None,
                    keep_work: bool = False, errors: list[dict] | None = None, held_out_seed: int | None = None,
                    held_out: bool = True, reference_against_itself: bool = False,
                    stop_at_failure: bool = False) -> tuple[Campaign, Plan]:
    """Create (or extend, resumably) a campaign folder and write its plan. `held_out_seed`:
    the seed of the held-out cases' draw (random when None; kept once drawn); `held_out`
    False plans none (a sweep's cases are its sizes); the last two: plan_jobs."""
    campaign = Campaign(root)
    campaign.root.mkdir(parents=True, exist_ok=True)
    for d in (campaign.specs_dir, campaign.records_dir, campaign.work_dir, campaign.submissions_dir):
        d.mkdir(exist_ok=True)
    drawn = ensure_draw(campaign.root, problems, held_out_seed, held_out)
    plan = plan_jobs(campaign, site, problems, submissions, installs, keep_work, drawn, reference_against_itself,
                     stop_at_failure)
    plan.held_out = drawn
    rejected = [*rejected, *plan.rejected]
    for spec in plan.jobs:
        path = campaign.specs_dir / f"{spec.job_id}.json"
        text = spec.model_dump_json(indent=1)
        if campaign.finished(spec.job_id) and (
                spec.job_id in plan.restaged or (path.is_file() and _spec_changed(path, spec))):
            # The submission's sources or the site changed since it ran: its record is stale.
            campaign.record_path(spec.job_id).unlink()
        write_atomic(path, text)
    petsc = {}
    for v in site.variants:
        try:
            inst = resolve_variant(v)
            petsc[v.name] = {"version": inst.version, "configure_options": inst.configure_options,
                             "petsc_dir": str(inst.petsc_dir), "petsc_arch": inst.petsc_arch,
                             "features": sorted(inst.features)}
        except FileNotFoundError as e:
            petsc[v.name] = {"error": str(e)}
    try:
        old = campaign.manifest() if campaign.exists() else None
    except HpcbenchError:  # unreadable: this plan writes it again (its id is the folder's name)
        old = None
    manifest = Manifest(
        campaign_id=old.campaign_id if old else campaign.root.name,
        created=old.created if old else dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        git_commit=git_commit(), site=site.name, site_config=site.model_dump(mode="json"),
        problems=sorted(problems), agents=sorted({s.meta.agent for s in submissions}),
        skipped=plan.skipped,
        rejected=[r.as_dict() for r in rejected],
        refused=[{"agent": s.meta.agent, "problem": s.meta.problem, "attempt": s.meta.attempt,
                  "reason": s.meta.refusal_reason} for s in plan.refused],
        petsc=petsc, staging=staging.SCHEMA, errors=errors or [],
    )
    campaign.save_manifest(manifest)
    from hpcbench.plan.snapshot import write_snapshot  # here: hpcbench.store imports this module

    write_snapshot(campaign.root, problems, petsc)  # what collect and score read instead of the checkout
    from hpcbench.plan.contamination import staged_programs, write_contamination

    planned = {(j.agent, j.problem, j.attempt) for j in plan.jobs}
    write_contamination(campaign.root, staged_programs(campaign.submissions_dir,
                                                       [s for s in submissions if s.key in planned]), petsc)
    return campaign, plan


def _spec_changed(path: Path, spec: JobSpec) -> bool:
    """Whether what the job computes changed (keeping its work folder or not does not)."""
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return True
    old.pop("keep_work", None)
    return old != json.loads(spec.model_dump_json(exclude={"keep_work"}))


def pending(campaign: Campaign, jobs: list[JobSpec]) -> list[JobSpec]:
    """Jobs without a record: what a resumed submit still has to run."""
    return [j for j in jobs if not campaign.finished(j.job_id)]


def dump(obj: object) -> str:
    return json.dumps(obj, indent=1, default=str)
