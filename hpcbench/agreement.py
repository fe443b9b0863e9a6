"""Agreement of two scorings of one campaign, per judged evaluator and per
composite: mean of each, mean and largest absolute difference, over the
submissions both scored (the paper's judge-robustness table). Composites are
compared where both scorings have judged results (not for a failed gate).

Two scorings by different judges see byte-identical prompts (both render from
the same campaign.h5), so their differences are the judges' alone."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import h5py
import numpy as np


@dataclass
class Row:
    name: str  # evaluator name, or "composite"
    n: int  # submissions scored by both
    mean_a: float | None
    mean_b: float | None
    mean_abs_diff: float | None
    max_abs_diff: float | None
    only_one: int  # scored by one scoring only (unscored or missing in the other)


def _num(x: object) -> float | None:
    v = float(x)  # type: ignore[arg-type]
    return None if np.isnan(v) else v


def judge_of(f: h5py.File, sid: str) -> str:
    cfg = json.loads(f["scores"][sid].attrs.get("config", "{}") or "{}")
    return ((cfg.get("judge") or {}).get("model")) or ""


def _values(g: h5py.Group) -> tuple[dict[str, dict[str, float | None]], dict[str, str]]:
    """{submission: {evaluator or 'composite': value}} and the judged evaluators' methods."""
    vals: dict[str, dict[str, float | None]] = {}
    judged: dict[str, str] = {}

    def visit(name: str, obj: object) -> None:
        if isinstance(obj, h5py.Group) and "composite" in obj.attrs:
            row: dict[str, float | None] = {}
            any_judged = False
            for ev, eg in (obj["evaluators"].items() if "evaluators" in obj else ()):
                ok = eg.attrs["status"] == "scored"
                row[ev] = _num(eg.attrs["score"]) if ok else None
                if eg.attrs["method"] != "deterministic":
                    judged[ev] = str(eg.attrs["method"])
                    any_judged = any_judged or ok
            # Only composites a judge contributed to: a failed gate is 0 for every judge and
            # would only dilute the differences.
            row["composite"] = _num(obj.attrs["composite"]) if any_judged else None
            vals[name] = row

    g.visititems(visit)
    return vals, judged


def _row(name: str, pairs: list[tuple[float | None, float | None]]) -> Row:
    both = [(a, b) for a, b in pairs if a is not None and b is not None]
    only = sum((a is None) != (b is None) for a, b in pairs)
    if not both:
        return Row(name, 0, None, None, None, None, only)
    d = [abs(a - b) for a, b in both]
    return Row(name, len(both), float(np.mean([a for a, _ in both])), float(np.mean([b for _, b in both])),
               float(np.mean(d)), float(max(d)), only)


def agreement(h5_path: Path, a: str, b: str) -> dict:
    with h5py.File(h5_path, "r") as f:
        for sid in (a, b):
            if "scores" not in f or sid not in f["scores"]:
                raise LookupError(f"{h5_path}: no scoring {sid!r} (have: {', '.join(f.get('scores', {}))})")
        va, ja = _values(f["scores"][a])
        vb, jb = _values(f["scores"][b])
        judges = (judge_of(f, a), judge_of(f, b))
    keys = sorted(set(va) | set(vb))
    rows = []
    for ev in sorted(set(ja) | set(jb)):
        rows.append(_row(ev, [(va.get(k, {}).get(ev), vb.get(k, {}).get(ev)) for k in keys]))
    rows.append(_row("composite", [(va.get(k, {}).get("composite"), vb.get(k, {}).get("composite")) for k in keys]))
    return {"scoring_a": a, "scoring_b": b, "judge_a": judges[0], "judge_b": judges[1],
            "source": f"/scores/{a} vs /scores/{b}", "rows": [asdict(r) for r in rows]}


def partner(h5_path: Path, sid: str) -> str | None:
    """The latest scoring before `sid` (else after it) whose judge is another model than sid's."""
    with h5py.File(h5_path, "r") as f:
        if "scores" not in f or sid not in f["scores"]:
            return None
        mine = judge_of(f, sid)
        if not mine:
            return None
        others = [s for s in sorted(f["scores"]) if s != sid and judge_of(f, s) not in ("", mine)]
    before = [s for s in others if s < sid]
    return before[-1] if before else (others[-1] if others else None)


def _f(x: float | None, nd: int = 3) -> str:
    return "—" if x is None else f"{x:.{nd}f}"


def markdown_lines(h5_path: Path, sid: str, other: str | None = None) -> list[str]:
    """The report's judge-agreement section; empty when there is no second judge to compare."""
    other = other or partner(h5_path, sid)
    if other is None:
        return []
    ag = agreement(h5_path, sid, other)
    lines = ["", "## Judge agreement", "",
             f"`{sid}` (judge `{ag['judge_a']}`) vs `{other}` (judge `{ag['judge_b']}`), on byte-identical "
             f"prompts; evaluator scores in [0, 1], composites in [0, 100]. Source: `{ag['source']}`; "
             f"re-derive with `hpcbench agreement {Path(h5_path).parent} --scoring {sid} --against {other}`.", "",
             "| evaluator | n | mean A | mean B | mean abs diff | max abs diff | scored by one only |",
             "|---|---|---|---|---|---|---|"]
    for r in ag["rows"]:
        nd = 1 if r["name"] == "composite" else 3
        lines.append(f"| {r['name']} | {r['n']} | {_f(r['mean_a'], nd)} | {_f(r['mean_b'], nd)} | "
                     f"{_f(r['mean_abs_diff'], nd)} | {_f(r['max_abs_diff'], nd)} | {r['only_one']} |")
    return lines
