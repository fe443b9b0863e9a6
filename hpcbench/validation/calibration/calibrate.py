"""`hpcbench calibrate`: measure an LLM judge on programs with planted defects
(negative probing, after LLM4VV) before its scores are trusted.

The probe set (hpcbench.validation.calibration.probes) is built and run once as a small local campaign
(`<dir>/campaign-<version>`, reused by every later calibration), so a judge sees
the real build and run evidence. Each repeat is one ordinary scoring of that
campaign (`scoring.score`: same prompts, evidence, retries and judge cache as
`hpcbench score`); repeat k > 0 asks the judge again for the same prompts under
its own cache key (JudgeConfig.sample), so stability is measured on real answers
and a re-run of the whole calibration is answered from the cache. The labels
are joined to the answers only here, after the judge has spoken.

Results go to `<dir>/results/<model>--<time>.json`; `lookup` finds the latest
for a model, which scorings by that judge use to lower the confidence of
dimensions measured below the judge's threshold (hpcbench.score.judge_trust)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from hpcbench import __version__
from hpcbench.errors import HpcbenchError
from hpcbench.judge.calibrations import calibration_dir
from hpcbench.judge.config import JudgeConfig
from hpcbench.validation.calibration.metrics import FLAG_BELOW, Judgement, summarise
from hpcbench.validation.calibration.probes import DEFAULT_VERSION, ProbeSet, load_probes

DEFAULT_MIN_ACCURACY = 0.75


# ---------------------------------------------------------------- the probe campaign


def probe_campaign(root: Path, probes: ProbeSet, site_name: str = "local",
                   progress: Any = None) -> Path:
    """Build, run and collect the probe campaign under `root` with the calibrate profile (what a
    judge reads: a build, the runs, -log_view; nothing timed, no valgrind, no held-out cases).
    Resumable: jobs with records are not run again. Returns its campaign.h5."""
    from hpcbench import store
    from hpcbench.pipeline import Stages, execute
    from hpcbench.plan import PlanRequest
    from hpcbench.problem import load_problems
    from hpcbench.profile import CALIBRATION
    from hpcbench.site import load_site
    from hpcbench.submission import LoadedSubmission, load_tree, reference_submission
    from hpcbench.validation.campaigns import Progressed

    problems = load_problems(None, probes.problems)
    subs, rejected = load_tree(probes.submissions_dir, set(problems))
    if rejected:
        raise HpcbenchError(f"{probes.submissions_dir}: probe submissions rejected: "
                            + "; ".join(str(r) for r in rejected))
    for pid, bundle in problems.items():
        ref = reference_submission(bundle.folder, pid)
        if not isinstance(ref, LoadedSubmission):
            raise HpcbenchError(f"{bundle.folder}: the reference (a clean control) is unusable: {ref}")
        subs.append(ref)
    got = execute(CALIBRATION, Path(root), load_site(site_name), PlanRequest(problems, subs), Stages(score=False),
                  Progressed(progress))
    if got.planned.plan.skipped:
        raise HpcbenchError(f"{root}: probe problems this PETSc cannot run: "
                            + "; ".join(f"{s.problem}: {s.reason}" for s in got.planned.plan.skipped))
    store.collect(got.campaign)  # incremental: a resumed calibration's store is not rewritten
    return got.campaign.h5_path


# ---------------------------------------------------------------- one calibration


def _slug(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "judge"


def judge_prompt_versions() -> dict[str, str]:
    from hpcbench.evaluators.base import all_evaluators

    return {e.name: e.prompt_version for e in all_evaluators() if hasattr(e, "prompt_version")}


def samples_scoring(h5: Path, judge: JudgeConfig, repeats: int, stamp: dt.datetime) -> str:
    """The repeats as the judge samples of one more scoring (every answer is cached by then):
    its report says how much of each interval is the judge's noise (docs/report.md)."""
    from hpcbench.score import scoring

    if repeats < 2:
        return ""
    sid = f"calibrate-{_slug(judge.model)}-samples-{stamp.strftime('%Y%m%dT%H%M%S%fZ')}"
    scoring.score(h5, sid, dataclasses.replace(judge, sample=0, samples=repeats, calibration=None))
    return sid
def _judgement(probe: str, r: Any, repeat: int) -> Judgement:
    """The judge's own score: where scoring set a dimension to 0 because the injection scan
    fired (an injected probe), the judge's answer kept in the evidence is what is measured."""
    if "judge_score" in r.evidence:
        return Judgement(probe=probe, dimension=r.evaluator, repeat=repeat, score=r.evidence["judge_score"])
    if r.status == "scored" and not r.evidence.get("zero_reason"):
        return Judgement(probe=probe, dimension=r.evaluator, repeat=repeat, score=r.score)
    return Judgement(probe=probe, dimension=r.evaluator, repeat=repeat, score=None, why_unscored=r.rationale)


def run_calibration(judge: JudgeConfig, root: Path | None = None, repeats: int = 1, version: str = DEFAULT_VERSION,
        min_accuracy: float = DEFAULT_MIN_ACCURACY, flag_below: float = FLAG_BELOW, site_name: str = "local",
        progress: Any = None) -> tuple[dict[str, Any], Path]:
    """Calibrate `judge` on probe set `version`; returns the stored result and its file."""
    from hpcbench.score import scoring

    if repeats < 1:
        raise HpcbenchError(f"--repeats: {repeats} (must be at least 1)")
    root = calibration_dir(root)
    probes = load_probes(version)
    h5 = probe_campaign(root / f"campaign-{version}", probes, site_name, progress)
    stamp = dt.datetime.now(dt.timezone.utc)
    versions = judge_prompt_versions()
    judgements: list[Judgement] = []
    stats = {"tasks": 0, "cached": 0, "http_calls": 0, "unscored": 0, "new_cost_usd": 0.0}
    invalid: dict[str, str] = {}
    scorings = []
    by_key = {p.key: p for p in probes.probes}
    for k in range(repeats):
        cfg = dataclasses.replace(judge, sample=k, calibration=None)  # never lowered by an older calibration
        sid = f"calibrate-{_slug(judge.model)}-r{k}-{stamp.strftime('%Y%m%dT%H%M%S%fZ')}"
        sid, scores = scoring.score(h5, sid, cfg)
        scorings.append(sid)
        _stop_if_judge_errors(scores, sid)
        for sc in scores:
            probe = by_key.get((sc.agent, sc.problem, sc.attempt))
            if probe is None:
                continue
            if sc.failed_gate:  # measures nothing about a quality judge: said, never silently dropped
                invalid[probe.id] = f"failed gate {sc.failed_gate}"
                continue
            for r in sc.results:
                if r.evaluator in versions:
                    judgements.append(_judgement(probe.id, r, k))
        for sc in scores:  # what this repeat cost, from the judged results themselves
            for r in sc.results:
                if r.evaluator not in versions or r.method != "llm_judge":
                    continue
                stats["tasks"] += 1
                stats["cached"] += bool(r.evidence.get("cached"))
                stats["http_calls"] += int(r.evidence.get("http_calls", 0))
                stats["unscored"] += r.status != "scored"
                stats["new_cost_usd"] += 0.0 if r.evidence.get("cached") else r.cost_usd
    samples = samples_scoring(h5, judge, repeats, stamp)
    result = {
        "model": judge.model, "base_url": judge.base_url, "created": stamp.isoformat(timespec="seconds"),
        "hpcbench_version": __version__, "prompt_versions": versions,
        "probe_set": {"version": probes.version, "sha256": probes.sha256, "probes": len(probes.probes),
                      "controls": len(probes.controls)},
        "repeats": repeats, "flag_below": flag_below, "min_accuracy": min_accuracy,
        "campaign": str(h5), "scorings": scorings, "samples_scoring": samples, "judge_stats": stats,
        "invalid_probes": invalid, **summarise(probes, judgements, flag_below, min_accuracy),
    }
    out = root / "results" / f"{_slug(judge.model)}--{stamp.strftime('%Y%m%dT%H%M%S%fZ')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(out)
    return result, out


def _stop_if_judge_errors(scores: list, sid: str) -> None:
    """A judge that could not be asked (unreachable, a refused key, a quota) is an infrastructure
    error, as `score` treats it: nothing is stored that a later scoring would read as this judge's
    calibration. Answers already given stay cached: the next try does not ask them again."""
    from collections import Counter

    from hpcbench.pipeline.outcome import judge_errors

    errs = judge_errors(scores)
    if errs:
        asked = sum(1 for sc in scores for r in sc.results if r.method == "llm_judge")
        cause, n = Counter(r.rationale for r in errs).most_common(1)[0]
        raise HpcbenchError(f"calibrate: {len(errs)} of {asked} judgements not made (an infrastructure error, not "
                            f"the judge's answer; {n} of them: {cause}); no calibration stored (scoring {sid} keeps "
                            "what was answered, cached): fix the cause and calibrate again")


def calibration_markdown(doc: dict[str, Any], path: Path | None = None) -> str:
    from hpcbench.validation.calibration.metrics import table_lines

    head = [f"# Judge calibration: {doc['model']}", "",
            f"Probe set {doc['probe_set']['version']} ({doc['probe_set']['probes']} probes, "
            f"{doc['probe_set']['controls']} clean controls), {doc['repeats']} repeat(s); a score below "
            f"{doc['flag_below']:g} counts as a defect found; threshold (min accuracy) {doc['min_accuracy']:g}.", ""]
    st = doc["judge_stats"]
    tail = ["", f"Judge calls: {st['tasks']} judgements, {st['cached']} from cache, {st['http_calls']} HTTP calls, "
                f"{st['unscored']} unscored, new cost ${st['new_cost_usd']:.4f}."]
    if doc["invalid_probes"]:
        tail.append("Probes that failed a gate (left out, they measure nothing about a judge): "
                    + ", ".join(f"{k} ({v})" for k, v in sorted(doc["invalid_probes"].items())))
    if path is not None:
        tail.append(f"Stored: {path}")
    return "\n".join(head + table_lines(doc) + tail) + "\n"
