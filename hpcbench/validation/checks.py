"""`hpcbench validate-checks`: measure the hidden checks by mutation testing.

Every problem brings, in `problems/<id>/mutants/mutants.json` (hidden, like checks.json),
wrong programs and valid variants (validation/library.py). They run through the same pipeline
as `hpcbench run` (pipeline.execute) beside the reference, under the validation profiles
(hpcbench/profile.py: accuracy reads only the instrumented run, so valgrind and the timed runs
are off), and the numerical-accuracy score of each decides (validation/report.py).

Generated mutants (validation/mutation) join them: edits of the reference made by operators
over its syntax tree, a seeded sample per problem, each run once per case at the case's
smallest rank count (one case also at its largest), and judged broken, equivalent (probable),
killed or surviving (validation/mutation/verdict.py).

Screens (validation/screening.py) decide most wrong programs from a cheap campaign first.

`language` python runs the problems' Python libraries instead (`mutants/mutants-python.json`,
edits of reference-python/), as Python submissions beside the same C reference, in `out/python/`
(their names may repeat the C library's); no generated mutants (their operators edit C)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hpcbench.errors import ConfigError
from hpcbench.plan.held_out import read_draw
from hpcbench.problem import ProblemBundle
from hpcbench.profile import CHECKS_LIBRARY, CHECKS_SCREEN, GENERATED, GENERATED_SCREEN, CampaignProfile
from hpcbench.site import SiteConfig
from hpcbench.validation.campaigns import accuracy, load_programs, reference_of, score_programs, why
from hpcbench.validation.library import Language, MutantLibrary, library_file, load_library, reasons, write_programs
from hpcbench.validation.mutation.verdict import GeneratedReport, MutantOutcome
from hpcbench.validation.report import ACCEPT_AT, KILL_BELOW, Outcome, ProblemReport

GENERATED_PER_PROBLEM = 40  # the default sample of generated mutants (None: every one)


@dataclass(frozen=True)
class Options:
    """What one validate-checks invocation runs: `only` (program names; with it the generated
    mutants it names, drawn or not), the generated sample per problem (None: every one, 0:
    none) and its seed, the library or not, screening (without it every program runs in full),
    problems at once (each in a process of its own), the site, the libraries' language."""

    only: frozenset[str] | None = None
    generated: int | None = GENERATED_PER_PROBLEM
    seed: int = 0
    library: bool = True
    screen: bool = True
    parallel: int = 1
    site_name: str = "local"
    retry_starved: float = 4.0  # a job whose run timed out while starved of a CPU reruns with limits this many times
    held_out_draws: int | None = None  # the library's held-out seeds (None: CHECKS_LIBRARY's, LIBRARY_DRAWS)
    language: Language = "c"  # python: the Python libraries (generated must be 0: mutants of C only)


def validate_checks(problem_ids: list[str] | None, out: Path, options: Options | None = None, progress=None
        ) -> list[ProblemReport]:
    """Run every library (or the programs named in `options.only`) with the references and score
    them, then the generated mutants; problems side by side in processes of their own when
    `options.parallel` > 1 (_run_parallel)."""
    from hpcbench.problem import load_problems
    from hpcbench.site import load_site

    o = options or Options()
    if o.language == "python" and o.generated != 0:
        raise ConfigError("--generated", None, "generated mutants are edits of the C references: with "
                                               "--language python give --generated 0 (or leave it out)")
    bundles = load_problems(None, problem_ids)
    out = Path(out)
    work = work_folder(out, o.language)
    libs = write_programs(bundles, "checks", work / "programs", o.only, o.language)
    bundles = {pid: b for pid, b in bundles.items() if pid in libs}
    if not bundles:
        raise ConfigError(out, "--problems", f"none of these problems has a {library_file('checks', o.language)} "
                                             "library")
    # one problem stays one chain: its library and generated mutants as two tasks took as long
    # (darcy-dmplex alone, 2026-12-07: 153 s as two tasks, 152 s as one chain)
    if o.parallel > 1 and len(bundles) > 1:
        return _run_parallel(sorted(bundles), out, o, progress)
    here = _Here(work, load_site(o.site_name), o, progress)
    reports = {pid: ProblemReport(pid, language=o.language) for pid in bundles}
    for pid, bundle in bundles.items():
        lib = libs[pid]
        assert isinstance(lib, MutantLibrary)
        if o.library:
            _run_library(here, bundle, lib, reports[pid])
        if o.generated != 0 and not reports[pid].error:
            reports[pid].generated = _run_generated(here, bundle, reports[pid])
    return [reports[p] for p in sorted(reports)]


def work_folder(out: Path, language: Language) -> Path:
    """Where a language's programs and campaigns go: `out` (C), `out/python` (their records'
    names, agent__problem__program, would meet the C library's)."""
    return out if language == "c" else out / "python"


def _run_parallel(pids: list[str], out: Path, o: Options, progress) -> list[ProblemReport]:
    """Each problem's library and its generated mutants as two tasks (validate_checks() in a
    process of its own, `parallel` at once), the longest first (_parts). One task's campaigns run
    one after another, and each ends with its slowest jobs alone (a time-out retried at 4x its
    limit: minutes on one core), then a collect and a scoring on one core: run side by side,
    other tasks' jobs fill those gaps, and the smaller the tasks, the shorter the end where one
    runs alone. The two parts of a problem share nothing but the programs' folder, written
    before they start (write_tree leaves unchanged files alone). Their runs take the machine's
    core slots (the profiles' core_slots, recorded in each campaign.json), so they never
    oversubscribe each other. Processes, not threads: scoring may fork, and a fork beside a
    thread that holds h5py's lock would deadlock. Progress is read from the campaigns' folders."""
    import concurrent.futures as cf
    import multiprocessing

    one = replace(o, parallel=1)
    pool = cf.ProcessPoolExecutor(max_workers=o.parallel, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = {(pid, part): pool.submit(validate_checks, [pid], out, opts) for pid, part, opts in _parts(pids, one)}
        while not all(f.done() for f in futures.values()):
            if progress:
                progress(folder_progress(work_folder(out, o.language)))
            cf.wait(list(futures.values()), timeout=1.0)
        reports = [_merged({part: r for (p, part), f in futures.items() if p == pid for r in f.result()})
                   for pid in pids]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # Ctrl-C reached the workers too: each stops its own jobs
    if progress:
        progress(folder_progress(work_folder(out, o.language)))
    return reports


# What a problem's library and its generated mutants took, in core-seconds of runs (validate-checks
# 2026-12-07, this 2-core machine, every library at two held-out seeds, 40 generated mutants each):
# the order the tasks start in, longest first, so that no long task starts last and runs alone.
# A problem not listed counts as the largest (it is new: its cost unknown).
MEASURED_CORE_S: dict[tuple[str, str], float] = {
    ("robertson", "generated"): 616, ("bratu-fold", "generated"): 405, ("allen-cahn-imex", "library"): 256,
    ("allen-cahn-imex", "generated"): 252, ("bratu-fold", "library"): 236, ("elasticity-gamg", "library"): 199,
    ("vec-scatter", "generated"): 174, ("stokes-fieldsplit", "library"): 172, ("stokes-fieldsplit", "generated"): 138,
    ("rosenbrock", "generated"): 131, ("darcy-dmplex", "generated"): 118, ("darcy-dmplex", "library"): 106,
    ("elasticity-gamg", "generated"): 105, ("cavity-dmstag", "generated"): 105, ("obstacle-vi", "library"): 96,
    ("poisson3d-mg", "library"): 96, ("cavity-dmstag", "library"): 95, ("obstacle-vi", "generated"): 77,
    ("advection1d", "library"): 77, ("poisson3d-mg", "generated"): 73, ("advection1d", "generated"): 71,
    ("rosenbrock", "library"): 43, ("robertson", "library"): 43, ("vec-scatter", "library"): 32,
}


def _parts(pids: list[str], one: Options) -> list[tuple[str, str, Options]]:
    """(problem, "library" | "generated", its options), longest first."""
    parts = [(pid, "library", replace(one, generated=0)) for pid in pids if one.library]
    parts += [(pid, "generated", replace(one, library=False)) for pid in pids if one.generated != 0]
    top = max(MEASURED_CORE_S.values(), default=0.0) + 1.0
    return sorted(parts, key=lambda p: -MEASURED_CORE_S.get((p[0], p[1]), top))


def _merged(parts: dict[str, ProblemReport]) -> ProblemReport:
    """One problem's report from its tasks' ("library": the outcomes, "generated": the generated
    mutants), whichever ran; an error of either is the problem's."""
    lib, gen = parts.get("library"), parts.get("generated")
    base = lib or gen
    assert base is not None, "a problem with no task"
    errors = [r.error for r in (lib, gen) if r is not None and r.error]
    return replace(base, generated=gen.generated if gen is not None else None,
                   error="; ".join(dict.fromkeys(errors)))


def folder_progress(out: Path) -> Counter:
    """Jobs planned (a spec) and finished (a record) in every campaign under `out`
    (`<kind>/<problem>/specs`, whatever the kind)."""
    specs = records = 0
    for folder in Path(out).glob("*/*/specs"):
        names = {p.name for p in folder.glob("*.json")}
        specs += len(names)
        records += len(names & {p.name for p in (folder.parent / "records").glob("*.json")})
    return Counter(pending=specs - records, done=records)


@dataclass
class _Here:
    """One invocation's work folder, site, options and progress callback."""

    out: Path
    site: SiteConfig
    o: Options
    progress: Any = None

    def campaign(self, kind: str, profile: CampaignProfile, bundle: ProblemBundle, subs: list,
                 report: ProblemReport) -> list:
        """One of the problem's campaigns (`out/<kind>/<problem>`) under `profile` as this
        invocation runs it (its retry factor), scored; a skip is the problem's error."""
        mine = profile.model_copy(update={"retry_starved": self.o.retry_starved})
        scores, skipped = score_programs(self.out / kind / bundle.id, self.site, mine, bundle, subs, self.progress)
        if skipped:
            report.error = skipped
        return scores


def _run_library(here: _Here, bundle: ProblemBundle, lib: MutantLibrary, report: ProblemReport) -> None:
    """The library's programs and the reference. The wrong programs are first screened at every
    published case at one rank count (screening.py: the full run's accuracy is at most the
    screen's); one killed there (a gate, or accuracy below the bar) is not run again. The valid
    variants and the others run every case at every rank count."""
    from hpcbench.score.scoring import accuracy_passed

    o = here.o
    subs = []
    for kind in ("wrong", "valid"):
        names = [p.name for p in getattr(lib, kind) if not o.only or p.name in o.only]
        subs += load_programs(here.out / "programs" / kind / bundle.id, names, kind, bundle, check_args=True)
    # the performance par (a C program) must pass every check too
    if bundle.has_par and o.language == "c" and (not o.only or "par" in o.only):
        subs += load_programs(bundle.folder, ["par"], "par", bundle, check_args=True)
    ref = [reference_of(bundle)]
    wrong = [s for s in subs if s.meta.agent == "wrong"]
    if not subs:
        return
    decided = []
    if wrong and o.screen:
        at = here.campaign("library-screen", CHECKS_SCREEN, bundle, wrong + ref, report)
        ref_score = next((sc for sc in at if sc.agent == "reference"), None)
        if ref_score is not None and not ref_score.failed_gate and accuracy_passed(ref_score.results):
            decided = [sc for sc in at if sc.agent == "wrong" and _screened_out(sc)]
        # (else the full campaign below says what is wrong with the reference)
    out_names = {sc.attempt for sc in decided}
    rest = [s for s in subs if not (s.meta.agent == "wrong" and s.meta.attempt in out_names)]
    profile = CHECKS_LIBRARY if o.held_out_draws is None else CHECKS_LIBRARY.model_copy(
        update={"held_out_draws": o.held_out_draws})
    full = here.campaign("campaigns", profile, bundle, rest + ref, report) if rest else []
    # a reused folder may still hold a record of a program the screen now decides
    full = [sc for sc in full if not (sc.agent == "wrong" and sc.attempt in out_names)]
    drawn = read_draw(here.out / "campaigns" / bundle.id)[1].get(bundle.id, [])
    _fill_report(report, lib, full + decided, {sc.attempt for sc in decided}, drawn)


def _screened_out(sc) -> bool:
    """Decided by the screen: a gate stopped it (a build fails everywhere alike), or its accuracy,
    an upper bound of the full run's, is below the library's bar."""
    acc = accuracy(sc)
    return bool(sc.failed_gate) or (acc is not None and acc.score is not None and acc.score < KILL_BELOW)


def _fill_report(report: ProblemReport, lib: MutantLibrary, scores: list, screened: set[str],
                 drawn: list | None = None) -> None:
    """Each scored program's outcome (`screened`: the wrong programs the screen decided); a
    failing reference is the problem's error. A held-out case a rationale names is shown with its
    drawn arguments (`drawn`: the campaign's held-out cases), where a valid variant broke a
    requirement: `-n 124 at 2 ranks` says more than `held-out-5`."""
    known = reasons({report.problem: lib}, "checks")
    for sc in scores:
        acc = accuracy(sc)
        if sc.agent == "reference":
            if sc.failed_gate or acc is None or acc.score is None or acc.score < ACCEPT_AT:
                report.error = f"the reference itself failed ({sc.failed_gate or 'accuracy'}: {why(sc, acc)})"
            continue
        reason = known.get((sc.agent, sc.problem, sc.attempt))
        if sc.agent == "par":
            reason = "the problem's performance par (problems/<id>/par/): a valid program like any other"
        if reason is None:
            continue  # a program since removed from the library, still in a reused work folder
        report.outcomes.append(Outcome(
            kind="valid" if sc.agent == "par" else sc.agent, name=sc.attempt, reason=reason,
            score=None if sc.failed_gate or acc is None else acc.score, failed_gate=sc.failed_gate,
            why=with_drawn_args(why(sc, acc), drawn or []), screened=sc.attempt in screened and sc.agent == "wrong"))
    report.outcomes.sort(key=lambda x: (x.kind != "wrong", x.name))


def with_drawn_args(text: str, drawn: list) -> str:
    """`text` with each held-out case it names followed by its arguments and rank count."""
    by_name = {c.name: c for c in drawn}

    def shown(m: re.Match) -> str:
        c = by_name.get(m.group(1))
        if c is None:
            return m.group(0)
        return f"{m.group(0)} ({' '.join(c.args)}, {c.ranks[0]} rank{'s' if c.ranks[0] > 1 else ''})"

    return re.sub(r"\b(held-out-\d+)\b(?! \()", shown, text)


def _run_generated(here: _Here, bundle: ProblemBundle, report: ProblemReport) -> GeneratedReport | None:
    """The problem's generated mutants, screened first at its cheapest case (a mutant killed
    there is killed), the others then in a campaign of their own where every case runs at one
    rank count but one case at two (plan/cases.one_rank_count; so does the reference they are
    compared with). Those that pass every check get a valgrind run before their verdict."""
    from hpcbench.plan.cases import screening_case
    from hpcbench.validation.mutation import generate as gen

    o = here.o
    got = gen.generate(bundle, None if o.only else o.generated, o.seed)
    drawn = [m for m in got.drawn if not o.only or m.name in o.only]
    if not drawn:
        return None
    gen.write_trees(bundle, drawn, here.out / "programs" / gen.AGENT)
    decided: dict[str, MutantOutcome] = {}
    if o.screen:
        at = _generated_outcomes(here, "generated-screen", GENERATED_SCREEN, bundle, drawn, report)
        if at is None:
            return None
        case = screening_case(bundle).name
        for x in at:
            if x.verdict in ("broken", "killed"):
                # its accuracy is the screening case's alone: whether the full run would have
                # fallen below the library's bar is not measured, so only a gate counts as strong
                x.screened, x.strong, x.why = True, bool(x.failed_gate), f"at the screening case {case}: {x.why}"
                decided[x.name] = x
    rest = [m for m in drawn if m.name not in decided]
    outcomes = _generated_outcomes(here, "generated", GENERATED, bundle, rest, report) if rest else []
    if outcomes is None:
        return None
    by_name = {**decided, **{x.name: x for x in outcomes}}
    outcomes = [by_name[m.name] for m in drawn]
    _mark_harmless(bundle, outcomes)
    return GeneratedReport(len(got.every), got.by_operator, outcomes)


def _generated_outcomes(here: _Here, kind: str, profile: CampaignProfile, bundle: ProblemBundle, drawn: list,
                        report: ProblemReport) -> list[MutantOutcome] | None:
    """`drawn` mutants and the reference run in the campaign `out/<kind>/<problem>`, each
    classified (None: the reference itself failed there, in `report`)."""
    from hpcbench.jobs.records import JobResult
    from hpcbench.plan.campaign import job_id
    from hpcbench.score.scoring import accuracy_passed
    from hpcbench.validation.mutation import generate as gen
    from hpcbench.validation.mutation.verdict import classify

    subs = load_programs(here.out / "programs" / gen.AGENT / bundle.id, [m.name for m in drawn], gen.AGENT, bundle)
    scores = here.campaign(kind, profile, bundle, [*subs, reference_of(bundle)], report)
    root = here.out / kind / bundle.id

    def record(agent: str, attempt: str) -> JobResult | None:
        path = root / "records" / f"{job_id(agent, bundle.id, attempt)}.json"
        return JobResult.model_validate_json(path.read_text()) if path.is_file() else None

    ref_score = next((sc for sc in scores if sc.agent == "reference"), None)
    if ref_score is None or ref_score.failed_gate or not accuracy_passed(ref_score.results):
        acc = accuracy(ref_score) if ref_score else None
        report.error = (f"the reference failed in the generated mutants' campaign ({kind}): "
                        f"{why(ref_score, acc) if ref_score else 'not scored'}")
        return None
    by_name = {sc.attempt: sc for sc in scores if sc.agent == gen.AGENT}
    ref = record("reference", "1")
    return [classify(m, by_name.get(m.name), record(gen.AGENT, m.name), ref, KILL_BELOW) for m in drawn]


def _mark_harmless(bundle: ProblemBundle, outcomes: list) -> None:
    """Survivors the library's `harmless` list explains become "harmless", with its reason."""
    from hpcbench.validation.mutation import generate as gen

    lib = load_library(bundle, "checks")
    if not isinstance(lib, MutantLibrary) or not lib.harmless:
        return
    lines = {f: text.splitlines() for f, text in gen.reference_files(bundle)[1].items()}
    for x in outcomes:
        m = x.mutation
        if x.verdict != "surviving":
            continue
        line = lines[m.file][m.line - 1].strip() if m.line <= len(lines[m.file]) else ""
        reason = next((h.reason for h in lib.harmless if (h.operator, h.line, h.original, h.replacement)
                       == (m.operator, line, m.original, m.replacement)), None)
        if reason is not None:
            x.verdict, x.why = "harmless", reason
