"""Several samples of one judge per judged evaluator (`score --judge-samples K`): the
result that scores is their mean, each sample kept in its evidence, and the composite
under each sample alone is recorded so that the report can say how much of an
interval the judge's own variation makes (hpcbench.stats.judge_noise)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hpcbench.evaluators.base import EvalResult


def combine(got: Sequence[EvalResult]) -> EvalResult:
    """The mean score and confidence of the scored samples; unscored when none scored.
    Tokens and cost add up: every sample was a real answer."""
    scored = [r for r in got if r.status == "scored" and r.score is not None]
    first = scored[0] if scored else got[0]
    listed = [{"sample": k, "status": r.status, "score": r.score, "confidence": r.confidence,
               "rationale": r.rationale[:500]} for k, r in enumerate(got)]
    update: dict = {"evidence": {**first.evidence, "samples": listed},
                    "prompt_tokens": sum(r.prompt_tokens or 0 for r in got),
                    "completion_tokens": sum(r.completion_tokens or 0 for r in got),
                    "cost_usd": sum(r.cost_usd or 0.0 for r in got)}
    if scored:
        mean = sum(r.score or 0.0 for r in scored) / len(scored)
        update.update(score=mean, confidence=sum(r.confidence for r in scored) / len(scored),
                      rationale=f"mean of {len(scored)} of {len(got)} judge samples "
                                f"({', '.join(f'{r.score:.3f}' for r in scored)}); sample 0: {first.rationale}")
    return first.model_copy(update=update)


def composites(results: list[EvalResult], samples: dict[int, list[EvalResult]],
               composite: Callable[[list[EvalResult]], float | None]) -> list[float]:
    """The composite with every judged result replaced by its k-th sample, for each k
    (a sample that did not score keeps the combined result); [] without samples."""
    if not samples:
        return []
    k = max(len(v) for v in samples.values())
    out = []
    for j in range(k):
        mine = list(results)
        for i, got in samples.items():
            if j < len(got) and got[j].status == "scored" and got[j].score is not None:
                mine[i] = got[j]
        value = composite(mine)
        if value is not None:
            out.append(value)
    return out
