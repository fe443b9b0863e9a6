"""The report's data: one scoring of a campaign.h5 read into rows (every
number with the HDF5 path it came from), and the tables built from them."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

CATEGORIES = ["correctness", "performance", "code", "appropriateness", "library"]
STAGES = ["generated", "compiled", "ran", "passed checks"]


def latest_scoring(f: h5py.File) -> str:
    if "scores" not in f or not len(f["scores"]):
        raise LookupError(f"{f.filename}: no scoring yet; run `hpcbench score {Path(f.filename).parent}`")
    # by creation time, not by name: `--scoring-id` names need not sort like timestamps
    return max(f["scores"].keys(), key=lambda k: (str(f["scores"][k].attrs.get("created", "")), k))


def _nan(x: object) -> float | None:
    if x is None:
        return None
    v = float(x)  # type: ignore[arg-type]
    return None if math.isnan(v) else v


def _s(x: object) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


@dataclass
class Report:
    h5_path: Path
    sid: str
    rows: list[dict]
    provenance: dict
    weights: dict[str, float]
    scoring: dict = field(default_factory=dict)

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


def _stage_and_reason(a: h5py.AttributeManager, evs: dict, sub: h5py.Group | None) -> tuple[str, str]:
    """How far an attempt got and why it stopped, from its scores and its record."""
    status = _s(a.get("status", ""))
    if a.get("refused", False):
        return "refused", "refused"
    if status == "generation failed":
        # the taxonomy counts failed generations by kind (no_code, truncated, timeout, ...)
        kind = _s(sub.attrs.get("generation_error_kind", "")) if sub is not None else ""
        return "not generated", f"generation failed: {kind}" if kind else "generation failed"
    if status in ("not run", "skipped") or (sub is not None and "record" not in sub):
        return "generated", status or "not run"
    failed = _s(a.get("failed_gate", ""))
    if failed == "compilation":
        return "generated", "build failed"
    if failed == "execution":
        why, text = "nonzero exit", evs.get("execution", {}).get("rationale", "").lower()
        runs = [r.attrs for r in sub["runs"].values() if _s(r.attrs.get("kind", "")) == "instrumented"] \
            if sub is not None and "runs" in sub else []
        codes = [int(r.get("exit_code", 0)) for r in runs]
        if any(bool(r.get("timed_out", False)) for r in runs) or "timed out" in text or "timeout" in text:
            why = "timeout"
        elif any(int(r.get("signal", 0) or 0) for r in runs) or any(c > 128 for c in codes) or \
                "segmentation" in text or "signal" in text:
            why = "crash (signal)"
        elif any(_s(r.get("stopped_reason", "")) for r in runs):
            why = next(_s(r.get("stopped_reason", "")) for r in runs if _s(r.get("stopped_reason", "")))
        elif "petsc:" in text or "petsc error" in text:
            why = "PETSc error"
        return "compiled", why
    if failed == "memory_safety":
        return "ran", "memory error or leak"
    if failed == "api_usage":
        return "ran", "PETSc API misuse"
    if failed:
        return "ran", f"gate {failed}"
    acc = evs.get("numerical_accuracy", {})
    if acc.get("status") != "scored":
        return "ran", "accuracy unscored"
    if (acc.get("score") or 0.0) < 0.999:
        return "ran", "wrong answer"
    return "passed checks", "complete"


def _isolation(sub: h5py.Group | None) -> list[str]:
    """Sandbox levels the attempt's build and runs recorded ("none" where a record has none)."""
    if sub is None or "record" not in sub:
        return []
    try:
        rec = json.loads(sub["record"][()])
    except (ValueError, TypeError):
        return []
    steps = ([rec["build"]] if rec.get("build") else []) + list(rec.get("runs") or [])
    return sorted({(s.get("isolation") or "none") for s in steps})


def _generation(sub: h5py.Group | None) -> dict:
    if sub is None or "submission_json" not in sub.attrs:
        return {}
    gen = json.loads(sub.attrs["submission_json"]).get("generation") or {}
    return {k: gen.get(k) for k in ("prompt_tokens", "completion_tokens", "cost_usd", "latency_s", "turns")}


def load(h5_path: Path, scoring_id: str | None = None) -> Report:
    h5_path = Path(h5_path)
    rows: list[dict] = []
    with h5py.File(h5_path, "r") as f:
        sid = scoring_id or latest_scoring(f)
        if "scores" not in f or sid not in f["scores"]:
            raise LookupError(f"{h5_path}: no scoring {sid!r}; have {sorted(f.get('scores', {}).keys())}")
        root = f["scores"][sid]
        weights = json.loads(root.attrs.get("weights", "{}") or "{}")
        scoring = {"created": _s(root.attrs.get("created", "")), "config": json.loads(root.attrs.get("config", "{}"))}
        prov = {k: _s(f.attrs[k]) for k in ("site", "petsc_version", "mpi", "hpcbench_version", "git_commit",
                                            "campaign_id", "collected") if k in f.attrs}
        for agent, ag in root.items():
            for prob, pg in ag.items():
                for att, g in pg.items():
                    a = g.attrs
                    spath = _s(a.get("submission", ""))
                    sub = f[spath] if spath and spath in f else None
                    build_s = float(sub["build"].attrs["wall_s"]) if sub is not None and "build" in sub else None
                    run_s = float(sum(r.attrs["wall_s"] for r in sub["runs"].values())) \
                        if sub is not None and "runs" in sub else None
                    evs = {}
                    judge = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}
                    for n, e in (g["evaluators"].items() if "evaluators" in g else []):
                        evs[n] = {"score": _nan(e.attrs["score"]), "confidence": float(e.attrs["confidence"]),
                                  "status": _s(e.attrs["status"]), "rationale": _s(e.attrs["rationale"]),
                                  "method": _s(e.attrs.get("method", "")), "category": _s(e.attrs.get("category", "")),
                                  "source": f"{g.name}/evaluators/{n}"}
                        for k in judge:
                            judge[k] += float(e.attrs.get(k, 0) or 0)
                    stage, reason = _stage_and_reason(a, evs, sub)
                    src = f"/scores/{sid}/{agent}/{prob}/{att}"
                    rows.append({
                        "agent": agent, "problem": prob, "attempt": att,
                        "status": _s(a.get("status", "")), "refused": bool(a.get("refused", False)),
                        "refusal_set": bool(a.get("refusal_set", False)),
                        "gates_passed": bool(a["gates_passed"]), "failed_gate": _s(a["failed_gate"]),
                        "composite": _nan(a["composite"]), "tier": _s(a["tier"]), "partial": bool(a["partial"]),
                        "left_out": json.loads(a["left_out"]), "categories": json.loads(a["categories"]),
                        "unscored": json.loads(a.get("unscored", "[]")),
                        "build_s": build_s, "run_s": run_s, "evaluators": evs,
                        "stage": stage, "stop_reason": reason,
                        "generation": _generation(sub), "judge_cost": judge, "isolation": _isolation(sub),
                        "source": src, "submission": spath, "explain": f"hpcbench explain {h5_path.parent} {src}",
                        "why": evs.get(_s(a["failed_gate"]), {}).get("rationale", "") if a["failed_gate"] else "",
                    })
    rows.sort(key=lambda r: (r["agent"], r["problem"], r["attempt"]))
    return Report(h5_path, sid, rows, prov, weights, scoring)


def submission_rows(h5_path: Path, scoring_id: str | None = None) -> tuple[str, list[dict]]:
    rep = load(h5_path, scoring_id)
    return rep.sid, rep.rows


# ----------------------------------------------------------------------------- tables


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def leaderboard(rep: Report) -> list[dict]:
    """One row per agent over its scored attempts; a failed gate counts as its 0."""
    out = []
    for agent in sorted({r["agent"] for r in rep.scored}):
        mine = [r for r in rep.scored if r["agent"] == agent]
        comps = [r["composite"] for r in mine if r["composite"] is not None]
        row = {"agent": agent, "submissions": len(mine), "composite_mean": _mean(comps),
               "composite_std": statistics.stdev(comps) if len(comps) > 1 else None,
               "composite_min": min(comps) if comps else None, "composite_max": max(comps) if comps else None,
               "gate_pass_rate": sum(r["gates_passed"] for r in mine) / len(mine),
               "partial": sum(r["partial"] for r in mine),
               "left_out": sorted({c for r in mine if r["partial"] for c in r["left_out"]}),
               "source": f"/scores/{rep.sid}/{agent}", "explain": rep.explain(f"/scores/{rep.sid}/{agent}")}
        for c in rep.categories:
            vals = [r["categories"].get(c) for r in mine]
            row[c] = _mean([v for v in vals if v is not None])
        out.append(row)
    return sorted(out, key=lambda r: -(r["composite_mean"] if r["composite_mean"] is not None else -1))


def per_problem(rep: Report) -> tuple[list[str], list[str], dict[tuple[str, str], dict]]:
    agents = sorted({r["agent"] for r in rep.scored})
    problems = sorted({r["problem"] for r in rep.scored})
    cells = {}
    for a in agents:
        for p in problems:
            mine = [r for r in rep.scored if r["agent"] == a and r["problem"] == p]
            if not mine:
                continue
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

def _fmt(x: object, nd: int = 1) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "—"
    return f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def _comp(x: float | None, partial: bool) -> str:
    return _fmt(x) + ("*" if partial and x is not None else "")
