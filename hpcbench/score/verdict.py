"""Whether an attempt is right: every gate passed and every hidden check passed. The one
definition of "pass" (pass@k, the leaderboard's pass@1); the hidden checks are the
correctness metrics (numerical_accuracy: the problem's checks.json), and one passes only
at full marks with nothing left unchecked (a check without a reference value in the
campaign is not a pass)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hpcbench.evaluators.base import EvalResult

FULL = 1.0 - 1e-9  # a check inside its tolerance scores exactly 1; this only absorbs round-off


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
