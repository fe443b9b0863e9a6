"""What became of each generated mutant, from its scored result and its job record:

- broken: it does not compile (it tests nothing);
- equivalent (probable): every gate passed and it printed exactly what the reference
  printed at every case and rank count run: no check can or should tell it apart. Listed,
  never counted;
- killed: a gate stopped it (it would score 0), or a hidden check failed, which denies it
  a tier (hpcbench.score.scoring.tier) whatever its composite: the standard definition
  (a mutant is killed when a test fails). `strong` says whether its accuracy also fell
  below `kill_below`, the bar the hand-written library is held to; a mistake confined to
  one branch of the code (the a > 0 upwind side, say) fails only the cases that take it
  and keeps the others' credit, so it cannot fall below one half however the cases weigh;
- surviving: it passed every check though its output differs from the reference's: either
  a harmless change (within what a correct program may print) or a hole in the checks;
- harmless: a survivor a person judged a correct program (the problem's mutants.json
  `harmless` list, with the reason): listed, not counted, as an equivalent is not."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hpcbench.evaluators.metrics.numerical_accuracy import outputs
from hpcbench.jobs.records import JobResult
from hpcbench.score.scoring import SubmissionScore, accuracy_passed
from hpcbench.validation.mutation.operators import Mutation

Verdict = Literal["broken", "equivalent", "killed", "surviving", "harmless", "not run"]


@dataclass
class MutantOutcome:
    mutation: Mutation
    verdict: Verdict
    accuracy: float | None = None
    failed_gate: str = ""
    strong: bool = False  # killed with accuracy below the library's bar (or by a gate)
    why: str = ""  # the gate's or the accuracy's rationale
    screened: bool = False  # killed (or broken) at the screening case alone (mutation/screen.py)

    @property
    def name(self) -> str:
        return self.mutation.name


def same_outputs(record: JobResult | None, reference: JobResult | None) -> bool:
    """Every instrumented run exited 0 and printed the reference's numbers exactly, at the
    same cases and rank counts."""
    if record is None or reference is None:
        return False
    mine, ref = outputs(record), outputs(reference)
    ran = [r for r in record.runs if r.kind == "instrumented"]
    return bool(mine) and len(mine) == len(ran) and mine == ref


def classify(mutation: Mutation, score: SubmissionScore | None, record: JobResult | None,
             reference: JobResult | None, kill_below: float) -> MutantOutcome:
    if score is None:
        return MutantOutcome(mutation, "not run", why="no score (its job did not finish)")
    acc = next((r for r in score.results if r.evaluator == "numerical_accuracy"), None)
    if score.failed_gate:
        gate = next((r for r in score.results if r.evaluator == score.failed_gate), None)
        why = gate.rationale if gate else score.failed_gate
        verdict: Verdict = "broken" if score.failed_gate == "compilation" else "killed"
        return MutantOutcome(mutation, verdict, failed_gate=score.failed_gate, strong=verdict == "killed", why=why)
    accuracy = acc.score if acc is not None and acc.status == "scored" else None
    why = acc.rationale if acc is not None else "not scored"
    if same_outputs(record, reference):
        return MutantOutcome(mutation, "equivalent", accuracy, why="prints what the reference prints")
    killed = not accuracy_passed(score.results)
    return MutantOutcome(mutation, "killed" if killed else "surviving", accuracy,
                         strong=killed and accuracy is not None and accuracy < kill_below, why=why)


@dataclass
class GeneratedReport:
    """One problem's generated mutants: how many the operators made, the sample's outcomes."""

    total: int
    by_operator: dict[str, int]
    outcomes: list[MutantOutcome]

    def count(self, verdict: Verdict) -> int:
        return sum(o.verdict == verdict for o in self.outcomes)

    @property
    def kill_rate(self) -> float | None:
        """Killed over the mutants that count: neither broken nor equivalent (nor unrun)."""
        k, s = self.count("killed"), self.count("surviving")
        return k / (k + s) if k + s else None

    @property
    def survivors(self) -> list[MutantOutcome]:
        return [o for o in self.outcomes if o.verdict == "surviving"]
