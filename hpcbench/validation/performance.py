"""`hpcbench validate-performance`: measure the performance metric as the checks are measured.

Every problem with a performance case brings, in `problems/<id>/mutants/perf.json` (hidden,
like checks.json), right programs that do needless work in ways agents do (`slower`: a much
smaller time step, tolerances far tighter than asked, no preconditioner where one is needed,
assembly without preallocation, values set one at a time ...) and right programs that are as
fast (`as_fast`: another good solver or preconditioner), and right programs faster than the
reference (`faster`: the second side, other methods near the problem's par); validation/library.py
writes them. Where the problem has a par (problems/<id>/par/) it runs too, as a program of its own
kind that must pass every check and score 1 against itself, and every program is timed against it.
They run through the real pipeline (pipeline.execute, the validate-performance profile:
valgrind off, the ordinary cases run once with 4x their limits, since on a loaded machine a
gate failed at an idle machine's limit says nothing about performance; the reference timed
against a second copy of itself as the measurement's control) beside the reference, each timed
against it on its performance case (jobs/perf.py), and execution_time decides
(validation/report.py)."""

from __future__ import annotations

from pathlib import Path

from hpcbench.errors import ConfigError
from hpcbench.evaluators.metrics.execution_time import time_score
from hpcbench.profile import PERFORMANCE
from hpcbench.validation.campaigns import load_programs, reference_of, score_programs
from hpcbench.validation.library import ALL_KINDS, PerfLibrary, agent_of, kind_of, reasons, write_programs
from hpcbench.validation.report import PERF_ACCEPT_AT, Outcome, ProblemReport


def validate_performance(problem_ids: list[str] | None, out: Path, only: frozenset[str] | None = None,
                         site_name: str = "local", progress=None, time_factor: float = PERFORMANCE.time_limit_factor
                         ) -> list[ProblemReport]:
    """Every problem's perf.json (or the programs named in `only`) beside the reference, timed;
    the ordinary cases' limits `time_factor` times the problem's."""
    from hpcbench.problem import load_problems
    from hpcbench.site import load_site

    bundles = load_problems(None, problem_ids)
    out = Path(out)
    libs = write_programs(bundles, "performance", out / "programs", only)
    if not libs:
        raise ConfigError(out, "--problems", "none of these problems has a mutants/perf.json library")
    site = load_site(site_name)
    profile = PERFORMANCE.model_copy(update={"time_limit_factor": time_factor})
    reports = []
    for pid in sorted(libs):
        lib = libs[pid]
        assert isinstance(lib, PerfLibrary)
        subs = [s for kind in ALL_KINDS["performance"] for s in load_programs(
            out / "programs" / agent_of(kind) / pid,
            [p.name for p in getattr(lib, kind) if not only or p.name in only], agent_of(kind), bundles[pid],
            check_args=True)]
        if bundles[pid].has_par and (not only or "par" in only):
            subs += load_programs(bundles[pid].folder, ["par"], "par", bundles[pid], check_args=True)
        scores, skipped = score_programs(out / "campaigns" / pid, site, profile, bundles[pid],
                                         [*subs, reference_of(bundles[pid])], progress)
        report = ProblemReport(pid, "performance", error=skipped)
        if not skipped:
            _fill(report, reasons({pid: lib}, "performance"), scores)
        reports.append(report)
    return reports


def _fill(report: ProblemReport, known: dict, scores: list) -> None:
    par_reason = "the problem's performance par (problems/<id>/par/)"
    for sc in scores:
        if sc.agent == "reference":
            et = next((r for r in sc.results if r.evaluator == "execution_time"), None)
            report.reference = f"{et.score:.2f}: {et.rationale}" if et and et.score is not None else "not scored"
            report.reference_score = et.score if et and et.status == "scored" else None
            report.reference_ratio = _par_ratio(et)
            report.against_par = bool(et is not None and et.evidence.get("against") == "par")
            if sc.failed_gate:
                report.error = f"the reference itself failed the {sc.failed_gate} gate"
        elif sc.agent == "par":
            report.outcomes.append(_outcome(sc, par_reason, "par"))
        elif (kind_of(sc.agent), sc.problem, sc.attempt) in known:  # else: since removed from the library
            report.outcomes.append(_outcome(sc, known[(kind_of(sc.agent), sc.problem, sc.attempt)]))
    report.outcomes.sort(key=lambda o: (("slower", "as_fast", "faster", "par").index(o.kind), o.name))
    report.decide()


def _par_ratio(et) -> float | None:
    """The program's time over its yardstick's, par's where execution_time scored against a par,
    else the reference's (the rank count that decided the score); None where it was not timed."""
    rows = [r for r in (et.evidence.get("performance", []) if et is not None else []) if "ratio" in r]
    if not rows:
        return None
    worst = min(rows, key=lambda r: r["score"])
    return worst.get("par_ratio", worst["ratio"])


def _outcome(sc, reason: str, kind: str = "") -> Outcome:
    ev = {r.evaluator: r for r in sc.results}
    acc, et = ev.get("numerical_accuracy"), ev.get("execution_time")
    broken = ""
    if sc.failed_gate:
        gate = ev.get(sc.failed_gate)
        broken = f"failed the {sc.failed_gate} gate: {gate.rationale if gate else ''}"[:300]
    elif acc is None or acc.score is None or acc.score < PERF_ACCEPT_AT:
        broken = f"not a right program: accuracy {acc.score if acc else None} ({acc.rationale if acc else ''})"[:300]
    return Outcome(kind or kind_of(sc.agent), sc.attempt, reason,
                   None if et is None or et.status != "scored" else et.score,
                   broken=broken, why=et.rationale if et else "", ratio=_par_ratio(et),
                   vs_reference=_vs_reference(et))


def _vs_reference(et) -> float | None:
    """Against a par: the program's ratio to the reference in the same rounds, scored on the
    problem's thresholds as execution_time did before par (the worst rank count); None without."""
    if et is None or et.evidence.get("against") != "par":
        return None
    th = tuple(et.evidence.get("thresholds", (1.25, 2.0, 4.0, 8.0)))
    rows = [r for r in et.evidence.get("performance", []) if "ratio" in r]
    return min((1.0 if r["within_noise"] else time_score(r["ratio"], th)) for r in rows) if rows else None
