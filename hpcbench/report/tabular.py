"""The machine-readable reports: JSON and CSV."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from hpcbench.report import calibration
from hpcbench.report.data import STAGES, costs, leaderboard, load, per_problem, reached, refusals, taxonomy
from hpcbench.score import agreement


def to_json(h5_path: Path, scoring_id: str | None = None) -> str:
    rep = load(h5_path, scoring_id)
    agents, problems, cells = per_problem(rep)
    stages, reasons = taxonomy(rep)
    other = agreement.partner(h5_path, rep.sid)
    return json.dumps({
        "scoring_id": rep.sid, "campaign": rep.campaign, "provenance": rep.provenance, "weights": rep.weights,
        "errors": rep.errors, "leaderboard": leaderboard(rep),
        "per_problem": [{"agent": a, "problem": p, **c} for (a, p), c in sorted(cells.items())],
        "taxonomy": {"stages": STAGES, "reached": {a: {s: reached(sc, s) for s in STAGES}
                                                   for a, sc in sorted(stages.items())},
                     "stage_counts": stages, "stop_reasons": reasons},
        "costs": costs(rep), "refusals": refusals(rep), "submissions": rep.rows,
        "agreement": agreement.agreement(h5_path, rep.sid, other) if other else None,
        "judge_calibration": calibration.section(rep),
    }, indent=1, default=str)


def to_csv(h5_path: Path, scoring_id: str | None = None) -> str:
    rep = load(h5_path, scoring_id)
    evs = sorted({n for r in rep.rows for n in r["evaluators"]})
    head = ["agent", "problem", "attempt", "status", "refused", "refusal_set", "gates_passed", "failed_gate",
            "composite", "tier", "partial", "left_out", "stage", "stop_reason", "build_s", "run_s",
            *[f"cat_{c}" for c in rep.categories], *[f"ev_{n}" for n in evs],
            "prompt_tokens", "completion_tokens", "cost_usd", "judge_cost_usd", "source", "explain"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    for r in rep.rows:
        g = r["generation"]
        w.writerow([r["agent"], r["problem"], r["attempt"], r["status"], r["refused"], r["refusal_set"],
                    r["gates_passed"], r["failed_gate"], "" if r["composite"] is None else f"{r['composite']:.4f}",
                    r["tier"], r["partial"], ";".join(r["left_out"]), r["stage"], r["stop_reason"],
                    "" if r["build_s"] is None else f"{r['build_s']:.3f}",
                    "" if r["run_s"] is None else f"{r['run_s']:.3f}",
                    *["" if r["categories"].get(c) is None else f"{r['categories'][c]:.4f}" for c in rep.categories],
                    *["" if r["evaluators"].get(n, {}).get("score") is None else f"{r['evaluators'][n]['score']:.4f}"
                      for n in evs],
                    g.get("prompt_tokens") or 0, g.get("completion_tokens") or 0, g.get("cost_usd") or 0.0,
                    r["judge_cost"]["cost_usd"], r["source"], r["explain"]])
    return buf.getvalue()
