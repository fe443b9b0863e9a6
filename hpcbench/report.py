"""Reports from a scored campaign.h5: one row per submission, a leaderboard per
agent, in markdown, CSV or JSON. Every number names the HDF5 path it came from."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from hpcbench import agreement

CATEGORIES = ["correctness", "performance", "code", "appropriateness", "library"]


def latest_scoring(f: h5py.File) -> str:
    if "scores" not in f or not len(f["scores"]):
        raise LookupError(f"{f.filename}: no scoring yet; run `hpcbench score {Path(f.filename).parent}`")
    # by creation time, not by name: `--scoring-id` names need not sort like timestamps
    return max(f["scores"].keys(), key=lambda k: (str(f["scores"][k].attrs.get("created", "")), k))


def _nan(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else float(x)


def submission_rows(h5_path: Path, scoring_id: str | None = None) -> tuple[str, list[dict]]:
    rows: list[dict] = []
    with h5py.File(h5_path, "r") as f:
        sid = scoring_id or latest_scoring(f)
        root = f["scores"][sid]
        for agent, ag in root.items():
            for prob, pg in ag.items():
                for att, g in pg.items():
                    a = g.attrs
                    sub = f[a["submission"]] if a["submission"] in f else None
                    build_s = float(sub["build"].attrs["wall_s"]) if sub is not None and "build" in sub else None
                    run_s = None
                    if sub is not None and "runs" in sub:
                        run_s = float(sum(r.attrs["wall_s"] for r in sub["runs"].values()))
                    cats = json.loads(a["categories"])
                    evs = {n: {"score": _nan(e.attrs["score"]), "confidence": float(e.attrs["confidence"]),
                               "status": e.attrs["status"], "rationale": e.attrs["rationale"]}
                           for n, e in g["evaluators"].items()} if "evaluators" in g else {}
                    rows.append({
                        "agent": agent, "problem": prob, "attempt": att,
                        "status": a["status"], "refused": bool(a["refused"]),
                        "gates_passed": bool(a["gates_passed"]), "failed_gate": a["failed_gate"],
                        "composite": _nan(a["composite"]), "tier": a["tier"], "partial": bool(a["partial"]),
                        "left_out": json.loads(a["left_out"]), "categories": cats,
                        "unscored": json.loads(a.get("unscored", "[]")),
                        "build_s": build_s, "run_s": run_s, "evaluators": evs,
                        "source": f"/scores/{sid}/{agent}/{prob}/{att}",
                        "why": evs.get(a["failed_gate"], {}).get("rationale", "") if a["failed_gate"] else "",
                    })
    return sid, rows


def leaderboard(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame([r for r in rows if not r["refused"]])
    if df.empty:
        return df
    for c in CATEGORIES:
        df[c] = [r["categories"].get(c) for r in rows if not r["refused"]]
    agg = df.groupby("agent").agg(
        composite_mean=("composite", "mean"), composite_std=("composite", "std"),
        gate_pass_rate=("gates_passed", "mean"), submissions=("problem", "count"),
        **{c: (c, "mean") for c in CATEGORIES},
    )
    return agg.sort_values("composite_mean", ascending=False).round(3)


def _fmt(x: object) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "—"
    return f"{x:.1f}" if isinstance(x, float) else str(x)


def markdown(h5_path: Path, scoring_id: str | None = None) -> str:
    sid, rows = submission_rows(h5_path, scoring_id)
    with h5py.File(h5_path, "r") as f:
        prov = {k: f.attrs[k] for k in ("site", "petsc_version", "mpi", "hpcbench_version", "git_commit")
                if k in f.attrs}
    lines = [f"# hpcbench report: {Path(h5_path).parent.name}", "",
             f"Scoring `{sid}` of `{h5_path}` (source of every number: `/scores/{sid}/...`).", ""]
    lines += [f"- {k}: {v}" for k, v in prov.items()] + [""]
    lb = leaderboard(rows)
    lines += ["## Leaderboard", ""]
    if not lb.empty:
        show = lb.reset_index()
        lines.append(show.to_markdown(index=False, floatfmt=".2f"))
    partial = sorted({c for r in rows if r["partial"] for c in r["left_out"]})
    if partial:
        lines += ["", f"Composites are partial: categories without evaluators yet or unscored: "
                      f"{', '.join(partial)} (left out, weights renormalised; never counted as zero)."]
    unscored = sorted({e for r in rows if r["partial"] for e in r.get("unscored", [])})
    if unscored:
        lines += ["", f"Unscored evaluators left out of some composites: {', '.join(unscored)} "
                      "(reasons in each submission's /scores/.../evaluators/<name> rationale)."]
    lines += ["", "## Submissions", "", "| agent | problem | attempt | gates | composite | tier | why |",
              "|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["problem"], r["agent"], r["attempt"])):
        gates = "refused" if r["refused"] else ("pass" if r["gates_passed"] else f"FAIL {r['failed_gate']}")
        why = r["why"].replace("|", "/").replace("\n", " ")[:140]
        lines.append(f"| {r['agent']} | {r['problem']} | {r['attempt']} | {gates} | {_fmt(r['composite'])} "
                     f"| {r['tier']} | {why} |")
    lines += agreement.markdown_lines(h5_path, sid)  # empty unless a scoring by another judge exists
    return "\n".join(lines) + "\n"


def to_json(h5_path: Path, scoring_id: str | None = None) -> str:
    sid, rows = submission_rows(h5_path, scoring_id)
    return json.dumps({"scoring_id": sid, "submissions": rows}, indent=1)


def to_csv(h5_path: Path, scoring_id: str | None = None) -> str:
    _, rows = submission_rows(h5_path, scoring_id)
    flat = []
    for r in rows:
        d = {k: v for k, v in r.items() if k not in ("categories", "evaluators", "left_out")}
        d.update({f"cat_{c}": r["categories"].get(c) for c in CATEGORIES})
        d.update({f"ev_{n}": e["score"] for n, e in r["evaluators"].items()})
        flat.append(d)
    return pd.DataFrame(flat).to_csv(index=False)


def render(h5_path: Path, fmt: str, scoring_id: str | None = None) -> str:
    return {"md": markdown, "json": to_json, "csv": to_csv}[fmt](h5_path, scoring_id)
