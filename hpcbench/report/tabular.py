"""The machine-readable reports: JSON and CSV."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from hpcbench.errors import HpcbenchError
from hpcbench.report import calibration
from hpcbench.report.data import STAGES, costs, leaderboard, load_report, per_problem, reached, refusals, taxonomy
from hpcbench.score import agreement


def to_json(h5_path: Path, scoring_id: str | None = None) -> str:
    rep = load_report(h5_path, scoring_id)
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
        "uncertainty": rep.stats,  # docs/report.md: intervals, pairs, ranks, pass@k, power
        "judge_calibration": calibration.section(rep),
    }, indent=1, default=str)


def flat_rows(rep) -> tuple[list[str], list[list]]:
    """One row per submission, one column per field, category and evaluator score: what CSV
    and Parquet hold (typed values; `attempt` always a string, as in every other table)."""
    evs = sorted({n for r in rep.rows for n in r["evaluators"]})
    head = ["agent", "problem", "attempt", "status", "refused", "refusal_set", "gates_passed", "failed_gate",
            "composite", "tier", "partial", "left_out", "stage", "stop_reason", "build_s", "run_s",
            *[f"cat_{c}" for c in rep.categories], *[f"ev_{n}" for n in evs],
            "prompt_tokens", "completion_tokens", "cost_usd", "judge_cost_usd", "source", "explain"]
    rows = []
    for r in rep.rows:
        g = r["generation"]
        rows.append([r["agent"], r["problem"], str(r["attempt"]), r["status"], r["refused"], r["refusal_set"],
                     r["gates_passed"], r["failed_gate"], r["composite"], r["tier"], r["partial"],
                     ";".join(r["left_out"]), r["stage"], r["stop_reason"], r["build_s"], r["run_s"],
                     *[r["categories"].get(c) for c in rep.categories],
                     *[r["evaluators"].get(n, {}).get("score") for n in evs],
                     g.get("prompt_tokens") or 0, g.get("completion_tokens") or 0, g.get("cost_usd") or 0.0,
                     r["judge_cost"]["cost_usd"], r["source"], r["explain"]])
    return head, rows


_DIGITS = {"composite": 4, "build_s": 3, "run_s": 3}


def to_csv(h5_path: Path, scoring_id: str | None = None) -> str:
    rep = load_report(h5_path, scoring_id)
    head, rows = flat_rows(rep)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    for row in rows:
        w.writerow(["" if v is None else f"{v:.{_DIGITS.get(h, 4)}f}" if isinstance(v, float) and
                    (h in _DIGITS or h.startswith(("cat_", "ev_"))) else v for h, v in zip(head, row)])
    return buf.getvalue()


def to_jsonl(h5_path: Path, scoring_id: str | None = None) -> str:
    """JSON Lines: one submission (the JSON report's row, evaluators nested) per line."""
    rep = load_report(h5_path, scoring_id)
    return "".join(json.dumps(r, default=str) + "\n" for r in rep.rows)


def to_parquet(h5_path: Path, out: Path, scoring_id: str | None = None) -> None:
    """The CSV's columns, typed (numbers as numbers, NaN where none), in a Parquet file."""
    try:
        import pandas as pd
        import pyarrow  # noqa: F401  (pandas' parquet engine)
    except ImportError:
        raise HpcbenchError("--format parquet needs pyarrow: pip install 'hpcbench[parquet]'") from None
    head, rows = flat_rows(load_report(h5_path, scoring_id))
    df = pd.DataFrame(rows, columns=head).astype({"attempt": "string"})
    df.to_parquet(out, index=False)
