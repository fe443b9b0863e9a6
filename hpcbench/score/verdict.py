"""Whether an attempt is right: every gate passed and every hidden check passed. The one
definition of "pass" (pass@k, the leaderboard's pass@1); the hidden checks are the
correctness metrics (numerical_accuracy: the problem's checks.json), and one passes only
at full marks with nothing left unchecked (a check without a reference value in the
campaign is not a pass)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hpcbench.evaluators.base import EvalResult

# Numerical accuracy at full marks: every compare check within its tolerance at every case
# and rank count, every sanity and refinement check true (weights are > 0, so one check
# below full marks brings the weighted mean below 1); the margin absorbs the rounding of
# the weighted mean and of the score's storage.
FULL = 1.0 - 1e-9
CHECKS_PASSED_AT = FULL
TIERS = (("GOLD", 85.0), ("SILVER", 70.0), ("BRONZE", 50.0))


def checks_passed(status: str, score: float | None) -> bool:
    """Whether the numerical-accuracy result (its status and score) says every hidden check
    passed; an unscored accuracy verified nothing, so it says no."""
    return status == "scored" and score is not None and score >= FULL


def accuracy_passed(results: Iterable[EvalResult]) -> bool:
    acc = next((r for r in results if r.evaluator == "numerical_accuracy"), None)
    return acc is not None and checks_passed(acc.status, acc.score)


def tier(composite: float | None, correct: bool) -> str:
    """GOLD/SILVER/BRONZE by composite, only for a program that passed every gate and every
    hidden check (`correct`): a wrong answer keeps its composite (partial credit ranks it among
    wrong programs) but never a tier ("NONE"); "" where nothing was scored."""
    if composite is None:
        return ""
    if not correct:
        return "NONE"
    return next((name for name, lo in TIERS if composite >= lo), "NONE")


def hidden_check(stage: str, category: str) -> bool:
    return stage == "metric" and category == "correctness"


def passed_every_check(results: Iterable[EvalResult], failed_gate: str) -> bool:
    """From a submission's results as scoring made them."""
    if failed_gate:
        return False
    checks = [r for r in results if hidden_check(r.stage, r.category)]
    return bool(checks) and all(r.status == "scored" and r.score is not None and r.score >= FULL
                                and not r.evidence.get("unscored") for r in checks)


def passed_from_rows(gates_passed: bool, evaluators: Mapping[str, Mapping]) -> bool:
    """The same from a stored scoring's evaluator rows, for scorings written before the
    `correct` column (their rows lack the evidence of checks left unchecked)."""
    if not gates_passed:
        return False
    checks = [e for e in evaluators.values() if hidden_check(e["stage"], e["category"])]
    return bool(checks) and all(e["status"] == "scored" and e["score"] is not None and e["score"] >= FULL
                                for e in checks)
