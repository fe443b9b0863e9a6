"""`hpcbench validate-performance`: measure the performance metric as the checks are measured.

Every problem with a performance case brings, in `problems/<id>/mutants/perf.json` (hidden,
like checks.json), right programs that do needless work in ways agents do (`slower`: a much
smaller time step, tolerances far tighter than asked, no preconditioner where one is needed,
assembly without preallocation, values set one at a time ...) and right programs that are as
fast (`as_fast`: another good solver or preconditioner). Each is the reference with small
edits of its C source and/or options (validate_checks.Program). They run through the real
pipeline (plan, local executor, collect, score) beside the reference, each timed against it
on its performance case (jobs/perf.py), and execution_time decides:

- a slower program is *killed* when its execution_time is below ACCEPT_AT (it lost score);
  a program that fails a gate or the hidden checks is no right program: *broken*, reported,
  never counted (fix the mutant);
- an as-fast program is *accepted* when its execution_time is at least ACCEPT_AT.

Valgrind is off and the ordinary cases run once (the gates and the checks need no more)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from hpcbench.errors import ConfigError
from hpcbench.problem import ProblemBundle, load_json_model
from hpcbench.strict import FrozenStrict
from hpcbench.validate_checks import Program

ACCEPT_AT = 0.95
KILL_TARGET = 0.95
ACCEPT_TARGET = 1.0
LIBRARY = "mutants/perf.json"
KINDS = ("slower", "as_fast")


class PerfLibrary(FrozenStrict):
    slower: Annotated[list[Program], Field(min_length=1)]
    as_fast: Annotated[list[Program], Field(min_length=1)]


@dataclass
class Outcome:
    kind: Literal["slower", "as_fast"]
    name: str
    reason: str
    score: float | None  # execution_time; None: not scored
    broken: str = ""  # why it is no right program (a gate, the checks)
    why: str = ""  # execution_time's rationale

    @property
    def killed(self) -> bool:
        return not self.broken and self.score is not None and self.score < ACCEPT_AT

    @property
    def accepted(self) -> bool:
        return not self.broken and self.score is not None and self.score >= ACCEPT_AT


@dataclass
class ProblemReport:
    problem: str
    outcomes: list[Outcome] = field(default_factory=list)
    error: str = ""
    reference: str = ""  # the reference's own execution_time against itself

    def of(self, kind: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.kind == kind and not o.broken]

    @property
    def kill_rate(self) -> float | None:
        w = self.of("slower")
        return sum(o.killed for o in w) / len(w) if w else None

    @property
    def acceptance_rate(self) -> float | None:
        v = self.of("as_fast")
        return sum(o.accepted for o in v) / len(v) if v else None

    @property
    def meets_targets(self) -> bool:
        k, a = self.kill_rate, self.acceptance_rate
        broken = any(o.broken for o in self.outcomes)
        return not self.error and not broken and k is not None and a is not None and k >= KILL_TARGET \
            and a >= ACCEPT_TARGET


def load_library(bundle: ProblemBundle) -> PerfLibrary | None:
    path = bundle.folder / LIBRARY
    if not path.is_file():
        return None
    lib = load_json_model(path, PerfLibrary)
    assert isinstance(lib, PerfLibrary)
    names = [p.name for k in KINDS for p in getattr(lib, k)]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(path, "name", f"{dup[0]!r} is used twice")
    if bundle.problem.performance is None:
        raise ConfigError(path, None, "the problem declares no performance case (problem.json `performance`)")
    return lib


def program_files(bundle: ProblemBundle, prog: Program, kind: str, index: int) -> dict[str, str]:
    """The reference's files with the program's edits; each `find` must occur exactly once."""
    meta = json.loads((bundle.reference_dir / "submission.json").read_text())
    files = {name: (bundle.reference_dir / name).read_text() for name in meta["files"]}
    for j, e in enumerate(prog.edits):
        where = f"{kind}[{index}].edits[{j}]"
        if e.file not in files:
            raise ConfigError(bundle.folder / LIBRARY, f"{where}.file", f"{e.file!r} is not a file of the reference")
        n = files[e.file].count(e.find)
        if n != 1:
            raise ConfigError(bundle.folder / LIBRARY, f"{where}.find",
                              f"occurs {n} times in reference/{e.file} (must be exactly once): {e.find[:60]!r}")
        files[e.file] = files[e.file].replace(e.find, e.replace)
    return files


def write_programs(bundles: dict[str, ProblemBundle], root: Path, only: set[str] | None) -> dict[str, PerfLibrary]:
    """Submission trees root/<slower|as-fast>/<problem>/<name>/ (every library checked first)."""
    libs = {pid: lib for pid, b in bundles.items() if (lib := load_library(b)) is not None}
    trees = []
    for pid, lib in libs.items():
        ref_meta = json.loads((bundles[pid].reference_dir / "submission.json").read_text())
        for kind in KINDS:
            for i, prog in enumerate(getattr(lib, kind)):
                if not only or prog.name in only:
                    agent = kind.replace("_", "-")
                    trees.append((root / agent / pid / prog.name, program_files(bundles[pid], prog, kind, i),
                                  {**ref_meta, "agent": agent, "attempt": prog.name, "args": prog.args}))
    for folder, files, meta in trees:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            if not (folder / name).is_file() or (folder / name).read_text() != text:
                (folder / name).write_text(text)  # unchanged files keep their job records valid
        (folder / "submission.json").write_text(json.dumps(meta, indent=1))
    return libs


def _campaign(root: Path, site, pid: str, bundle: ProblemBundle, tree: Path, names: set[str], progress) -> list:
    """One problem's campaign: the programs and the reference, run, collected, scored."""
    from hpcbench import store
    from hpcbench.executors import executor_for
    from hpcbench.plan.campaign import create_campaign, pending
    from hpcbench.score import scoring
    from hpcbench.submission import LoadedSubmission, Rejected, load_submission, reference_submission

    subs: list[LoadedSubmission] = []
    for folder in sorted(tree.glob(f"*/{pid}/*")):
        if folder.name not in names:
            continue  # written by an earlier invocation for other programs
        got = load_submission(folder, folder.parent.parent.name, pid, None, folder.name)
        if isinstance(got, Rejected):
            raise ConfigError(got.path, got.field, got.reason)
        subs.append(got)
    ref = reference_submission(bundle.folder, pid)
    if isinstance(ref, Rejected):
        raise ConfigError(ref.path, ref.field, ref.reason)
    campaign, plan = create_campaign(root, site, {pid: bundle}, [*subs, ref], [], reference_against_itself=True)
    if plan.skipped:
        return [f"skipped: {plan.skipped[0].reason}"]
    todo = pending(campaign, plan.jobs)
    if todo:
        executor_for(site, campaign).submit(todo, progress=progress)
    store.collect(campaign)
    return scoring.score(campaign.h5_path)[1]


def _kind(agent: str) -> Literal["slower", "as_fast"]:
    """The library a program came from, by its agent folder (as-fast/ holds the as_fast ones)."""
    return "slower" if agent == "slower" else "as_fast"


def _outcome(sc, reasons: dict) -> Outcome:
    ev = {r.evaluator: r for r in sc.results}
    acc, et = ev.get("numerical_accuracy"), ev.get("execution_time")
    broken = ""
    if sc.failed_gate:
        gate = ev.get(sc.failed_gate)
        broken = f"failed the {sc.failed_gate} gate: {gate.rationale if gate else ''}"[:300]
    elif acc is None or acc.score is None or acc.score < ACCEPT_AT:
        broken = f"not a right program: accuracy {acc.score if acc else None} ({acc.rationale if acc else ''})"[:300]
    kind = _kind(sc.agent)
    return Outcome(kind, sc.attempt, reasons.get((kind, sc.attempt), ""),
                   None if et is None or et.status != "scored" else et.score, broken, et.rationale if et else "")


def with_time_factor(bundle: ProblemBundle, factor: float) -> ProblemBundle:
    """The problem with its ordinary cases' time limits `factor` times longer: on a loaded machine
    right programs' two-rank runs hit limits meant for an idle one, and a gate failed that way
    says nothing about performance. The performance case keeps its own limit."""
    cases = [c.model_copy(update={"time_limit_s": c.time_limit_s * factor}) for c in bundle.problem.cases]
    return bundle.model_copy(update={"problem": bundle.problem.model_copy(update={"cases": cases})})


def run(problem_ids: list[str] | None, out: Path, only: set[str] | None = None, site_name: str = "local",
        progress=None, time_factor: float = 4.0) -> list[ProblemReport]:
    from hpcbench.problem import load_problems
    from hpcbench.site import load_site

    bundles = {pid: with_time_factor(b, time_factor) for pid, b in load_problems(None, problem_ids).items()}
    out = Path(out)
    libs = write_programs(bundles, out / "programs", only)
    if not libs:
        raise ConfigError(out, "--problems", f"none of these problems has a {LIBRARY} library")
    site = load_site(site_name).model_copy(update={"valgrind": False, "timing_repeats": 1})
    reports = []
    for pid in sorted(libs):
        report = ProblemReport(pid)
        reasons = {(k, p.name): p.reason for k in KINDS for p in getattr(libs[pid], k)}
        names = {p.name for k in KINDS for p in getattr(libs[pid], k) if not only or p.name in only}
        scores = _campaign(out / "campaigns" / pid, site, pid, bundles[pid], out / "programs", names, progress)
        if scores and isinstance(scores[0], str):
            report.error = scores[0]
        for sc in scores if not report.error else []:
            if sc.agent == "reference":
                et = next((r for r in sc.results if r.evaluator == "execution_time"), None)
                report.reference = f"{et.score:.2f}: {et.rationale}" if et and et.score is not None else "not scored"
                if sc.failed_gate:
                    report.error = f"the reference itself failed the {sc.failed_gate} gate"
            elif sc.agent in ("slower", "as-fast"):
                if (_kind(sc.agent), sc.attempt) not in reasons:
                    continue  # a program since removed from the library, still in a reused work folder
                report.outcomes.append(_outcome(sc, reasons))
        report.outcomes.sort(key=lambda o: (o.kind != "slower", o.name))
        reports.append(report)
    return reports


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _score(o: Outcome) -> str:
    return "broken" if o.broken else ("unscored" if o.score is None else f"{o.score:.2f}")


def summary(reports: list[ProblemReport]) -> str:
    lines = []
    for r in reports:
        if r.error:
            lines.append(f"{r.problem}: NOT MEASURED: {r.error}")
            continue
        s, f = r.of("slower"), r.of("as_fast")
        lines.append(f"{r.problem}: kill rate {_pct(r.kill_rate)} ({sum(o.killed for o in s)}/{len(s)}), acceptance "
                     f"{_pct(r.acceptance_rate)} ({sum(o.accepted for o in f)}/{len(f)}): "
                     f"{'ok' if r.meets_targets else 'BELOW TARGET'}; the reference against itself {r.reference}")
        for o in r.outcomes:
            if o.broken:
                lines.append(f"  BROKEN {o.kind} {o.name}: {o.broken}")
            elif o.kind == "slower" and not o.killed:
                lines.append(f"  survivor {o.name} (execution_time {_score(o)}): {o.reason}; {o.why}")
            elif o.kind == "as_fast" and not o.accepted:
                lines.append(f"  rejected {o.name} (execution_time {_score(o)}): {o.reason}; {o.why}")
    return "\n".join(lines)


def markdown(reports: list[ProblemReport]) -> str:
    parts = []
    for r in reports:
        parts.append(f"### {r.problem}\n")
        if r.error:
            parts.append(f"Not measured: {r.error}\n")
            continue
        parts.append(f"Kill rate {_pct(r.kill_rate)}, acceptance {_pct(r.acceptance_rate)}; the reference "
                     f"against itself {r.reference.split(':')[0]}.\n")
        parts.append("| program | kind | execution_time | verdict | why |\n|---|---|---|---|---|")
        for o in r.outcomes:
            verdict = "BROKEN" if o.broken else ("killed" if o.killed else "SURVIVES") if o.kind == "slower" else \
                ("accepted" if o.accepted else "REJECTED")
            why = (o.broken or o.why).replace("|", "/")[:160]
            parts.append(f"| {o.name} | {o.kind} | {_score(o)} | {verdict} | {o.reason}: {why} |")
        parts.append("")
    return "\n".join(parts)


def as_json(reports: list[ProblemReport]) -> list[dict]:
    return [{"problem": r.problem, "error": r.error, "reference": r.reference, "kill_rate": r.kill_rate,
             "acceptance_rate": r.acceptance_rate, "meets_targets": r.meets_targets,
             "outcomes": [{"kind": o.kind, "name": o.name, "reason": o.reason, "score": o.score,
                           "broken": o.broken, "killed": o.killed, "accepted": o.accepted, "why": o.why}
                          for o in r.outcomes]} for r in reports]
