"""Score a collected campaign: evaluators in stage order, gates that end a
submission at zero, confidence-weighted category means, a weighted composite.

Runs from campaign.h5 alone (no PETSc, no scheduler) and writes a new
/scores/<scoring-id>/ group; earlier scorings are never touched."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from hpcbench import __version__
from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, all_evaluators
from hpcbench.judge.cache import JudgeCache
from hpcbench.judge.config import JudgeConfig
from hpcbench.judge.task import JudgeTask
from hpcbench.store import StoredCampaign, StoredSubmission, read_campaign

WEIGHTS: dict[str, float] = {"correctness": 0.35, "performance": 0.15, "code": 0.15,
                             "appropriateness": 0.15, "library": 0.20}
TIERS = (("GOLD", 85.0), ("SILVER", 70.0), ("BRONZE", 50.0))


def tier(composite: float | None) -> str:
    if composite is None:
        return ""
    return next((name for name, lo in TIERS if composite >= lo), "NONE")


@dataclass
class SubmissionScore:
    agent: str
    problem: str
    attempt: str
    h5_path: str
    results: list[EvalResult] = field(default_factory=list)
    failed_gate: str = ""
    gates_passed: bool = False
    categories: dict[str, float | None] = field(default_factory=dict)
    composite: float | None = None
    partial: bool = False
    left_out: list[str] = field(default_factory=list)
    refused: bool = False
    refusal_set: bool = False  # a problem whose right answer is to decline: outside the composite
    status: str = ""
    unscored: list[str] = field(default_factory=list)  # evaluators that ran but gave no score
    pending: list[tuple[int, Evaluator, JudgeTask]] = field(default_factory=list)  # judge calls to make


def aggregate(results: list[EvalResult], weights: dict[str, float] = WEIGHTS
              ) -> tuple[dict[str, float | None], float | None, list[str]]:
    """Category = confidence-weighted mean of its scored metric and quality
    evaluators; composite = weighted sum over the scored categories,
    renormalised, in [0, 100]. Gates are the entry ticket, not part of the
    mean: a failed one has already ended the submission at 0, and three passed
    gates averaged with a poor accuracy would hide it (a loose Robertson
    integration scored 95.8 that way)."""
    cats: dict[str, float | None] = {}
    for cat in weights:
        scored = [r for r in results if r.category == cat and r.stage != "gate" and r.status == "scored"
                  and r.score is not None]
        wsum = sum(r.confidence for r in scored)
        cats[cat] = sum(r.confidence * r.score for r in scored) / wsum if wsum > 0 else None  # type: ignore[operator]
    present = {c: v for c, v in cats.items() if v is not None}
    left_out = [c for c, v in cats.items() if v is None]
    if not present:
        return cats, None, left_out
    wtot = sum(weights[c] for c in present)
    composite = 100.0 * sum(weights[c] * v for c, v in present.items()) / wtot
    return cats, composite, left_out


def run_evaluators(ctx: EvalContext, evaluators: list[Evaluator], key: tuple[str, str, str],
                   h5_path: str) -> SubmissionScore:
    """Every evaluator in stage order; a judged evaluator's JudgeTask is kept in
    `pending` (answered later, concurrently across submissions) behind a placeholder."""
    out = SubmissionScore(*key, h5_path=h5_path)
    done: dict[str, EvalResult] = {}
    ctx.extra["results"] = done  # later evaluators (the judges) see earlier results as evidence
    for ev in evaluators:
        if out.failed_gate and ev.stage != "gate":
            break
        if out.failed_gate:
            continue  # later gates are not run once one has failed
        try:
            res = ev.evaluate(ctx)
        except Exception as e:  # an evaluator bug leaves that evaluator unscored, not the campaign dead
            res = ev.unscored(f"evaluator error: {type(e).__name__}: {e}")
        if isinstance(res, JudgeTask):
            out.pending.append((len(out.results), ev, res))
            res = ev.unscored("judge answer pending")
        out.results.append(res)
        done[ev.name] = res
        if ev.stage == "gate" and res.status == "scored" and res.passed is False:
            out.failed_gate = ev.name
    return out


def resolve_judged(scores: list[SubmissionScore], judge: JudgeConfig | None,
                   cache: JudgeCache | None = None) -> dict:
    """Answer the pending judge tasks of all `scores` in one pool; returns counts."""
    pending = [(sc, i, ev, task) for sc in scores for i, ev, task in sc.pending]
    for sc in scores:
        sc.pending = []
    if not pending or judge is None:
        return {}
    from hpcbench.judge import trust
    from hpcbench.judge.runner import run_tasks

    outcomes = run_tasks([p[3] for p in pending], judge, cache)
    for (sc, i, ev, _), o in zip(pending, outcomes, strict=True):
        # A dimension the judge's calibration found unreliable: confidence lowered, said in the rationale.
        sc.results[i] = trust.apply(ev.from_outcome(o), judge.calibration)  # type: ignore[attr-defined]
    return {"tasks": len(outcomes), "cached": sum(o.cached for o in outcomes),
            "answered": sum(o.answer is not None for o in outcomes),
            "unscored": sum(o.answer is None for o in outcomes),
            "http_calls": sum(o.http_calls for o in outcomes),
            "new_cost_usd": sum(o.cost_usd for o in outcomes if not o.cached),
            "reasons": dict(Counter(o.error for o in outcomes if o.error).most_common(3))}


def finish(out: SubmissionScore) -> SubmissionScore:
    out.gates_passed = not out.failed_gate
    cats, comp, left = aggregate(out.results)
    if out.failed_gate:
        out.categories = {c: 0.0 for c in WEIGHTS}
        out.composite = 0.0
    else:
        out.categories, out.composite, out.left_out = cats, comp, left
        # An unscored metric or quality evaluator in a scored category also leaves
        # something out of the composite (gates are not part of it).
        out.unscored = [r.evaluator for r in out.results if r.status == "unscored" and r.stage != "gate"]
        out.partial = bool(left or out.unscored)
    return out


def score_one(ctx: EvalContext, evaluators: list[Evaluator], key: tuple[str, str, str],
              h5_path: str, judge: JudgeConfig | None = None, cache: JudgeCache | None = None) -> SubmissionScore:
    out = run_evaluators(ctx, evaluators, key, h5_path)
    resolve_judged([out], judge, cache)
    return finish(out)


def contexts(stored: StoredCampaign) -> list[tuple[StoredSubmission, EvalContext]]:
    refs = {s.meta.problem: s.record for s in stored.submissions if s.meta.agent == "reference"}
    out = []
    for s in stored.submissions:
        problem, checks = stored.problems[s.meta.problem]
        out.append((s, EvalContext(problem=problem, checks=checks, submission=s.meta, sources=s.sources,
                                   record=s.record, reference=refs.get(s.meta.problem), h5_path=s.path,
                                   extra={"petsc_api": stored.petsc_api})))
    return out


def score_campaign(stored: StoredCampaign, judge: JudgeConfig | None = None,
                   cache: JudgeCache | None = None, stats: dict | None = None) -> list[SubmissionScore]:
    evaluators = [e for e in all_evaluators() if e.category != "refusal"]
    refusal = [e for e in all_evaluators() if e.category == "refusal"]
    scores = []
    for s, ctx in contexts(stored):
        key = (s.meta.agent, s.meta.problem, s.meta.attempt)
        if s.meta.refused or ctx.checks.expect == "refuse":
            # Refusals and the refusal set: only the refusal evaluator, never the composite.
            sc = SubmissionScore(*key, h5_path=s.path, refused=s.meta.refused,
                                 refusal_set=ctx.checks.expect == "refuse",
                                 status="refused" if s.meta.refused else s.status)
            sc.results = [ev.evaluate(ctx) for ev in refusal]
            if not sc.refusal_set:
                # Declining a solvable problem is no answer: like a failed gate it counts as 0 on
                # the leaderboard, or an agent that refuses everything hard would never be penalised.
                sc.failed_gate = "refused"
            scores.append(sc)
            continue
        ctx.extra["judge"] = judge
        sc = run_evaluators(ctx, evaluators, key, s.path)
        sc.status = s.status
        scores.append(sc)
    # Judge calls of every submission go out together, up to the judge's concurrency.
    got = resolve_judged(scores, judge, cache)
    if stats is not None:
        stats.update(got)
    return [sc if sc.refusal_set else finish(sc) for sc in scores]


def new_scoring_id() -> str:
    return "s" + dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def write_scores(h5_path: Path, scoring_id: str, scores: list[SubmissionScore], config: dict,
                 cache: JudgeCache | None = None) -> str:
    """Add /scores/<scoring_id> (and new judge-cache entries) to campaign.h5 via a
    copy that replaces the file."""
    h5_path = Path(h5_path)
    tmp = h5_path.with_name(f".campaign.h5.score.{os.getpid()}.tmp")
    shutil.copyfile(h5_path, tmp)
    try:
        with h5py.File(tmp, "a") as f:
            root = f.require_group("scores")
            if scoring_id in root:
                raise FileExistsError(f"{h5_path}: scoring {scoring_id!r} exists; scorings are never overwritten")
            g = root.create_group(scoring_id)
            g.attrs.update(created=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                           hpcbench_version=__version__, config=json.dumps(config), weights=json.dumps(WEIGHTS))
            for sc in scores:
                sg = g.create_group(f"{sc.agent}/{sc.problem}/{sc.attempt}")
                sg.attrs.update(composite=np.nan if sc.composite is None else sc.composite,
                                tier=tier(sc.composite), gates_passed=sc.gates_passed,
                                failed_gate=sc.failed_gate, partial=sc.partial, left_out=json.dumps(sc.left_out),
                                categories=json.dumps(sc.categories), refused=sc.refused, status=sc.status,
                                refusal_set=sc.refusal_set, submission=sc.h5_path, unscored=json.dumps(sc.unscored))
                for r in sc.results:
                    eg = sg.create_group(f"evaluators/{r.evaluator}")
                    eg.attrs.update(score=np.nan if r.score is None else r.score, confidence=r.confidence,
                                    status=r.status, stage=r.stage, category=r.category, method=r.method,
                                    rationale=r.rationale, judge_model=r.judge_model,
                                    prompt_version=r.prompt_version, prompt_tokens=r.prompt_tokens,
                                    completion_tokens=r.completion_tokens, cost_usd=r.cost_usd,
                                    passed=-1 if r.passed is None else int(r.passed))
                    eg.create_dataset("evidence", data=json.dumps(r.evidence, default=str),
                                      dtype=h5py.string_dtype("utf-8"))
            if cache is not None:
                cache.write_into(f)
        os.replace(tmp, h5_path)
        if cache is not None:
            cache.committed()
    finally:
        tmp.unlink(missing_ok=True)
    return scoring_id


def score(h5_path: Path, scoring_id: str | None = None,
          judge: JudgeConfig | None = None) -> tuple[str, list[SubmissionScore]]:
    sid = scoring_id or new_scoring_id()
    with h5py.File(h5_path, "r") as f:  # before any judge call is paid for
        if "scores" in f and sid in f["scores"]:
            raise FileExistsError(f"{h5_path}: scoring {sid!r} exists; scorings are never overwritten")
    stored = read_campaign(h5_path)
    cache = JudgeCache(h5_path) if judge is not None else None
    stats: dict = {}
    scores = score_campaign(stored, judge, cache, stats)
    evs = all_evaluators()
    config = {"evaluators": [e.name for e in evs],
              "prompt_versions": {e.name: e.prompt_version for e in evs if hasattr(e, "prompt_version")},
              "judge": judge.describe() if judge else None, "judge_stats": stats}
    write_scores(h5_path, sid, scores, config, cache)
    return sid, scores
