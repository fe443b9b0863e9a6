"""Score a collected campaign: evaluators in stage order, gates that end a
submission at zero, confidence-weighted category means, a weighted composite.

Runs from campaign.h5 alone (no PETSc, no scheduler, no checkout: problems and
PETSc API facts come from the plan-time snapshot in it) and writes a new
scores/<scoring-id>.h5 beside it; campaign.h5 and earlier scorings are never touched."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import multiprocessing
import os
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

from hpcbench import __version__
from hpcbench.errors import HpcbenchError, env_number
from hpcbench.evaluators.base import EvalContext, EvalResult, Evaluator, ScalingPoint, all_evaluators
from hpcbench.evaluators.categories import WEIGHTS
from hpcbench.evaluators.judged.base import JudgedEvaluator
from hpcbench.judge.cache import JudgeCache
from hpcbench.judge.config import JudgeConfig
from hpcbench.score import contention, judge_samples, judge_trust, uncertainty
from hpcbench.score.reference_status import NOT_SCORED, problems_without_reference
from hpcbench.score.sweep_points import Key, scaling_points
from hpcbench.score.verdict import CHECKS_PASSED_AT, TIERS, accuracy_passed, checks_passed, passed_every_check, tier
from hpcbench.stats.intervals import Settings
from hpcbench.store import StoredCampaign, StoredSubmission
from hpcbench.store.read import read_campaign_batches, record_skeletons
from hpcbench.store.scorings import scoring_path, write_scoring

JudgeProgress = Callable[[int, int], None]  # (answered, total) judge calls
__all__ = ["CHECKS_PASSED_AT", "TIERS", "SubmissionScore", "accuracy_passed", "aggregate", "checks_passed", "score",
           "score_campaign", "tier"]


@dataclass(frozen=True)
class CampaignInputs:
    """What each submission's context takes from the campaign beside its own rows: built once
    by `score` and handed down (evaluators read nothing else, and open no file)."""

    # submission path -> {run index: why} for runs that shared a core with another step (contention.py)
    contended: dict[str, dict[int, str]] = field(default_factory=dict)
    scaling: dict[Key, list[ScalingPoint]] = field(default_factory=dict)  # sweep points per submission
    options: dict[str, str] = field(default_factory=dict)  # `hpcbench score --time-metric` ...


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
    # With several judge samples: each judged result's samples (by index into results), and
    # the composite under each sample (hpcbench.score.judge_samples).
    samples: dict[int, list[EvalResult]] = field(default_factory=dict)
    judge_composites: list[float] = field(default_factory=list)

    @property
    def tier(self) -> str:
        return tier(self.composite, self.correct)

    @property
    def correct(self) -> bool:
        """Every gate and every hidden check passed (hpcbench.score.verdict)."""
        return not self.refusal_set and passed_every_check(self.results, self.failed_gate)


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
        cats[cat] = sum(r.confidence * (r.score or 0.0) for r in scored) / wsum if wsum > 0 else None
    present = {c: v for c, v in cats.items() if v is not None}
    left_out = [c for c, v in cats.items() if v is None]
    if not present:
        return cats, None, left_out
    wtot = sum(weights[c] for c in present)
    composite = 100.0 * sum(weights[c] * v for c, v in present.items()) / wtot
    return cats, composite, left_out


def run_evaluators(ctx: EvalContext, evaluators: list[Evaluator], key: tuple[str, str, str],
                   h5_path: str) -> SubmissionScore:
    """Every evaluator in stage order; a judged evaluator's result holds its JudgeTask in
    `pending` (answered later, concurrently across submissions: resolve_judged)."""
    out = SubmissionScore(*key, h5_path=h5_path)
    done: dict[str, EvalResult] = {}
    ctx.results = done  # later evaluators (the judges) see earlier results as evidence
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
        done[ev.name] = res
        if ev.stage == "gate" and res.status == "scored" and res.passed is False:
            out.failed_gate = ev.name
    return out


def resolve_judged(scores: list[SubmissionScore], judge: JudgeConfig | None,
                   cache: JudgeCache | None = None, progress: JudgeProgress | None = None,
                   judged: dict[str, JudgedEvaluator] | None = None) -> dict:
    """Answer the pending judge tasks of all `scores` in one pool, each judged result replaced
    by its evaluator's result for the answer; returns counts."""
    judged = judged if judged is not None else judged_evaluators()
    pending = [(sc, i, judged[r.evaluator], r.pending) for sc in scores for i, r in enumerate(sc.results)
               if r.pending is not None and r.evaluator in judged]
    for sc, i, _, _ in pending:
        sc.results[i] = sc.results[i].model_copy(update={"pending": None})
    if not pending or judge is None:
        return {}
    from hpcbench.judge.runner import run_tasks

    # each task once per judge sample (sample k > 0 has its own cache key: real answers, asked once)
    k = judge.samples
    outcomes = run_tasks([p[3] for p in pending] * k, judge, cache, progress,
                         samples=[judge.sample + j for j in range(k) for _ in pending] if k > 1 else None)
    # Too large or refused for the problem's reference too: the judge is the limit, not the submissions.
    of = [pending[n % len(pending)] for n in range(len(outcomes))]
    limit = {(sc.problem, ev.name) for (sc, _, ev, _), o in zip(of, outcomes, strict=True)
             if sc.agent == "reference" and o.blame == "submission"}
    for (sc, _, ev, _), o in zip(of, outcomes, strict=True):
        if o.blame == "submission" and (sc.problem, ev.name) in limit:
            o.blame = "judge"
            o.error += "; the problem's reference fails the same way: the judge's limit, not the submission's"
    for n, (sc, i, ev, _) in enumerate(pending):
        # A dimension the judge's calibration found unreliable: confidence lowered, said in the rationale.
        got = [judge_trust.apply_calibration(ev.from_outcome(outcomes[j * len(pending) + n]), judge.calibration)
               for j in range(k)]
        sc.results[i] = judge_samples.combine(got) if k > 1 else got[0]
        if k > 1:
            sc.samples[i] = got
    return {"tasks": len(outcomes), "cached": sum(o.cached for o in outcomes),
            "answered": sum(o.answer is not None for o in outcomes),
            "unscored": sum(o.answer is None and o.blame != "submission" for o in outcomes),
            "zero_by_submission": sum(o.answer is None and o.blame == "submission" for o in outcomes),
            "http_calls": sum(o.http_calls for o in outcomes),
            "new_cost_usd": sum(o.cost_usd for o in outcomes if not o.cached),
            "reasons": dict(Counter(o.error for o in outcomes if o.error and o.blame != "submission").most_common(3)),
            "zero_reasons": dict(Counter(o.error for o in outcomes if o.blame == "submission").most_common(3))}


def judged_evaluators() -> dict[str, JudgedEvaluator]:
    """The registered evaluators that ask a judge, by name: they turn its answers into results."""
    return {e.name: e for e in all_evaluators() if isinstance(e, JudgedEvaluator)}


def finish_score(out: SubmissionScore) -> SubmissionScore:
    out.gates_passed = not out.failed_gate
    cats, comp, left = aggregate(out.results)
    if out.failed_gate:
        out.categories = {c: 0.0 for c in WEIGHTS}
        out.composite = 0.0
    else:
        out.categories, out.composite, out.left_out = cats, comp, left
        # An unscored metric or quality evaluator in a scored category also leaves
        # something out of the composite (gates are not part of it).
        # An optional evaluator with nothing to score (scalability without a sweep) leaves nothing out.
        out.unscored = [r.evaluator for r in out.results if r.status == "unscored" and r.stage != "gate"
                        and not r.evidence.get("optional")]
        out.partial = bool(left or out.unscored)
        out.judge_composites = judge_samples.composites(out.results, out.samples, lambda rs: aggregate(rs)[1])
    return out


def composite_set(scores: list[SubmissionScore]) -> None:
    """Composites of one problem over the same evaluators for every submission: those scored
    for every submission of the problem that passed the gates. An evaluator unscored for one of
    them (a judge outage on one call, no sweep of one program) is left out for all of them, and
    named in each one's `unscored`: a submission cannot raise its composite by leaving an
    evaluator unscored, and no two composites of a problem weigh different evaluators."""
    groups: dict[str, list[SubmissionScore]] = {}
    for sc in scores:
        if sc.gates_passed and not sc.failed_gate and not sc.refusal_set and not sc.status.startswith(NOT_SCORED):
            groups.setdefault(sc.problem, []).append(sc)
    for group in groups.values():
        ranked = [{r.evaluator for r in sc.results if _counted(r) and r.status == "scored" and r.score is not None}
                  for sc in group]
        named = {r.evaluator for sc in group for r in sc.results if _counted(r)
                 and not (r.status == "unscored" and r.evidence.get("optional"))}
        common = set.intersection(*ranked) if ranked else set()
        for sc in group:
            kept = [r for r in sc.results if r.evaluator in common]
            sc.categories, sc.composite, sc.left_out = aggregate(kept)
            sc.unscored = sorted(named - common)
            sc.partial = bool(sc.left_out or sc.unscored)
            for i, r in enumerate(sc.results):
                if r.evaluator in named - common and r.status == "scored":
                    sc.results[i] = r.model_copy(update={"evidence": {
                        **r.evidence, "left_out_of_composite": "unscored for another submission of this problem"}})


def _counted(r: EvalResult) -> bool:
    return r.stage != "gate" and r.category in WEIGHTS


def score_one(ctx: EvalContext, evaluators: list[Evaluator], key: tuple[str, str, str],
              h5_path: str, judge: JudgeConfig | None = None, cache: JudgeCache | None = None) -> SubmissionScore:
    out = run_evaluators(ctx, evaluators, key, h5_path)
    resolve_judged([out], judge, cache)
    return finish_score(out)


def contexts(stored: StoredCampaign, inputs: CampaignInputs | None = None,
             submissions: list[StoredSubmission] | None = None) -> list[tuple[StoredSubmission, EvalContext]]:
    """Each submission's context (`submissions`, else all of `stored`'s)."""
    inputs = inputs or CampaignInputs()
    subs = stored.submissions if submissions is None else submissions
    refs = stored.references if stored.references is not None else {
        s.meta.problem: s.record for s in subs if s.meta.agent == "reference"}
    out = []
    for s in subs:
        problem, checks = stored.problems[s.meta.problem]
        out.append((s, EvalContext(problem=problem, checks=checks, submission=s.meta, sources=s.sources,
                                   record=s.record, reference=refs.get(s.meta.problem), h5_path=s.path,
                                   petsc_api=stored.petsc_api, contended=inputs.contended.get(s.path, {}),
                                   scaling=inputs.scaling.get((s.meta.agent, s.meta.problem, s.meta.attempt), []),
                                   options=dict(inputs.options),
                                   case_args=(stored.case_args or {}).get(s.meta.problem, {}))))
    return out


def _evaluate(s: StoredSubmission, ctx: EvalContext, evaluators: list[Evaluator], refusal: list[Evaluator],
              judge: JudgeConfig | None) -> SubmissionScore:
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
        return sc
    ctx.judge = judge
    sc = run_evaluators(ctx, evaluators, key, s.path)
    sc.status = s.status
    return sc


@dataclass(frozen=True)
class EvaluationJob:
    """A batch of submissions and the evaluators to run on them: everything a scoring worker
    needs, handed to it as an argument (a forked process inherits it, nothing is pickled)."""

    items: list[tuple[StoredSubmission, EvalContext]]
    evaluators: list[Evaluator]
    refusal: list[Evaluator]
    judge: JudgeConfig | None = None

    def run(self, which: Iterable[int]) -> list[SubmissionScore]:
        return [_evaluate(*self.items[i], self.evaluators, self.refusal, self.judge) for i in which]


def _worker(job: EvaluationJob, which: range, conn: Connection) -> None:
    try:
        conn.send(job.run(which))
    except BaseException:  # noqa: BLE001 - the parent raises it, with the worker's traceback
        conn.send(traceback.format_exc())
    finally:
        conn.close()


def run_forked(job: EvaluationJob, workers: int) -> list[SubmissionScore]:
    """job.run over every item in `workers` forked processes, strided (neighbouring submissions
    are often the same problem, the same cost); results in the items' order."""
    mp = multiprocessing.get_context("fork")
    started: list[tuple[BaseProcess, Connection]] = []
    out: list[SubmissionScore | None] = [None] * len(job.items)
    try:
        for w in range(workers):
            recv, send = mp.Pipe(duplex=False)
            proc = mp.Process(target=_worker, args=(job, range(w, len(job.items), workers), send), daemon=True)
            proc.start()
            send.close()
            started.append((proc, recv))
        for w, (child, pipe) in enumerate(started):
            try:
                got = pipe.recv()
            except EOFError:
                child.join()
                raise HpcbenchError(f"scoring worker {child.pid} died (exit code {child.exitcode}) before it "
                                    "answered: out of memory? (HPCBENCH_SCORE_WORKERS=1 scores in one process)"
                                    ) from None
            if isinstance(got, str):
                raise HpcbenchError(f"scoring worker {child.pid} failed:\n{got}")
            out[w::workers] = got
    finally:
        for child, pipe in started:
            pipe.close()
            if child.is_alive():
                child.kill()
            child.join()
    return [sc for sc in out if sc is not None]


def score_workers() -> int:
    """Processes for the deterministic evaluators: HPCBENCH_SCORE_WORKERS, else the cores."""
    return max(1, int(env_number("HPCBENCH_SCORE_WORKERS", 0, integer=True)) or len(os.sched_getaffinity(0)))


def score_campaign(stored: StoredCampaign, judge: JudgeConfig | None = None,
                   cache: JudgeCache | None = None, stats: dict | None = None,
                   workers: int | None = None, batches: Iterable[list[StoredSubmission]] | None = None,
                   progress: JudgeProgress | None = None,
                   evaluated: Callable[[int], None] | None = None,
                   inputs: CampaignInputs | None = None) -> list[SubmissionScore]:
    """Every submission's evaluators, then the judge calls of all. `batches` (else
    stored.submissions at once) bounds the records held in memory; `evaluated(n)` after
    each batch, n submissions so far; `inputs`: what the contexts take from the campaign."""
    scores = []
    for part in batches if batches is not None else [stored.submissions]:
        refs = stored.references if stored.references is not None else {
            s.meta.problem: s.record for s in part if s.meta.agent == "reference"}
        used = {pid: stored.problems[pid] for pid in {s.meta.problem for s in part}}
        no_ref = problems_without_reference(used, refs)
        # A problem without a usable reference run is never scored on the checks that remain.
        for s in part:
            if s.meta.problem in no_ref:
                scores.append(SubmissionScore(s.meta.agent, s.meta.problem, s.meta.attempt, h5_path=s.path,
                                              status=f"{NOT_SCORED}: {no_ref[s.meta.problem]}",
                                              left_out=list(WEIGHTS)))
        scores += evaluate_all(stored, judge, workers, inputs, [s for s in part if s.meta.problem not in no_ref])
        if evaluated is not None:
            evaluated(len(scores))
    # Judge calls of every submission go out together, up to the judge's concurrency.
    got = resolve_judged(scores, judge, cache, progress)
    if stats is not None:
        stats.update(got)
    out = [sc if sc.refusal_set or sc.status.startswith(NOT_SCORED) else finish_score(sc) for sc in scores]
    composite_set(out)
    return out


def evaluate_all(stored: StoredCampaign, judge: JudgeConfig | None = None, workers: int | None = None,
                 inputs: CampaignInputs | None = None, submissions: list[StoredSubmission] | None = None
                 ) -> list[SubmissionScore]:
    """Every submission's evaluators (`submissions`, else all of `stored`'s), judge tasks left
    pending (in `workers` forked processes for large campaigns: the deterministic evaluators
    are CPU-bound Python)."""
    every = all_evaluators()
    job = EvaluationJob(contexts(stored, inputs, submissions), [e for e in every if e.category != "refusal"],
                        [e for e in every if e.category == "refusal"], judge)
    workers = min(workers or score_workers(), max(1, len(job.items) // 50))
    return job.run(range(len(job.items))) if workers <= 1 else run_forked(job, workers)


def new_scoring_id() -> str:
    return "s" + dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def write_scores(h5_path: Path, scoring_id: str, scores: list[SubmissionScore], config: dict,
                 collected: str = "", documents: dict[str, str] | None = None) -> str:
    """Write scores/<scoring_id>.h5 beside campaign.h5 (which is never rewritten),
    with the scorer's version and git commit and the collect time of the campaign scored."""
    from hpcbench.plan.campaign import git_commit

    h5_path = Path(h5_path)
    write_scoring(h5_path.parent, scoring_id, scores, {
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds"),
        "hpcbench_version": __version__, "git_commit": git_commit(), "config": json.dumps(config),
        "weights": json.dumps(WEIGHTS), "campaign_collected": collected}, documents)
    return scoring_id


def campaign_contention(h5_path: Path, skeletons: list | None = None) -> dict[str, dict[int, str]]:
    """Per submission path, its runs that shared a core with another step (score/contention.py);
    `skeletons`: the records as read already (store.read.skeletons_of an open store)."""
    found = record_skeletons(h5_path) if skeletons is None else skeletons
    spans = [sp for path, label, rec in found for sp in contention.spans_of(path, label, rec)]
    out: dict[str, dict[int, str]] = {}
    for (path, i), why in contention.contended(spans).items():
        out.setdefault(path, {})[i] = why
    return out


def score(h5_path: Path, scoring_id: str | None = None, judge: JudgeConfig | None = None,
          progress: JudgeProgress | None = None, evaluated: JudgeProgress | None = None,
          stats: Settings | None = None, options: dict[str, str] | None = None) -> tuple[str, list[SubmissionScore]]:
    """Score campaign.h5 into a new scores/<id>.h5; `evaluated(done, total)` follows the
    submissions through the deterministic evaluators, `progress(answered, total)` the judge calls.
    The scoring holds the leaderboard's uncertainty drawn with `stats` (seed, resamples);
    `options` reach the evaluators (time_metric: ratio | absolute)."""
    h5_path = Path(h5_path)
    sid = scoring_id or new_scoring_id()
    if scoring_path(h5_path.parent, sid).exists():  # before any judge call is paid for
        raise FileExistsError(f"{h5_path.parent}: scoring {sid!r} exists; scorings are never overwritten")
    # -log_view events: judge evidence only
    stored, batches = read_campaign_batches(h5_path, events=judge is not None)
    inputs = CampaignInputs(contended=campaign_contention(h5_path), scaling=scaling_points(h5_path.parent),
                            options=dict(options or {}))
    cache = JudgeCache(h5_path) if judge is not None else None
    if judge is not None:  # the campaign's own key for the boundaries that fence the agent's text off
        from hpcbench.judge.boundary import campaign_key

        judge = dataclasses.replace(judge, boundary_key=campaign_key(h5_path.parent))
    judge_stats: dict = {}
    total = int(stored.attrs.get("live_submissions", 0))
    scores = score_campaign(stored, judge, cache, judge_stats, batches=batches, progress=progress,
                            evaluated=(lambda n: evaluated(n, total)) if evaluated else None, inputs=inputs)
    evs = all_evaluators()
    settings = stats or Settings()
    config = {"evaluators": [e.name for e in evs], "options": dict(options or {}),
              "prompt_versions": {e.name: e.prompt_version for e in evs if hasattr(e, "prompt_version")},
              "judge": judge.describe() if judge else None, "judge_stats": judge_stats, "stats": settings.describe()}
    doc = uncertainty.analyse_scores(scores, settings, sid)
    write_scores(h5_path, sid, scores, config, str(stored.attrs.get("collected", "")),
                 documents={uncertainty.DOCUMENT: json.dumps(doc)})
    return sid, scores
