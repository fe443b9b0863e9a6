"""`hpcbench validate-checks`: measure the hidden checks by mutation testing.

Every problem brings, in `problems/<id>/mutants/mutants.json` (hidden, like
checks.json), wrong programs (mutants of the reference: small edits of its C
source, each with a one-line reason) and valid variants (other solvers,
tolerances, options the task allows). They run through the same pipeline as
`hpcbench run` (plan, local executor, collect, score) beside the reference, and
the numerical-accuracy score of each decides:

- a wrong program is *killed* when its accuracy is below `KILL_BELOW` (or a
  gate stops it: it would score 0 on the leaderboard), else it *survives*;
- a valid variant is *accepted* when its accuracy is at least `ACCEPT_AT`,
  else it is *rejected* (a check that punishes a correct program).

Generated mutants (hpcbench.mutation) join them: edits of the reference made by
operators over its syntax tree, a seeded sample per problem, each run once per case
at the case's largest rank count, and judged broken, equivalent (probable), killed or
surviving (hpcbench.mutation.verdict).

Valgrind and the timing repeats are switched off: accuracy reads only the
instrumented run, and they would triple the time taken."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from hpcbench.errors import ConfigError
from hpcbench.mutation import report as generated_report
from hpcbench.mutation.verdict import GeneratedReport, MutantOutcome
from hpcbench.problem import ProblemBundle, load_json_model
from hpcbench.score.scoring import CHECKS_PASSED_AT
from hpcbench.strict import FrozenStrict

KILL_BELOW = 0.5
# A valid variant must pass every hidden check: it is what earns a tier (score.scoring.tier),
# and a correct program denied one is a check that punishes correct work.
ACCEPT_AT = CHECKS_PASSED_AT
KILL_TARGET = 0.95
# where the problems as each kind of campaign runs them are written (mutation/screen.write_problem):
# a campaign snapshots a problem's files, so they must say which cases and rank counts ran
AS_RUN = "problems-as-run"
GENERATED_PER_PROBLEM = 40  # the default sample of generated mutants (None: every one)
ACCEPT_TARGET = 1.0
MUTANTS_FILE = "mutants/mutants.json"

Name = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]


class Edit(FrozenStrict):
    """Replace the one occurrence of `find` in `file` by `replace` (a C diff that
    reads as what it changes and survives unrelated edits of the reference)."""

    file: str = "main.c"
    find: Annotated[str, Field(min_length=1)]
    replace: str


class Program(FrozenStrict):
    name: Name
    reason: Annotated[str, Field(min_length=10)]
    edits: list[Edit] = []
    args: list[str] = []  # options added before each case's own (submission.json `args`)


class Harmless(FrozenStrict):
    """A generated mutant a person judged harmless: it passes every check though its numbers
    differ, and is a correct program (a solver tolerance twice as tight, a Jacobian entry the
    converged answer does not depend on). Matched by its edit on the reference's line, so it
    survives unrelated edits elsewhere; reported with its reason, not counted in the kill rate."""

    operator: str
    line: Annotated[str, Field(min_length=1)]  # the reference's source line, stripped
    original: str
    replacement: str
    reason: Annotated[str, Field(min_length=10)]


class MutantLibrary(FrozenStrict):
    wrong: Annotated[list[Program], Field(min_length=1)]
    valid: Annotated[list[Program], Field(min_length=1)]
    harmless: list[Harmless] = []


@dataclass
class Outcome:
    kind: Literal["wrong", "valid"]
    name: str
    reason: str
    accuracy: float | None  # None: a gate stopped it, or nothing was scored
    failed_gate: str = ""
    why: str = ""  # the numerical-accuracy rationale (or the gate's)
    screened: bool = False  # decided by the screen (every case at one rank count): accuracy is an upper bound

    @property
    def broken(self) -> bool:
        """A mutant that does not compile tests nothing: it is reported, never counted as killed."""
        return self.failed_gate == "compilation"

    @property
    def killed(self) -> bool:
        if self.broken:
            return False
        return bool(self.failed_gate) or (self.accuracy is not None and self.accuracy < KILL_BELOW)

    @property
    def accepted(self) -> bool:
        return not self.failed_gate and self.accuracy is not None and self.accuracy >= ACCEPT_AT


@dataclass
class ProblemReport:
    problem: str
    outcomes: list[Outcome] = field(default_factory=list)
    error: str = ""  # the reference itself did not run: nothing here can be judged
    generated: GeneratedReport | None = None

    def of(self, kind: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.kind == kind]

    @property
    def kill_rate(self) -> float | None:
        w = self.of("wrong")
        return sum(o.killed for o in w) / len(w) if w else None

    @property
    def acceptance_rate(self) -> float | None:
        v = self.of("valid")
        return sum(o.accepted for o in v) / len(v) if v else None

    @property
    def meets_targets(self) -> bool:
        """Kill >= 95% and acceptance 100% on the library, kill >= 95% on the generated
        mutants; a part that did not run (--no-library, --generated 0) is not judged."""
        k, a = self.kill_rate, self.acceptance_rate
        g = self.generated.kill_rate if self.generated is not None else None
        library = (k is None and a is None) or (k is not None and a is not None and k >= KILL_TARGET
                                                and a >= ACCEPT_TARGET)
        return not self.error and library and (g is None or g >= KILL_TARGET) and (k, a, g) != (None, None, None)


def library_path(bundle: ProblemBundle) -> Path:
    return bundle.folder / MUTANTS_FILE


def load_library(bundle: ProblemBundle) -> MutantLibrary | None:
    """The problem's mutants and variants; None where it has none (refusal set, GPU-only)."""
    path = library_path(bundle)
    if not path.is_file():
        return None
    lib = load_json_model(path, MutantLibrary)
    assert isinstance(lib, MutantLibrary)
    seen: set[str] = set()
    for kind in ("wrong", "valid"):
        for i, prog in enumerate(getattr(lib, kind)):
            if prog.name in seen:
                raise ConfigError(path, f"{kind}[{i}].name", f"{prog.name!r} is used twice")
            seen.add(prog.name)
    return lib


def apply_edits(bundle: ProblemBundle, prog: Program, kind: str, index: int) -> dict[str, str]:
    """The reference's files with the program's edits applied; each `find` must occur exactly once."""
    meta = json.loads((bundle.reference_dir / "submission.json").read_text())
    files = {name: (bundle.reference_dir / name).read_text() for name in meta["files"]}
    for j, e in enumerate(prog.edits):
        where = f"{kind}[{index}].edits[{j}]"
        if e.file not in files:
            raise ConfigError(library_path(bundle), f"{where}.file", f"{e.file!r} is not a file of the reference")
        n = files[e.file].count(e.find)
        if n != 1:
            raise ConfigError(library_path(bundle), f"{where}.find",
                              f"occurs {n} times in reference/{e.file} (must be exactly once): {e.find[:60]!r}")
        files[e.file] = files[e.file].replace(e.find, e.replace)
    return files


def write_programs(bundles: dict[str, ProblemBundle], root: Path, only: set[str] | None = None
                   ) -> dict[str, MutantLibrary]:
    """Submission trees `root/<wrong|valid>/<problem>/<name>/` for every library (all checked first)."""
    libs = {pid: lib for pid, b in bundles.items() if (lib := load_library(b)) is not None}
    trees: list[tuple[Path, dict[str, str], dict]] = []
    for pid, lib in libs.items():
        b = bundles[pid]
        ref_meta = json.loads((b.reference_dir / "submission.json").read_text())
        for kind in ("wrong", "valid"):
            for i, prog in enumerate(getattr(lib, kind)):
                if only and prog.name not in only:
                    continue
                files = apply_edits(b, prog, kind, i)
                meta = {**ref_meta, "agent": kind, "attempt": prog.name, "args": prog.args}
                trees.append((root / kind / pid / prog.name, files, meta))
    for folder, files, meta in trees:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            if not (folder / name).is_file() or (folder / name).read_text() != text:
                (folder / name).write_text(text)  # unchanged files keep their job records valid
        (folder / "submission.json").write_text(json.dumps(meta, indent=1))
    return libs


def _submissions(libs: dict, bundles: dict, out: Path, only: set[str] | None) -> list:
    """The written programs (agent = wrong/valid) and each problem's reference, loaded."""
    from hpcbench.submission import load_submission, reference_submission

    subs = []
    for pid, lib in libs.items():
        for kind in ("wrong", "valid"):
            for prog in getattr(lib, kind):
                if only and prog.name not in only:
                    continue
                # a variant's args must be ones the problem lets a submission set, as any submission's
                got = load_submission(out / "programs" / kind / pid / prog.name, kind, pid, None, prog.name,
                                      problems={pid: bundles[pid].problem})
                if not hasattr(got, "meta"):
                    raise ConfigError(got.path, got.field, got.reason)
                subs.append(got)
    for pid, b in bundles.items():
        ref = reference_submission(b.folder, pid)
        if not hasattr(ref, "meta"):
            raise ConfigError(ref.path, ref.field, ref.reason)
        subs.append(ref)
    return subs


def _run_problem(root: Path, site, pid: str, bundle: ProblemBundle, subs: list, report: ProblemReport, progress,
                 retry_time_factor: float, confirm_passing: bool = False) -> list:
    """One problem's campaign (a campaign per problem: --problems subsets never mix in one
    campaign.h5): planned, run, timed-out jobs retried once, collected and scored. With
    `confirm_passing`, a job that passed every check runs once more under valgrind before it may be
    called equivalent or surviving (_valgrind_passing)."""
    from hpcbench import store
    from hpcbench.executors import executor_for
    from hpcbench.plan.campaign import create_campaign, pending
    from hpcbench.score import scoring

    retried = _retried_before(root)
    # A campaign's snapshot keeps the problem as first planned; validate-checks measures the
    # checks as they are now, so planning snapshots them afresh (the records stay valid).
    shutil.rmtree(root / "snapshot" / "problems", ignore_errors=True)
    (root / "snapshot" / "problems.json").unlink(missing_ok=True)
    # stop_at_failure: a failed run fails the execution gate, so the job's later cases would
    # only cost time (a wrong program that hangs: every case's limit, and 4x that on the retry)
    campaign, plan = create_campaign(root, site, {pid: bundle}, subs, [], stop_at_failure=True,
                                     held_out_seed=HELD_OUT_SEED)
    kept = _keep_retried(campaign, [j for j in plan.jobs if j.job_id not in plan.restaged], retried)
    for s in plan.skipped:
        report.error = f"skipped: {s.reason}"
    if plan.skipped:
        return []
    todo = pending(campaign, plan.jobs)
    if todo:
        executor_for(site, campaign).submit(todo, progress=progress)
    retry = [j for j in _timed_out(campaign, plan.jobs) if j.job_id not in kept]  # retried once at most
    if retry and retry_time_factor > 1:
        # A run killed at its time limit while it waited for a CPU says nothing about accuracy:
        # on a loaded machine (two-rank runs of other users' jobs competing for the cores)
        # correct programs hit limits meant for an idle one: such jobs run once more with longer
        # limits (and keep that record on later invocations: _keep_retried).
        for spec in retry:
            spec.runs = [r.model_copy(update={"time_limit_s": r.time_limit_s * retry_time_factor})
                         for r in spec.runs]
            (campaign.specs_dir / f"{spec.job_id}.json").write_text(spec.model_dump_json(indent=1))
            campaign.record_path(spec.job_id).unlink()
        executor_for(site, campaign).submit(retry, progress=progress)
    store.collect(campaign)
    scores = scoring.score(campaign.h5_path)[1]
    if confirm_passing and _valgrind_passing(campaign, site, [j for j in plan.jobs if j.job_id not in kept], scores,
                                          progress):
        store.collect(campaign)
        scores = scoring.score(campaign.h5_path)[1]
    return scores


def _valgrind_passing(campaign, site, jobs: list, scores: list, progress) -> bool:
    """Jobs that passed every gate and every hidden check (an equivalent or a surviving mutant),
    run once more with valgrind; whether any was (`jobs` leaves out records an earlier invocation kept:
    _keep_retried restores their specs, valgrind included). Without it (the rest of validate-checks runs without,
    for time) a read past an array that happens to find a zero or a plausible value prints
    numbers the checks accept, and would pass for an equivalent or a survivor, where `hpcbench
    run` (valgrind on by default) stops it at the memory gate. The job keeps its finished runs
    (handed to it as a stopped try's partial record, jobs/resume.py) and adds only the valgrind
    run: the same sources rebuilt, not every case run again (on the first all-problem
    measurement these reruns repeated about 600 instrumented runs)."""
    from hpcbench.executors import executor_for
    from hpcbench.jobs import resume
    from hpcbench.score.scoring import accuracy_passed

    passed = {(sc.agent, sc.attempt) for sc in scores if not sc.failed_gate and accuracy_passed(sc.results)}
    again = [s for s in jobs if s.agent != "reference" and not s.valgrind and (s.agent, s.attempt) in passed]
    for spec in again:
        resume.hand_back(campaign.record_path(spec.job_id), Path(spec.work_dir))
        spec.valgrind = True
        (campaign.specs_dir / f"{spec.job_id}.json").write_text(spec.model_dump_json(indent=1))
    if again:
        executor_for(site, campaign).submit(again, progress=progress)
    return bool(again)


def _fill_reports(reports: dict[str, ProblemReport], libs: dict, scores: list,
                  screened: set[tuple[str, str]] | None = None) -> None:
    """Each scored program's outcome under its problem (`screened`: (problem, name) of the wrong
    programs the screen decided); a failing reference is the problem's error."""
    reasons = {(kind, pid, p.name): p.reason for pid, lib in libs.items()
               for kind in ("wrong", "valid") for p in getattr(lib, kind)}
    for sc in scores:
        if sc.problem not in reports:
            continue
        acc = _accuracy(sc)
        if sc.agent == "reference":
            if sc.failed_gate or acc is None or acc.score is None or acc.score < ACCEPT_AT:
                reports[sc.problem].error = (f"the reference itself failed ({sc.failed_gate or 'accuracy'}: "
                                             f"{_why(sc, acc)})")
            continue
        if (sc.agent, sc.problem, sc.attempt) not in reasons:
            continue  # a program since removed from the library, still in a reused work folder
        reports[sc.problem].outcomes.append(Outcome(
            kind=sc.agent, name=sc.attempt, reason=reasons[(sc.agent, sc.problem, sc.attempt)],
            accuracy=None if sc.failed_gate or acc is None else acc.score,
            failed_gate=sc.failed_gate, why=_why(sc, acc), screened=(sc.problem, sc.attempt) in (screened or set())))
    for r in reports.values():
        r.outcomes.sort(key=lambda o: (o.kind != "wrong", o.name))


def run(problem_ids: list[str] | None, out: Path, only: set[str] | None = None,
        site_name: str = "local", progress=None, retry_time_factor: float = 4.0,
        generated: int | None = GENERATED_PER_PROBLEM, seed: int = 0, library: bool = True,
        screen: bool = True, parallel: int = 1) -> list[ProblemReport]:
    """Run every library (or the programs named in `only`; none without `library`) with the
    references and score them, then `generated` generated mutants per problem (None: all of
    them, 0: none; with `only`, the generated mutants it names, drawn or not). `screen`: wrong
    programs and generated mutants are first run on a cheap part of the cases, and those it
    decides are not run in full (mutation/screen.py); without it every program runs in full.
    `parallel`: problems run at once, each in a process of its own (_run_parallel)."""
    from hpcbench.problem import load_problems
    from hpcbench.site import load_site

    bundles = load_problems(None, problem_ids)
    out = Path(out)
    libs = write_programs(bundles, out / "programs", only)
    bundles = {pid: b for pid, b in bundles.items() if pid in libs}
    if not bundles:
        raise ConfigError(out, "--problems", "none of these problems has a mutants/mutants.json library")
    if parallel > 1 and len(bundles) > 1:
        args = dict(only=only, site_name=site_name, retry_time_factor=retry_time_factor, generated=generated,
                    seed=seed, library=library, screen=screen)
        return _run_parallel(sorted(bundles), out, parallel, progress, args)
    site = _accuracy_site(load_site(site_name))
    subs = _submissions(libs, bundles, out, only)
    reports = {pid: ProblemReport(pid) for pid in bundles}
    scores, screened = [], []
    for pid, bundle in bundles.items():
        mine = [s for s in subs if s.meta.problem == pid]
        if library and any(s.meta.agent != "reference" for s in mine):
            full, decided = _run_library(out, site, pid, bundle, mine, reports[pid], progress, retry_time_factor,
                                         screen)
            scores += full + decided
            screened += decided
    _fill_reports(reports, libs, scores, {(sc.problem, sc.attempt) for sc in screened})
    if generated != 0:
        for pid, bundle in bundles.items():
            if not reports[pid].error:
                reports[pid].generated = _run_generated(out, site, bundle, generated, seed, only, reports[pid],
                                                        progress, retry_time_factor, screen)
    return [reports[p] for p in sorted(reports)]


def _run_parallel(pids: list[str], out: Path, parallel: int, progress, args: dict) -> list[ProblemReport]:
    """Each problem's run() in a process of its own, `parallel` at once. One problem's campaigns
    run one after another, and each ends with its slowest jobs alone (a time-out retried at 4x
    its limit: minutes on one core), then a collect and a scoring on one core: run side by side,
    another problem's jobs fill those gaps. The campaigns share one set of core slots
    (HPCBENCH_SHARED_SLOTS, executors/local.py), so their runs never oversubscribe each other.
    Processes, not threads: scoring may fork, and a fork beside a thread that holds h5py's lock
    would deadlock. Progress is read from the campaigns' folders (specs and records)."""
    import concurrent.futures as cf
    import multiprocessing
    import os

    from hpcbench.executors.local import SHARED_SLOTS_ENV

    os.environ[SHARED_SLOTS_ENV] = str(out / ".core-slots")  # the spawned workers inherit it
    pool = cf.ProcessPoolExecutor(max_workers=parallel, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = {pid: pool.submit(run, [pid], out, **args) for pid in pids}
        while not all(f.done() for f in futures.values()):
            if progress:
                progress(_folder_progress(out))
            cf.wait(list(futures.values()), timeout=1.0)
        reports = [r for pid in pids for r in futures[pid].result()]
    finally:
        # Ctrl-C reached the workers too (one process group): each stops its own jobs
        pool.shutdown(wait=True, cancel_futures=True)
        os.environ.pop(SHARED_SLOTS_ENV, None)
    if progress:
        progress(_folder_progress(out))
    return reports


def _folder_progress(out: Path) -> Counter:
    """Jobs planned (a spec) and finished (a record) in every campaign under `out`
    (`<kind>/<problem>/specs`, whatever the kind)."""
    specs = records = 0
    for folder in out.glob("*/*/specs"):
        names = {p.name for p in folder.glob("*.json")}
        specs += len(names)
        records += len(names & {p.name for p in (folder.parent / "records").glob("*.json")})
    return Counter(pending=specs - records, done=records)


def _run_library(out: Path, site, pid: str, bundle: ProblemBundle, subs: list, report: ProblemReport, progress,
                 retry_time_factor: float, screen_first: bool = True) -> tuple[list, list]:
    """The library's programs and the reference: (the full campaign's scores, the scores of the
    wrong programs the screen decided). The wrong programs are first screened at every published
    case at one rank count (mutation/screen.py: the full run's accuracy is at most the screen's);
    one killed there (a gate, or accuracy below the bar) is not run again. The valid variants
    and the others run every case at every rank count."""
    from hpcbench.mutation.screen import one_rank_screen, write_problem
    from hpcbench.score.scoring import accuracy_passed

    wrong = [s for s in subs if s.meta.agent == "wrong"]
    screen = one_rank_screen(bundle) if wrong and screen_first else None
    decided = []
    if screen is not None:
        ref = [s for s in subs if s.meta.agent == "reference"]
        written = write_problem(screen, out / AS_RUN / "library-screen")
        at = _run_problem(out / "library-screen" / pid, site, pid, written, wrong + ref, report, progress,
                          retry_time_factor)
        ref_score = next((sc for sc in at if sc.agent == "reference"), None)
        if ref_score is not None and not ref_score.failed_gate and accuracy_passed(ref_score.results):
            decided = [sc for sc in at if sc.agent == "wrong" and _screened_out(sc)]
        # (else the full campaign below says what is wrong with the reference)
    names = {sc.attempt for sc in decided}
    rest = [s for s in subs if not (s.meta.agent == "wrong" and s.meta.attempt in names)]
    if all(s.meta.agent == "reference" for s in rest):
        return [], decided
    full = _run_problem(out / "campaigns" / pid, site, pid, bundle, rest, report, progress, retry_time_factor)
    # a reused folder may still hold a record of a program the screen now decides
    return [sc for sc in full if not (sc.agent == "wrong" and sc.attempt in names)], decided


def _screened_out(sc) -> bool:
    """Decided by the screen: a gate stopped it (a build fails everywhere alike), or its accuracy,
    an upper bound of the full run's, is below the library's bar."""
    acc = _accuracy(sc)
    return bool(sc.failed_gate) or (acc is not None and acc.score is not None and acc.score < KILL_BELOW)


def _accuracy_site(site):
    """The site as validate-checks uses it: valgrind and the timing repeats off (accuracy reads
    only the instrumented run), -malloc_debug off and, on a machine without a scheduler, MPI
    ranks that yield while they wait (hpcbench.sweep.run.LOCAL_MPI_ENV): nothing here is timed,
    and under a shared load a busy-polling two-rank run took 8 times its one-rank twin (darcy
    low-n16, load 11: 25 s against 3 s), reaching its time limit.
    -malloc_debug validates PETSc's whole heap at every allocation: the first all-problem
    measurement spent most of its run time there (darcy-dmplex low-n16, quiet: 0.58 s a run
    with it, 0.11 s without). Without it the tracing allocator still stops a program that wrote
    past a block when the block is freed, and dumps leaks; a corruption only the whole-heap
    check would find can let a mutant pass the checks, and every such mutant gets a valgrind
    run before its verdict (_valgrind_passing): the kill rate can only come out lower."""
    from hpcbench.sweep.run import LOCAL_MPI_ENV

    site = site.model_copy(update={"valgrind": False, "timing_repeats": 0, "malloc_debug": False})
    if site.scheduler != "local":
        return site
    launcher = site.launcher.model_copy(update={"env": {**LOCAL_MPI_ENV, **site.launcher.env}})
    variants = [v if v.launcher is None else v.model_copy(update={"launcher": v.launcher.model_copy(
        update={"env": {**LOCAL_MPI_ENV, **v.launcher.env}})}) for v in site.variants]
    return site.model_copy(update={"launcher": launcher, "variants": variants})


def _run_generated(out: Path, site, bundle: ProblemBundle, count: int | None, seed: int, only: set[str] | None,
                   report: ProblemReport, progress, retry_time_factor: float,
                   screen_first: bool = True) -> GeneratedReport | None:
    """The problem's generated mutants, screened first at its cheapest case (mutation/screen.py:
    a mutant killed there is killed), the others then in a campaign of their own where every case
    runs at one rank count but one case at two (gen.one_rank_count; so does the reference they
    are compared with). A run killed at its time limit is retried as in the library: under a
    shared load half of one problem's mutants (and its reference) once timed out on a
    two-rank run they finish in 3 s alone."""
    from hpcbench.mutation import generate as gen
    from hpcbench.mutation.screen import cheapest_case_screen, screening_case, write_problem

    got = gen.generate(bundle, None if only else count, seed)
    drawn = [m for m in got.drawn if not only or m.name in only]
    if not drawn:
        return None
    gen.write_trees(bundle, drawn, out / "programs" / gen.AGENT)
    folder = out / "programs" / gen.AGENT / bundle.id
    full = write_problem(gen.one_rank_count(bundle), out / AS_RUN / "generated")
    screen = cheapest_case_screen(full) if screen_first else None
    decided: dict[str, MutantOutcome] = {}
    if screen is not None:
        screen = write_problem(screen, out / AS_RUN / "generated-screen")
        case = screening_case(full).name
        at = _generated_outcomes(out / "generated-screen" / bundle.id, site, screen, drawn, folder, report,
                                 progress, retry_time_factor, confirm_passing=False)
        if at is None:
            return None
        for o in at:
            if o.verdict in ("broken", "killed"):
                # its accuracy is the screening case's alone: whether the full run would have
                # fallen below the library's bar is not measured, so only a gate counts as strong
                o.screened, o.strong, o.why = True, bool(o.failed_gate), f"at the screening case {case}: {o.why}"
                decided[o.name] = o
    rest = [m for m in drawn if m.name not in decided]
    outcomes = _generated_outcomes(out / "generated" / bundle.id, site, full, rest, folder, report, progress,
                                   retry_time_factor, confirm_passing=True) if rest else []
    if outcomes is None:
        return None
    by_name = {**decided, **{o.name: o for o in outcomes}}
    outcomes = [by_name[m.name] for m in drawn]
    _mark_harmless(bundle, outcomes)
    return GeneratedReport(len(got.every), got.by_operator, outcomes)


def _generated_outcomes(root: Path, site, bundle: ProblemBundle, drawn: list, folder: Path, report: ProblemReport,
                        progress, retry_time_factor: float, confirm_passing: bool) -> list[MutantOutcome] | None:
    """`drawn` mutants (their trees in `folder`) and the reference run in the campaign at `root`
    on `bundle`'s cases, each classified (None: the reference itself failed there, in `report`)."""
    from hpcbench.jobs.records import JobResult
    from hpcbench.mutation import generate as gen
    from hpcbench.mutation.verdict import classify
    from hpcbench.plan.campaign import job_id
    from hpcbench.score.scoring import accuracy_passed

    subs = _load_trees(folder, [m.name for m in drawn], gen.AGENT, bundle)
    scores = _run_problem(root, site, bundle.id, bundle, subs, report, progress, retry_time_factor,
                          confirm_passing=confirm_passing)

    def record(agent: str, attempt: str) -> JobResult | None:
        path = root / "records" / f"{job_id(agent, bundle.id, attempt)}.json"
        return JobResult.model_validate_json(path.read_text()) if path.is_file() else None

    ref = record("reference", "1")
    ref_score = next((sc for sc in scores if sc.agent == "reference"), None)
    if ref_score is None or ref_score.failed_gate or not accuracy_passed(ref_score.results):
        acc = _accuracy(ref_score) if ref_score else None
        report.error = (f"the reference failed in the generated mutants' campaign ({root.parent.name}): "
                        f"{_why(ref_score, acc) if ref_score else 'not scored'}")
        return None
    by_name = {sc.attempt: sc for sc in scores if sc.agent == gen.AGENT}
    return [classify(m, by_name.get(m.name), record(gen.AGENT, m.name), ref, KILL_BELOW) for m in drawn]


def _mark_harmless(bundle: ProblemBundle, outcomes: list) -> None:
    """Survivors the library's `harmless` list explains become "harmless", with its reason."""
    from hpcbench.mutation import generate as gen

    lib = load_library(bundle)
    if lib is None or not lib.harmless:
        return
    lines = {f: text.splitlines() for f, text in gen.reference_files(bundle)[1].items()}
    for o in outcomes:
        m = o.mutation
        if o.verdict != "surviving":
            continue
        line = lines[m.file][m.line - 1].strip() if m.line <= len(lines[m.file]) else ""
        why = next((h.reason for h in lib.harmless if (h.operator, h.line, h.original, h.replacement)
                    == (m.operator, line, m.original, m.replacement)), None)
        if why is not None:
            o.verdict, o.why = "harmless", why


def _load_trees(folder: Path, names: list[str], agent: str, bundle: ProblemBundle) -> list:
    """Submission trees `folder/<name>/` and the problem's reference, loaded."""
    from hpcbench.submission import load_submission, reference_submission

    subs = []
    for name in names:
        got = load_submission(folder / name, agent, bundle.id, None, name)
        if not hasattr(got, "meta"):
            raise ConfigError(got.path, got.field, got.reason)
        subs.append(got)
    ref = reference_submission(bundle.folder, bundle.id)
    if not hasattr(ref, "meta"):
        raise ConfigError(ref.path, ref.field, ref.reason)
    return [*subs, ref]


def _retried_before(root: Path) -> dict[str, tuple[str, str]]:
    """Spec and record of every finished job, read before planning rewrites the specs."""
    out = {}
    for spec in sorted((root / "specs").glob("*.json")) if (root / "specs").is_dir() else []:
        rec = root / "records" / spec.name
        if rec.is_file():
            out[spec.stem] = (spec.read_text(), rec.read_text())
    return out


def _keep_retried(campaign, jobs: list, before: dict[str, tuple[str, str]]) -> set[str]:
    """A job retried with longer limits (or with valgrind) keeps its record: planning saw a
    changed spec and dropped it, though only the time limits differ. `jobs` leaves out those
    whose sources changed (a spec does not hold them: the old record is of another program)."""
    from hpcbench.jobs.records import JobSpec

    kept: set[str] = set()
    for spec in jobs:
        if spec.job_id not in before or campaign.record_path(spec.job_id).is_file():
            continue
        old_text, rec_text = before[spec.job_id]
        old = JobSpec.model_validate_json(old_text)
        if len(old.runs) != len(spec.runs):
            continue
        only_longer = all(o.time_limit_s >= r.time_limit_s
                          and o.model_copy(update={"time_limit_s": r.time_limit_s}) == r
                          for o, r in zip(old.runs, spec.runs, strict=True))
        # (or rerun with valgrind added, _valgrind_passing: its record says more, not less)
        if only_longer and old.model_copy(update={"runs": spec.runs, "valgrind": spec.valgrind or old.valgrind}
                                          ) == spec.model_copy(update={"valgrind": spec.valgrind or old.valgrind}):
            (campaign.specs_dir / f"{spec.job_id}.json").write_text(old_text)
            campaign.record_path(spec.job_id).write_text(rec_text)
            kept.add(spec.job_id)
    return kept


def _timed_out(campaign, jobs: list) -> list:
    """Jobs with a run killed at its time limit while the machine may have held it back
    (starved_at_limit): those are retried with longer limits. A run that had its CPU for
    nearly all of its limit was not slowed by load; its time-out is the program's own."""
    from hpcbench.jobs.records import JobResult

    out = []
    for spec in jobs:
        path = campaign.record_path(spec.job_id)
        if path.is_file() and any(r.timed_out and starved_at_limit(r)
                                  for r in JobResult.model_validate_json(path.read_text()).runs):
            out.append(spec)
    return out


# One draw of the held-out cases for every validate-checks campaign: the same command gives the
# same verdicts. With a fresh draw per campaign, two all-problem runs of 2026-12-06 each lost one
# library kill, a different one: allen-cahn-imex's rank-local-sums scored 0.57 and 0.33,
# elasticity-gamg's loose-rtol 0.42 and 0.51 (docs/problems.md).
HELD_OUT_SEED = 20261206


# A rank that waited for a CPU over this share of a timed-out run's wall time was held back by
# load. Measured 2026-12-06 (every problem, 40 generated mutants each): all 8 jobs whose runs
# timed out on the 4x retry (robertson, allen-cahn-imex, bratu-fold: loops that never
# converge) had 96-100% of their 120-240 s on a CPU and waited 0.005-4.9 s for one; each retry
# cost 2-4 minutes and changed no verdict.
STARVED_SHARE = 0.1


def starved_at_limit(run) -> bool:
    """Whether load may explain a run's time-out: a rank waited for a CPU over STARVED_SHARE of
    the run (/proc/<pid>/schedstat, jobs/affinity.py), or some rank was not watched there (a
    batch site's probes measure no wait): unknown counts as held back."""
    watched = [a for a in run.affinity if a.source == "proc"]
    if len(watched) < run.ranks:
        return True
    return max(a.cpu_wait_s for a in watched) > STARVED_SHARE * run.wall_s


def _accuracy(sc):
    """A scored program's numerical-accuracy result (None where it was never evaluated)."""
    return next((r for r in sc.results if r.evaluator == "numerical_accuracy"), None)


def _why(sc, acc) -> str:
    if sc.failed_gate:
        gate = next((r for r in sc.results if r.evaluator == sc.failed_gate), None)
        return gate.rationale if gate else sc.failed_gate
    return acc.rationale if acc else "not scored"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _score(o: Outcome) -> str:
    if o.failed_gate:
        return f"gate {o.failed_gate}"
    if o.accuracy is None:
        return "unscored"
    # decided by the screen: the full run's accuracy is at most this
    return f"<= {o.accuracy:.3f} (one rank count)" if o.screened else f"{o.accuracy:.3f}"


def summary(reports: list[ProblemReport]) -> str:
    """Per problem: kill and acceptance rates, each survivor and each rejected variant by name."""
    lines = []
    for r in reports:
        if r.error:
            lines.append(f"{r.problem}: NOT MEASURED: {r.error}")
            continue
        w, v = r.of("wrong"), r.of("valid")
        mark = "ok" if r.meets_targets else "BELOW TARGET"
        lines.append(f"{r.problem}: kill rate {_pct(r.kill_rate)} ({sum(o.killed for o in w)}/{len(w)}), "
                     f"acceptance {_pct(r.acceptance_rate)} ({sum(o.accepted for o in v)}/{len(v)}): {mark}"
                     if r.outcomes else f"{r.problem}: (library not run): {mark}")
        for o in w:
            if o.broken:
                lines.append(f"  BROKEN mutant {o.name} (does not compile: fix its edits): {o.why}")
            elif not o.killed:
                lines.append(f"  survivor {o.name} (accuracy {_score(o)}): {o.reason}")
        for o in v:
            if not o.accepted:
                lines.append(f"  rejected variant {o.name} (accuracy {_score(o)}): {o.reason}; {o.why}")
        if r.generated is not None:
            lines += generated_report.summary_lines(r.generated)
    return "\n".join(lines)


def markdown(reports: list[ProblemReport]) -> str:
    """A table per problem with a line per program (docs/problems.md)."""
    parts = []
    for r in reports:
        parts.append(f"### {r.problem}\n")
        if r.error:
            parts.append(f"Not measured: {r.error}\n")
            continue
        parts.append(f"Kill rate {_pct(r.kill_rate)}, acceptance {_pct(r.acceptance_rate)}.\n")
        parts.append("| program | kind | accuracy | verdict | reason |\n|---|---|---|---|---|")
        for o in r.outcomes:
            verdict = ("killed" if o.killed else "SURVIVES") if o.kind == "wrong" else \
                ("accepted" if o.accepted else "REJECTED")
            parts.append(f"| {o.name} | {o.kind} | {_score(o)} | {verdict} | {o.reason} |")
        parts.append("")
        if r.generated is not None:
            parts.append(generated_report.markdown(r.generated))
    return "\n".join(parts)


def as_json(reports: list[ProblemReport]) -> list[dict]:
    return [{"problem": r.problem, "error": r.error, "kill_rate": r.kill_rate,
             "acceptance_rate": r.acceptance_rate, "meets_targets": r.meets_targets,
             "outcomes": [{"kind": o.kind, "name": o.name, "reason": o.reason, "accuracy": o.accuracy,
                           "failed_gate": o.failed_gate, "killed": o.killed, "accepted": o.accepted,
                           "screened": o.screened, "why": o.why} for o in r.outcomes],
             "generated": generated_report.as_json(r.generated) if r.generated is not None else None}
            for r in reports]
