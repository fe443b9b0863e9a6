"""Score a collected campaign: evaluators in stage order, gates that end a
submission at zero, confidence-weighted category means, a weighted composite.

Runs from campaign.h5 alone (no PETSc, no scheduler) and writes a new
/scores/<scoring-id>/ group; earlier scorings are never touched."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from hpcbench import __version__
from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, all_evaluators
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
    status: str = ""


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


def score_one(ctx: EvalContext, evaluators: list[Evaluator], key: tuple[str, str, str],
              h5_path: str) -> SubmissionScore:
    out = SubmissionScore(*key, h5_path=h5_path)
    for ev in evaluators:
        if out.failed_gate and ev.stage != "gate":
            break
        if out.failed_gate:
            continue  # later gates are not run once one has failed
        try:
            res = ev.evaluate(ctx)
        except Exception as e:  # an evaluator bug leaves that evaluator unscored, not the campaign dead
            res = ev.unscored(f"evaluator error: {type(e).__name__}: {e}")
        out.results.append(res)
        if ev.stage == "gate" and res.status == "scored" and res.passed is False:
            out.failed_gate = ev.name
    out.gates_passed = not out.failed_gate
    cats, comp, left = aggregate(out.results)
    if out.failed_gate:
        out.categories = {c: 0.0 for c in WEIGHTS}
        out.composite = 0.0
    else:
        out.categories, out.composite, out.left_out = cats, comp, left
        out.partial = bool(left)
    return out


def contexts(stored: StoredCampaign) -> list[tuple[StoredSubmission, EvalContext]]:
    refs = {s.meta.problem: s.record for s in stored.submissions if s.meta.agent == "reference"}
    out = []
    for s in stored.submissions:
        problem, checks = stored.problems[s.meta.problem]
        out.append((s, EvalContext(problem=problem, checks=checks, submission=s.meta, sources=s.sources,
                                   record=s.record, reference=refs.get(s.meta.problem), h5_path=s.path,
                                   extra={"petsc_api": stored.petsc_api})))
    return out


def score_campaign(stored: StoredCampaign) -> list[SubmissionScore]:
    evaluators = all_evaluators()
    scores = []
    for s, ctx in contexts(stored):
        key = (s.meta.agent, s.meta.problem, s.meta.attempt)
        if s.meta.refused:
            scores.append(SubmissionScore(*key, h5_path=s.path, refused=True, status="refused"))
            continue
        sc = score_one(ctx, evaluators, key, s.path)
        sc.status = s.status
        scores.append(sc)
    return scores


def new_scoring_id() -> str:
    return "s" + dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def write_scores(h5_path: Path, scoring_id: str, scores: list[SubmissionScore], config: dict) -> str:
    """Add /scores/<scoring_id> to campaign.h5 via a copy that replaces the file."""
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
                                submission=sc.h5_path)
                for r in sc.results:
                    eg = sg.create_group(f"evaluators/{r.evaluator}")
                    eg.attrs.update(score=np.nan if r.score is None else r.score, confidence=r.confidence,
                                    status=r.status, stage=r.stage, category=r.category, method=r.method,
                                    rationale=r.rationale, judge_model=r.judge_model,
                                    prompt_version=r.prompt_version,
                                    passed=-1 if r.passed is None else int(r.passed))
                    eg.create_dataset("evidence", data=json.dumps(r.evidence, default=str),
                                      dtype=h5py.string_dtype("utf-8"))
        os.replace(tmp, h5_path)
    finally:
        tmp.unlink(missing_ok=True)
    return scoring_id


def score(h5_path: Path, scoring_id: str | None = None) -> tuple[str, list[SubmissionScore]]:
    stored = read_campaign(h5_path)
    scores = score_campaign(stored)
    sid = write_scores(h5_path, scoring_id or new_scoring_id(), scores,
                       {"evaluators": [e.name for e in all_evaluators()]})
    return sid, scores
