"""The report's data: one scoring (scores/<id>.h5) and the campaign's tables
read into rows (every number with the logical path it came from, which
`hpcbench explain` resolves), and the tables built from them."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hpcbench.evaluators.categories import CATEGORIES
from hpcbench.score import uncertainty
from hpcbench.score.verdict import FULL, passed_from_rows, tier
from hpcbench.store import layout, scorings
from hpcbench.store.read import Texts, live_submissions, open_store, strings

STAGES = ["generated", "compiled", "ran", "passed checks"]


_nan = layout.nan_to_none


_s = layout.text  # a string cell as h5py returns it


@dataclass
class Report:
    h5_path: Path
    sid: str
    rows: list[dict]
    provenance: dict
    weights: dict[str, float]
    scoring: dict = field(default_factory=dict)
    # Generations an infrastructure error kept from being made (campaign.json `errors`): not
    # attempts, on no leaderboard; listed so that a gap is never mistaken for a result.
    errors: list[dict] = field(default_factory=list)
    stats: dict = field(default_factory=dict)  # hpcbench.score.uncertainty: intervals, pairs, ranks, pass@k

    @property
    def campaign(self) -> str:
        return str(self.h5_path.parent)

    def explain(self, path: str) -> str:
        return f"hpcbench explain {self.campaign} {path}"

    @property
    def categories(self) -> list[str]:
        return list(self.weights) or CATEGORIES

    def unisolated(self) -> list[dict]:
        """Attempts built or run outside a sandbox (site `isolation: none`, or records
        from before the sandbox existed): their programs could read what they should not."""
        return [r for r in self.rows if r.get("isolation") and set(r["isolation"]) - {"bwrap", "apptainer"}]

    def isolation_warning(self) -> str:
        bad = self.unisolated()
        if not bad:
            return ""
        levels = sorted({lv for r in bad for lv in r["isolation"]} - {"bwrap", "apptainer"})
        return (f"Warning: {len(bad)} of {len(self.rows)} attempts were built or run without isolation "
                f"({', '.join(levels)}): their programs could read the hidden checks, other jobs' outputs and "
                f"keys, so their scores are not trustworthy (docs/security.md; source: each record's "
                f"`isolation`).")

    @property
    def scored(self) -> list[dict]:
        """Rows that count towards the composite: every solvable problem's attempt,
        a refusal of one included (at 0); the refusal set has its own column."""
        return [r for r in self.rows if not r["refusal_set"]]


# ----------------------------------------------------------------------------- reading


def _stage_and_reason(a: dict, evs: dict, sub: dict | None) -> tuple[str, str]:
    """How far an attempt got and why it stopped, from its scores and its record."""
    status = a.get("status", "")
    if a.get("refused", False):
        return "refused", "refused"
    if status == "generation failed":
        # the taxonomy counts failed generations by kind (no_code, truncated, timeout, ...)
        kind = sub["generation_error_kind"] if sub is not None else ""
        return "not generated", f"generation failed: {kind}" if kind else "generation failed"
    if status.startswith("no reference"):  # hpcbench.score.reference_status: the problem could not be scored
        return "not scored", status
    if status in ("not run", "skipped") or (sub is not None and not sub["has_record"]):
        return "generated", status or "not run"
    failed = a.get("failed_gate", "")
    if failed == "compilation":
        return "generated", "build failed"
    if failed == "execution":
        return "compiled", _execution_failure(evs, sub)
    if failed == "memory_safety":
        return "ran", "memory error or leak"
    if failed == "api_usage":
        return "ran", "PETSc API misuse"
    if failed:
        return "ran", f"gate {failed}"
    acc = evs.get("numerical_accuracy", {})
    if acc.get("status") != "scored":
        return "ran", "accuracy unscored"
    right = a["correct"] if a.get("correct") is not None else passed_from_rows(a["gates_passed"], evs)
    if (acc.get("score") or 0.0) < FULL:
        # numerical_accuracy names a failure at arguments drawn at planning as a held-out case
        held = "worst: held-out case" in acc.get("rationale", "")
        return "ran", "wrong answer" + (" (held-out case)" if held else "")
    if not right:  # full marks on what was checked, but a check had no reference value to compare with
        return "ran", "checks incomplete"
    return "passed checks", "complete"


def _execution_failure(evs: dict, sub: dict | None) -> str:
    """Why the execution gate failed: timeout, crash, the run's own stop reason, a PETSc error."""
    text = evs.get("execution", {}).get("rationale", "").lower()
    runs = [r for r in sub["runs"] if r["kind"] == "instrumented"] if sub is not None else []
    codes = [r["exit_code"] for r in runs]
    if any(r["timed_out"] for r in runs) or "timed out" in text or "timeout" in text:
        return "timeout"
    if any(r["signal"] for r in runs) or any(c > 128 for c in codes) or "segmentation" in text or "signal" in text:
        return "crash (signal)"
    if any(r["stopped_reason"] for r in runs):
        return next(r["stopped_reason"] for r in runs if r["stopped_reason"])
    if "petsc:" in text or "petsc error" in text:
        return "PETSc error"
    return "nonzero exit"


def _generation(submission_json: str) -> dict:
    gen = json.loads(submission_json).get("generation") or {} if submission_json else {}
    return {k: gen.get(k) for k in ("prompt_tokens", "completion_tokens", "cost_usd", "latency_s", "turns")}


def campaign_facts(h5_path: Path) -> tuple[dict, dict[str, dict]]:
    """(provenance, {logical submission path: facts}) from campaign.h5's tables."""
    with open_store(h5_path, "report") as f:
        prov: dict = {k: _s(f.attrs[k]) for k in ("site", "petsc_version", "mpi", "hpcbench_version", "git_commit",
                                            "campaign_id", "collected") if k in f.attrs}
        prov["errors"] = json.loads(_s(f["manifest"][()])).get("errors", []) if "manifest" in f else []
        subs = live_submissions(f)
        builds = f["builds"].fields(["wall_s"])[()]
        builds_iso = f["builds"].fields(["isolation"])[()]
        runs = f["runs"].fields(["kind", "exit_code", "signal", "timed_out", "stopped_reason", "wall_s",
                                 "isolation"])[()]
        codes = strings(f)
        texts = Texts(f)
        near = json.loads(_s(f["contamination"][()])) if "contamination" in f else {}
    prov["contamination"] = {k: near[k] for k in ("corpus", "threshold", "k", "method", "error") if k in near}
    out = {}
    for s in subs:
        rs, rn, bs, bn = int(s["runs_start"]), int(s["runs_n"]), int(s["builds_start"]), int(s["builds_n"])
        mine = runs[rs:rs + rn]
        path = f"/submissions/{_s(s['agent'])}/{_s(s['problem'])}/{_s(s['attempt'])}"
        out[path] = {
            "has_record": bool(s["record_len"]), "generation_error_kind": _s(s["generation_error_kind"]),
            "build_s": float(builds[bs]["wall_s"]) if bn else None,
            "run_s": float(mine["wall_s"].sum()) if s["record_len"] else None,
            "runs": [{"kind": codes[r["kind"]], "exit_code": int(r["exit_code"]), "signal": int(r["signal"]),
                      "timed_out": bool(r["timed_out"]), "stopped_reason": codes[r["stopped_reason"]]}
                     for r in mine],
            "generation": _generation(texts.get(s["submission_json_off"], s["submission_json_len"])),
            # sandbox levels of the build and runs ("none" where a record predates the sandbox)
            "isolation": sorted({codes[x["isolation"]] or "none" for x in [*builds_iso[bs:bs + bn], *mine]}),
            # nearest PETSc tutorial or test (/contamination, measured at planning), or {}
            "contamination": near.get("programs", {}).get(path.removeprefix("/submissions/"), {}),
        }
    return prov, out


def load_report(h5_path: Path, scoring_id: str | None = None) -> Report:
    h5_path = Path(h5_path)
    sc = scorings.read_scoring(h5_path.parent, scoring_id)
    prov, facts = campaign_facts(h5_path)
    rows: list[dict] = []
    for r in sc.rows:
        sub = facts.get(r["submission"])
        keys = ("score", "confidence", "status", "rationale", "method", "category", "stage", "source")
        evs = {n: {k: e[k] for k in keys} for n, e in r["evaluators"].items()}
        judge = {k: float(sum(e[k] for e in r["evaluators"].values()))
                 for k in ("prompt_tokens", "completion_tokens", "cost_usd")}
        stage, reason = _stage_and_reason(r, evs, sub)
        rows.append({
            **{k: r[k] for k in ("agent", "problem", "attempt", "status", "refused", "refusal_set", "gates_passed",
                                 "failed_gate", "composite", "partial", "left_out", "categories", "unscored")},
            # derived again, not read: a scoring written before tiers required every hidden check
            # passed stored GOLD for wrong answers
            "tier": tier(r["composite"], not r["failed_gate"] and stage == "passed checks"),
            "build_s": sub["build_s"] if sub else None, "run_s": sub["run_s"] if sub else None, "evaluators": evs,
            "stage": stage, "stop_reason": reason, "generation": sub["generation"] if sub else {},
            "judge_cost": judge, "isolation": sub["isolation"] if sub else [],
            "contamination": sub["contamination"] if sub else {},
            "source": r["source"], "submission": r["submission"],
            "explain": f"hpcbench explain {h5_path.parent} {r['source']}",
            "why": evs.get(r["failed_gate"], {}).get("rationale", "") if r["failed_gate"] else "",
        })
    rows.sort(key=lambda r: (r["agent"], r["problem"], r["attempt"]))
    scoring = {"created": sc.attrs.get("created", ""), "config": sc.config,
               "scorer_version": sc.attrs.get("hpcbench_version", ""),
               "scorer_git_commit": sc.attrs.get("git_commit", "")}
    errors = prov.pop("errors")
    return Report(h5_path, sc.sid, rows, prov, sc.weights, scoring, errors,
                  uncertainty.load_uncertainty(h5_path.parent, sc.sid, sc.rows))


def near_copies(rep: Report) -> list[dict]:
    """Submissions at or above the contamination threshold: near-copies of a PETSc example."""
    return [r for r in rep.rows if r["contamination"].get("near_copy") and r["agent"] != "reference"]


def submission_rows(h5_path: Path, scoring_id: str | None = None) -> tuple[str, list[dict]]:
    rep = load_report(h5_path, scoring_id)
    return rep.sid, rep.rows


# ----------------------------------------------------------------------------- tables


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


# A plot shows at most this many agents (the leaderboard's first): 549 bars per category or a
# 250-inch-tall interval chart is neither readable nor cheap (27 s of a 2000-submission HTML
# report). Every agent stays in the tables.
PLOT_AGENTS = 30


def plotted(rows: list[dict]) -> tuple[list[dict], str]:
    """The leaderboard rows a plot shows, and what its title says about those left out."""
    if len(rows) <= PLOT_AGENTS:
        return rows, ""
    return rows[:PLOT_AGENTS], f"; the first {PLOT_AGENTS} of {len(rows)} agents (all in the tables)"


def leaderboard(rep: Report) -> list[dict]:
    """One row per agent over its scored attempts (a failed gate counts as its 0): the mean
    over the problems every agent attempted of each problem's mean, its interval, rank range
    and pass@1 (rep.stats; `composite_mean_own`: over every problem the agent attempted)."""
    out = []
    by_agent: dict[str, list[dict]] = {}
    for r in rep.scored:  # grouped once: campaigns have thousands of agents x attempts
        by_agent.setdefault(r["agent"], []).append(r)
    for agent, mine in sorted(by_agent.items()):
        comps = [r["composite"] for r in mine if r["composite"] is not None]
        st = rep.stats.get("agents", {}).get(agent, {})
        comp_st = st.get("composite") or {}
        # the mean over the problems every agent attempted (rep.stats), the one the order and the
        # paired differences rest on; over its own problems only where no statistics were drawn
        row = {"agent": agent, "submissions": len(mine),
               "composite_mean": comp_st["estimate"] if "estimate" in comp_st else _problem_mean(mine, "composite"),
               "composite_mean_own": _problem_mean(mine, "composite"),
               "composite_std": statistics.stdev(comps) if len(comps) > 1 else None,
               "composite_min": min(comps) if comps else None, "composite_max": max(comps) if comps else None,
               "gate_pass_rate": sum(r["gates_passed"] for r in mine) / len(mine),
               "partial": sum(r["partial"] for r in mine),
               "left_out": sorted({c for r in mine if r["partial"] for c in r["left_out"]}),
               "source": f"/scores/{rep.sid}/{agent}", "explain": rep.explain(f"/scores/{rep.sid}/{agent}"),
               **_uncertainty_fields(st)}
        cat_st = st.get("categories") or {}
        for c in rep.categories:
            row[c] = cat_st[c]["estimate"] if c in cat_st else _problem_mean(mine, c)
        out.append(row)
    return sorted(out, key=lambda r: (-(r["composite_mean"] if r["composite_mean"] is not None else -1), r["agent"]))


def _problem_mean(rows: list[dict], what: str) -> float | None:
    """Mean over problems of each problem's mean over its attempts (each problem counts once;
    the interval's estimate, hpcbench.stats.intervals); None where nothing is scored."""
    per: dict[str, list[float]] = {}
    for r in rows:
        v = r["composite"] if what == "composite" else r["categories"].get(what)
        if v is not None:
            per.setdefault(r["problem"], []).append(v)
    return _mean([statistics.fmean(v) for v in per.values()])


def _uncertainty_fields(st: dict) -> dict:
    """The leaderboard's columns from an agent's entry in rep.stats (docs/report.md): the rank
    range, the composite's interval and pass@1 as plain fields, the rest under `uncertainty`."""
    comp, passed, rank = st.get("composite") or {}, st.get("pass") or {}, st.get("rank") or {}
    src = st.get("source")
    return {"rank": rank.get("label"), "composite_ci_low": comp.get("low"), "composite_ci_high": comp.get("high"),
            "pass_at_1": passed.get("estimate"),
            "uncertainty": {"scope": comp.get("scope"), "note": comp.get("note", ""),
                            "judge_share": comp.get("judge_share"), "rank_best": rank.get("best"),
                            "rank_worst": rank.get("worst"), "pass_at_1_ci": [passed.get("low"), passed.get("high")],
                            "categories": {c: [v.get("low"), v.get("high")]
                                           for c, v in (st.get("categories") or {}).items()},
                            "interval_source": src, "rank_source": st.get("rank_source"),
                            "pass_source": f"{src}/pass" if src else None}}


def per_problem(rep: Report) -> tuple[list[str], list[str], dict[tuple[str, str], dict]]:
    scored = rep.scored
    agents = sorted({r["agent"] for r in scored})
    problems = sorted({r["problem"] for r in scored})
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in scored:
        groups.setdefault((r["agent"], r["problem"]), []).append(r)
    cells = {}
    for (a, p), mine in sorted(groups.items()):
        comps = [r["composite"] for r in mine if r["composite"] is not None]
        cells[(a, p)] = {"mean": _mean(comps), "n": len(mine), "partial": any(r["partial"] for r in mine),
                         "passed": sum(r["gates_passed"] for r in mine),
                         "source": f"/scores/{rep.sid}/{a}/{p}"}
    return agents, problems, cells


def taxonomy(rep: Report) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """(stage counts per agent, stop-reason counts per agent), refusals included."""
    stages: dict[str, dict[str, int]] = {}
    reasons: dict[str, dict[str, int]] = {}
    for r in rep.rows:
        if r["refusal_set"]:
            continue  # the refusal set is judged by the refusal evaluator, not by how far a program got
        stages.setdefault(r["agent"], {})
        reasons.setdefault(r["agent"], {})
        stages[r["agent"]][r["stage"]] = stages[r["agent"]].get(r["stage"], 0) + 1
        reasons[r["agent"]][r["stop_reason"]] = reasons[r["agent"]].get(r["stop_reason"], 0) + 1
    return stages, reasons


def reached(stage_counts: dict[str, int], stage: str) -> int:
    """Attempts that got at least as far as `stage` (the axes are cumulative)."""
    if stage not in STAGES:
        return stage_counts.get(stage, 0)
    i = STAGES.index(stage)
    return sum(n for s, n in stage_counts.items() if s in STAGES and STAGES.index(s) >= i)


def refusals(rep: Report) -> list[dict]:
    """Problems whose right answer is to decline, and agents' refusals of solvable ones."""
    out = []
    for r in rep.rows:
        if not (r["refusal_set"] or r["refused"]):
            continue
        ev = next((dict(e, name=n) for n, e in r["evaluators"].items() if e.get("category") == "refusal"), None)
        out.append({"agent": r["agent"], "problem": r["problem"], "attempt": r["attempt"],
                    "should_refuse": r["refusal_set"], "refused": r["refused"],
                    "evaluator": ev["name"] if ev else "", "score": ev["score"] if ev else None,
                    "rationale": ev["rationale"] if ev else "",
                    "source": ev["source"] if ev else r["source"]})
    return out


def injections(rep: Report) -> list[dict]:
    """Attempts whose text addresses the judges (the prompt_injection evaluator's findings)."""
    out = []
    for r in rep.rows:
        ev = r["evaluators"].get("prompt_injection")
        if ev and ev["status"] == "scored" and (ev["score"] or 0.0) < 1.0:
            out.append({"agent": r["agent"], "problem": r["problem"], "attempt": r["attempt"],
                        "findings": ev["rationale"], "source": ev["source"]})
    return out


def left_out_by_problem(rep: Report) -> dict[str, dict[str, str]]:
    """Per problem, the evaluators left out of every composite of it, and why (scoring.composite_set)."""
    out: dict[str, dict[str, str]] = {}
    for r in rep.scored:
        for name in r.get("unscored") or []:
            ev = r["evaluators"].get(name, {})
            why = out.setdefault(r["problem"], {}).setdefault(name, "")
            if not why and ev.get("status") == "unscored":  # the reason of a submission it was unscored for
                out[r["problem"]][name] = ev.get("rationale", "")
    return out


def costs(rep: Report) -> list[dict]:
    out = []
    for r in rep.rows:
        g, j = r["generation"], r["judge_cost"]
        out.append({"agent": r["agent"], "problem": r["problem"], "attempt": r["attempt"],
                    "prompt_tokens": g.get("prompt_tokens") or 0, "completion_tokens": g.get("completion_tokens") or 0,
                    "cost_usd": g.get("cost_usd") or 0.0, "latency_s": g.get("latency_s") or 0.0,
                    "turns": g.get("turns") or 0, "judge_tokens": int(j["prompt_tokens"] + j["completion_tokens"]),
                    "judge_cost_usd": j["cost_usd"],
                    "source": f"{r['submission']}@submission_json.generation",
                    "judge_source": f"{r['source']}/evaluators/*@cost_usd"})
    return out

def fmt(x: object, nd: int = 1) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "—"
    return f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def fmt_comp(x: float | None, partial: bool) -> str:
    return fmt(x) + ("*" if partial and x is not None else "")
