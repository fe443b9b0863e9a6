"""Lower the confidence of a judged result where the judge's calibration says
it is unreliable (hpcbench calibrate; docs/judges.md).

A dimension whose measured accuracy on the probe set is below the judge's
threshold keeps its score but its confidence is multiplied by
(accuracy - 0.5) / (threshold - 0.5), clipped to [0, 1]: 1 at the threshold,
0 at chance (a coin-flip judge then carries no weight in its category's
confidence-weighted mean). It is never silent: the rationale starts with
"[low-confidence judge ...]" and the evidence keeps the calibration and the
confidence before. A calibration made with another prompt version of the
dimension does not apply (the rubric it measured is not the one used)."""

from __future__ import annotations

from typing import Any

from hpcbench.evaluators.base import EvalResult

CHANCE = 0.5


def factor(accuracy: float, threshold: float) -> float:
    if accuracy >= threshold:
        return 1.0
    return max(0.0, min(1.0, (accuracy - CHANCE) / (threshold - CHANCE))) if threshold > CHANCE else 0.0


def apply_calibration(res: EvalResult, calibration: dict[str, Any] | None) -> EvalResult:
    if not calibration or res.method != "llm_judge" or res.status != "scored" or res.evidence.get("zero_reason"):
        return res  # a 0 by rule (evaluators/judged/base.py) is no judge's verdict: nothing to discount
    dim = calibration.get("dimensions", {}).get(res.evaluator)
    if dim is None:
        return res
    note = {"file": calibration.get("file", ""), "probe_set": calibration.get("probe_set", ""),
            "created": calibration.get("created", ""), "threshold": calibration.get("threshold"),
            "accuracy": dim.get("accuracy"), "calibrated_prompt_version": dim.get("prompt_version", "")}
    if dim.get("prompt_version") != res.prompt_version:
        note["applies"] = False
        note["why"] = f"calibrated with {dim.get('prompt_version')}, scored with {res.prompt_version}"
        return res.model_copy(update={"evidence": {**res.evidence, "calibration": note}})
    acc, thr = dim.get("accuracy"), float(calibration.get("threshold", 0.0))
    low = acc is None or acc < thr
    note.update(applies=True, low_confidence=low)
    if not low:
        return res.model_copy(update={"evidence": {**res.evidence, "calibration": note}})
    f = 0.0 if acc is None else factor(acc, thr)
    note.update(confidence_before=res.confidence, factor=f)
    measured = "not measured" if acc is None else f"accuracy {acc:.2f} < {thr:.2f}"
    prefix = (f"[low-confidence judge: {measured} on probe set {note['probe_set']}; "
              f"confidence {res.confidence:.2f} -> {res.confidence * f:.2f}] ")
    return res.model_copy(update={"confidence": res.confidence * f, "rationale": prefix + res.rationale,
                                  "evidence": {**res.evidence, "calibration": note}})
