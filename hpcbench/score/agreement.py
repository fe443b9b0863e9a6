"""Agreement of two scorings of one campaign, per judged evaluator and per
composite: mean of each, mean and largest absolute difference, over the
submissions both scored (the paper's judge-robustness table). Composites are
compared where both scorings have judged results (not for a failed gate).

Two scorings by different judges see byte-identical prompts (both render from
the same campaign.h5); each scoring is a scores/<id>.h5 file), so their differences are the judges' alone."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hpcbench.store.scorings import Scoring, list_scorings, read_scoring, scoring_config


@dataclass
class Row:
    name: str  # evaluator name, or "composite"
    n: int  # submissions scored by both
    mean_a: float | None
    mean_b: float | None
    mean_abs_diff: float | None
    max_abs_diff: float | None
    only_one: int  # scored by one scoring only (unscored or missing in the other)


def judge_of(root: Path, sid: str) -> str:
    return ((scoring_config(root, sid).get("judge") or {}).get("model")) or ""


def _values(sc: Scoring) -> tuple[dict[str, dict[str, float | None]], dict[str, str]]:
    """{submission: {evaluator or 'composite': value}} and the judged evaluators' methods."""
    vals: dict[str, dict[str, float | None]] = {}
    judged: dict[str, str] = {}
    for r in sc.rows:
        row: dict[str, float | None] = {}
        any_judged = False
        for ev, e in r["evaluators"].items():
            ok = e["status"] == "scored"
            row[ev] = e["score"] if ok else None
            if e["method"] != "deterministic":
                judged[ev] = e["method"]
                any_judged = any_judged or ok
        # Only composites a judge contributed to: a failed gate is 0 for every judge and
        # would only dilute the differences.
        row["composite"] = r["composite"] if any_judged else None
        vals[f"{r['agent']}/{r['problem']}/{r['attempt']}"] = row
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
    root = Path(h5_path).parent
    sa, sb = read_scoring(root, a), read_scoring(root, b)
    va, ja = _values(sa)
    vb, jb = _values(sb)
    judges = [((s.config.get("judge") or {}).get("model")) or "" for s in (sa, sb)]
    keys = sorted(set(va) | set(vb))
    rows = []
    for ev in sorted(set(ja) | set(jb)):
        rows.append(_row(ev, [(va.get(k, {}).get(ev), vb.get(k, {}).get(ev)) for k in keys]))
    rows.append(_row("composite", [(va.get(k, {}).get("composite"), vb.get(k, {}).get("composite")) for k in keys]))
    return {"scoring_a": a, "scoring_b": b, "judge_a": judges[0], "judge_b": judges[1],
            "source": f"/scores/{a} vs /scores/{b}", "rows": [asdict(r) for r in rows]}


def partner(h5_path: Path, sid: str) -> str | None:
    """The latest scoring before `sid` (else after it) whose judge is another model than sid's."""
    root = Path(h5_path).parent
    have = list_scorings(root)
    if sid not in have:
        return None
    mine = judge_of(root, sid)
    if not mine:
        return None
    others = [s for s in sorted(have) if s != sid and judge_of(root, s) not in ("", mine)]
    before = [s for s in others if s < sid]
    return before[-1] if before else (others[-1] if others else None)


def _f(x: float | None, nd: int = 3) -> str:
    return "—" if x is None else f"{x:.{nd}f}"


def agreement_markdown_lines(h5_path: Path, sid: str, other: str | None = None) -> list[str]:
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
