"""What validation found, one report type for both measures:

- checks (validate-checks): a wrong program is *killed* when its numerical accuracy is below
  KILL_BELOW or a gate stops it (it would score 0 on the leaderboard), else it *survives*; a
  valid variant is *accepted* when it passes every hidden check (ACCEPT_AT: what earns a
  tier), else it is *rejected* (a check that punishes correct work). A mutant that does not
  compile tests nothing: *broken*, reported and counted as not killed (fix its edits).
  Generated mutants add their own verdicts (mutation/verdict.py).
- performance (validate-performance): a slower program is *killed* when its execution_time
  is below PERF_ACCEPT_AT (it lost score); an as-fast one is *accepted* at or above it. Where
  the programs are timed against a par, that is their ratio to the reference timed in the same
  rounds, scored on the problem's `thresholds` as before par (`vs_reference`: the same job's
  ratio, robust where two jobs' ratios to par differ by the load's noise), and a slower one is
  killed too where it scored below the reference's own score against par. A faster one is
  *ahead* when it scores above every program (the reference included) whose measured time is
  FASTER_APART (1.5) times its own or more, else *BEHIND*; the problem's par is *accepted* at
  PERF_ACCEPT_AT against itself. A program that fails a gate or the hidden checks is no right
  program: *broken*, reported, left out of the rates.

Targets: kill >= 95% and acceptance 100% (and the generated mutants' kill rate >= 95%)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hpcbench.score.scoring import CHECKS_PASSED_AT
from hpcbench.validation.library import KINDS, Measure
from hpcbench.validation.mutation.verdict import GeneratedReport, MutantOutcome

KILL_BELOW = 0.5
ACCEPT_AT = CHECKS_PASSED_AT
PERF_ACCEPT_AT = 0.95
FASTER_APART = 1.5  # a faster program must outscore every program this many times slower than it
KILL_TARGET = 0.95
ACCEPT_TARGET = 1.0


@dataclass
class Outcome:
    kind: str  # wrong | valid (checks), slower | as_fast | faster | par (performance)
    name: str
    reason: str
    score: float | None  # numerical_accuracy or execution_time; None: a gate stopped it, or not scored
    failed_gate: str = ""
    broken: str = ""  # why it tests nothing: does not compile, or (performance) is no right program
    why: str = ""  # the deciding evaluator's rationale (or the gate's)
    screened: bool = False  # decided by the screen (every case at one rank count): the score is an upper bound
    # performance: time over par's (or the reference's, without a par) in its own job
    ratio: float | None = None
    # with a par: the ratio to the reference in the same rounds, scored on the problem's thresholds,
    # which decides slower and as-fast programs (execution_time's score is against par)
    vs_reference: float | None = None
    below_reference: bool = False  # slower, against a par: scored below the reference's own score (decide)
    ahead: bool | None = None  # faster: above every program FASTER_APART times slower (decide)
    behind: str = ""  # faster: the slower program that scored as much, and how

    def __post_init__(self) -> None:
        if self.kind in ("wrong", "valid") and self.failed_gate == "compilation" and not self.broken:
            self.broken = self.why or "does not compile"  # a mutant that does not build tests nothing

    @property
    def killed(self) -> bool:
        if self.broken:
            return False
        if self.kind == "wrong":
            return bool(self.failed_gate) or (self.score is not None and self.score < KILL_BELOW)
        score = self.vs_reference if self.vs_reference is not None else self.score
        return self.kind == "slower" and (self.below_reference or (score is not None and score < PERF_ACCEPT_AT))

    @property
    def accepted(self) -> bool:
        if self.broken or self.failed_gate or self.score is None:
            return False
        if self.kind == "faster":
            return bool(self.ahead)
        if self.kind == "as_fast" and self.vs_reference is not None:
            return self.vs_reference >= PERF_ACCEPT_AT
        return self.score >= (ACCEPT_AT if self.kind == "valid" else PERF_ACCEPT_AT) and self.kind in ("valid",
                                                                                                        "as_fast",
                                                                                                        "par")


@dataclass
class ProblemReport:
    problem: str
    measure: Measure = "checks"
    outcomes: list[Outcome] = field(default_factory=list)
    error: str = ""  # the reference itself did not run: nothing here can be judged
    generated: GeneratedReport | None = None  # checks: the generated mutants
    reference: str = ""  # performance: the reference's own execution_time (against par, or itself)
    reference_score: float | None = None
    reference_ratio: float | None = None  # the reference's time over par's
    against_par: bool = False  # execution_time scored the reference (so every program) against a par
    language: str = "c"  # checks: the library's programs' language (python: mutants-python.json)

    @property
    def label(self) -> str:
        """The problem's id, with the library's language where it is not C."""
        return self.problem if self.language == "c" else f"{self.problem} ({self.language})"

    def decide(self) -> None:
        """Performance: each faster program against every program FASTER_APART times slower
        than it (the reference among them); against a par, a slower program that scored below the
        reference's own score lost score too (killed, whatever its same-rounds ratio said)."""
        timed = [(o.name, o.ratio, o.score) for o in self.outcomes
                 if not o.broken and o.ratio is not None and o.score is not None]
        if self.reference_ratio is not None and self.reference_score is not None:
            timed.append(("the reference", self.reference_ratio, self.reference_score))
        for o in self.outcomes:
            o.below_reference = (o.kind == "slower" and self.against_par and o.score is not None
                                 and self.reference_score is not None and o.score < self.reference_score)
        for o in self.outcomes:
            if o.kind != "faster" or o.broken or o.ratio is None or o.score is None:
                continue
            beaten = [(n, r, sc) for n, r, sc in timed if r >= FASTER_APART * o.ratio and sc >= o.score]
            o.ahead = not beaten
            if beaten:
                n, r, sc = beaten[0]
                o.behind = (f"{n} is {r / o.ratio:.2f}x slower ({r:.2f} vs {o.ratio:.2f} x the yardstick) "
                            f"and scored {sc:.2f}, not below {o.score:.2f}")

    def of(self, kind: str) -> list[Outcome]:
        """A kind's programs as its rate counts them (performance leaves the broken out)."""
        return [o for o in self.outcomes if o.kind == kind and (self.measure == "checks" or not o.broken)]

    def _rate(self, kind: str, verdict: str) -> float | None:
        got = self.of(kind)
        return sum(getattr(o, verdict) for o in got) / len(got) if got else None

    @property
    def kill_rate(self) -> float | None:
        return self._rate(KINDS[self.measure][0], "killed")

    @property
    def acceptance_rate(self) -> float | None:
        return self._rate(KINDS[self.measure][1], "accepted")

    @property
    def meets_targets(self) -> bool:
        """Kill >= 95% and acceptance 100%; checks: also the generated mutants' kill >= 95%, a part
        that did not run (--no-library, --generated 0) not judged; performance: nothing broken."""
        k, a = self.kill_rate, self.acceptance_rate
        library_ok = k is not None and a is not None and k >= KILL_TARGET and a >= ACCEPT_TARGET
        if self.measure == "performance":
            extra = [o for o in self.outcomes if o.kind in ("faster", "par")]
            return (not self.error and not any(o.broken for o in self.outcomes) and library_ok
                    and all(o.accepted for o in extra))
        g = self.generated.kill_rate if self.generated is not None else None
        library = (k is None and a is None) or library_ok
        return not self.error and library and (g is None or g >= KILL_TARGET) and (k, a, g) != (None, None, None)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _score(o: Outcome) -> str:
    if o.kind in ("slower", "as_fast", "faster", "par"):
        if o.broken or o.score is None:
            return "broken" if o.broken else "unscored"
        return f"{o.score:.2f}" + (f" ({o.ratio:.2f}x)" if o.ratio is not None else "")
    if o.failed_gate:
        return f"gate {o.failed_gate}"
    if o.score is None:
        return "unscored"
    # decided by the screen: the full run's accuracy is at most this
    return f"<= {o.score:.3f} (one rank count)" if o.screened else f"{o.score:.3f}"


def _verdict(o: Outcome) -> str:
    if o.kind == "faster":
        return "BROKEN" if o.broken else ("ahead" if o.accepted else "BEHIND")
    if o.kind == "par":
        return "BROKEN" if o.broken else ("accepted" if o.accepted else "REJECTED")
    if o.kind in ("wrong", "slower"):
        return "BROKEN" if o.broken and o.kind == "slower" else ("killed" if o.killed else "SURVIVES")
    return "BROKEN" if o.broken and o.kind == "as_fast" else ("accepted" if o.accepted else "REJECTED")


def _headline(r: ProblemReport) -> str:
    bad, good = KINDS[r.measure]
    w, v = r.of(bad), r.of(good)
    line = (f"{r.label}: kill rate {_pct(r.kill_rate)} ({sum(o.killed for o in w)}/{len(w)}), "
            f"acceptance {_pct(r.acceptance_rate)} ({sum(o.accepted for o in v)}/{len(v)}): "
            f"{'ok' if r.meets_targets else 'BELOW TARGET'}")
    if r.measure == "performance":
        fast = r.of("faster")
        if fast:
            line += f"; faster ahead {sum(o.accepted for o in fast)}/{len(fast)}"
        par = r.of("par")
        if par:
            line += f"; par {_score(par[0])} {_verdict(par[0])}"
        return f"{line}; the reference {r.reference}"
    return line if r.outcomes else f"{r.label}: (library not run): {'ok' if r.meets_targets else 'BELOW TARGET'}"


def _program_lines(r: ProblemReport) -> list[str]:
    lines = []
    for o in r.outcomes:
        if o.broken and r.measure == "performance":
            lines.append(f"  BROKEN {o.kind} {o.name}: {o.broken}")
        elif o.broken and o.kind == "wrong":
            lines.append(f"  BROKEN mutant {o.name} (does not compile: fix its edits): {o.why}")
        elif o.kind in ("wrong", "slower") and not o.killed:
            metric = "accuracy" if o.kind == "wrong" else "execution_time"
            lines.append(f"  survivor {o.name} ({metric} {_score(o)}): {o.reason}"
                         + (f"; {o.why}" if o.kind == "slower" else ""))
        elif o.kind == "faster" and not o.accepted:
            lines.append(f"  behind {o.name} (execution_time {_score(o)}): {o.reason}; {o.behind}")
        elif o.kind == "par" and not o.accepted:
            lines.append(f"  rejected par (execution_time {_score(o)}): {o.why}")
        elif o.kind in ("valid", "as_fast") and not o.accepted:
            label = "rejected variant" if o.kind == "valid" else "rejected"
            metric = "accuracy" if o.kind == "valid" else "execution_time"
            lines.append(f"  {label} {o.name} ({metric} {_score(o)}): {o.reason}; {o.why}")
    return lines


def summary(reports: list[ProblemReport]) -> str:
    """Per problem: kill and acceptance rates, each survivor and each rejected program by name."""
    lines = []
    for r in reports:
        if r.error:
            lines.append(f"{r.label}: NOT MEASURED: {r.error}")
            continue
        lines.append(_headline(r))
        lines += _program_lines(r)
        if r.generated is not None:
            lines += _generated_lines(r.generated)
    return "\n".join(lines)


def markdown(reports: list[ProblemReport]) -> str:
    """A table per problem with a line per program (docs/problems.md)."""
    parts = []
    for r in reports:
        parts.append(f"### {r.label}\n")
        if r.error:
            parts.append(f"Not measured: {r.error}\n")
            continue
        rates = f"Kill rate {_pct(r.kill_rate)}, acceptance {_pct(r.acceptance_rate)}"
        if r.measure == "performance":
            parts.append(f"{rates}; the reference {r.reference.split(':')[0]}"
                         + (f" ({r.reference_ratio:.2f}x par)" if r.reference_ratio is not None else "") + ".\n")
            parts.append("| program | kind | execution_time | verdict | why |\n|---|---|---|---|---|")
        else:
            parts.append(f"{rates}.\n")
            parts.append("| program | kind | accuracy | verdict | reason |\n|---|---|---|---|---|")
        for o in r.outcomes:
            said = (o.broken or o.behind or o.why).replace("|", "/")[:160]
            text = o.reason if r.measure == "checks" else f"{o.reason}: {said}"
            parts.append(f"| {o.name} | {o.kind} | {_score(o)} | {_verdict(o)} | {text} |")
        parts.append("")
        if r.generated is not None:
            parts.append(_generated_markdown(r.generated))
    return "\n".join(parts)


def as_json(reports: list[ProblemReport]) -> list[dict]:
    out = []
    for r in reports:
        doc: dict[str, Any] = {"problem": r.problem, "measure": r.measure, "language": r.language,
                               "error": r.error, "kill_rate": r.kill_rate, "acceptance_rate": r.acceptance_rate,
                               "meets_targets": r.meets_targets,
                               "outcomes": [_outcome_json(o, r.measure) for o in r.outcomes]}
        if r.measure == "performance":
            doc["reference"] = r.reference
            doc["reference_ratio"] = r.reference_ratio
        else:
            doc["generated"] = _generated_json(r.generated) if r.generated is not None else None
        out.append(doc)
    return out


def _outcome_json(o: Outcome, measure: Measure) -> dict:
    common = {"kind": o.kind, "name": o.name, "reason": o.reason, "killed": o.killed, "accepted": o.accepted,
              "why": o.why}
    if measure == "performance":
        return {**common, "score": o.score, "broken": o.broken, "ratio": o.ratio, "ahead": o.ahead,
                "behind": o.behind}
    return {**common, "accuracy": o.score, "failed_gate": o.failed_gate, "screened": o.screened}


# ----------------------------------------------------------------------------- generated mutants


def _acc(o: MutantOutcome) -> str:
    return f"gate {o.failed_gate}" if o.failed_gate else ("unscored" if o.accuracy is None else f"{o.accuracy:.3f}")


def generated_counts(g: GeneratedReport) -> str:
    """Generated, run, broken, equivalent, killed, surviving, harmless: one line."""
    ops = ", ".join(f"{op} {n}" for op, n in g.by_operator.items())
    strong = sum(o.strong for o in g.outcomes)
    screened = sum(o.screened and o.verdict == "killed" for o in g.outcomes)
    return (f"generated {g.total} ({ops}), run {len(g.outcomes)}: broken {g.count('broken')}, "
            f"equivalent (probable) {g.count('equivalent')}, killed {g.count('killed')} "
            f"({screened} at the screening case alone; {strong} by a gate or below accuracy 0.5 at every case), "
            f"surviving {g.count('surviving')}, "
            f"harmless (explained) {g.count('harmless')}"
            + (f", not run {g.count('not run')}" if g.count("not run") else ""))


def _generated_lines(g: GeneratedReport) -> list[str]:
    lines = [f"  generated mutants: kill rate {_pct(g.kill_rate)}; {generated_counts(g)}"]
    for o in g.survivors:
        lines.append(f"    survivor {o.name} (accuracy {_acc(o)}, passes every check): {o.mutation.edit}")
    for o in g.outcomes:
        if o.verdict == "harmless":
            lines.append(f"    harmless {o.name}: {o.mutation.edit}: {o.why}")
    return lines


def _generated_markdown(g: GeneratedReport) -> str:
    parts = [f"Generated mutants: kill rate {_pct(g.kill_rate)}; {generated_counts(g)}.\n"]
    shown = [o for o in g.outcomes if o.verdict in ("surviving", "harmless", "equivalent", "not run")]
    order = {"surviving": 0, "harmless": 1, "not run": 2, "equivalent": 3}
    if shown:
        parts.append("| mutant | verdict | accuracy | edit | why harmless |\n|---|---|---|---|---|")
        for o in sorted(shown, key=lambda o: (order[o.verdict], o.name)):
            edit = o.mutation.edit.replace("|", "\\|")
            why = o.why.replace("|", "\\|") if o.verdict == "harmless" else ""
            parts.append(f"| {o.name} | {o.verdict} | {_acc(o)} | {edit} | {why} |")
        parts.append("")
    return "\n".join(parts)


def _generated_json(g: GeneratedReport) -> dict:
    return {"total": g.total, "by_operator": g.by_operator, "kill_rate": g.kill_rate,
            "outcomes": [{"name": o.name, "operator": o.mutation.operator, "edit": o.mutation.edit,
                          "verdict": o.verdict, "accuracy": o.accuracy, "failed_gate": o.failed_gate,
                          "strong": o.strong, "screened": o.screened, "why": o.why} for o in g.outcomes]}
