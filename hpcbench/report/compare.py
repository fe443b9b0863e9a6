"""`hpcbench compare`: two scorings side by side, cell by cell.

A and B are two campaigns (their latest or named scorings), two scorings of one campaign
(a re-score with a judge, a new hpcbench version), or two agents of one scoring (then a
cell is a problem, and each side the mean over that agent's attempts). Every cell says
what changed: the composite and its tier, which gate now fails or passes, whether the
hidden checks pass, and each evaluator whose score moved. New failures and new passes are
listed apart, since they are what a person comparing two runs looks for first."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpcbench.safetext import md_code
from hpcbench.score import uncertainty
from hpcbench.score.verdict import passed_from_rows, tier
from hpcbench.stats.intervals import Settings, mean_interval
from hpcbench.store.scorings import Scoring, read_scoring

EPS = 1e-9


@dataclass
class ComparisonSide:
    label: str
    cells: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict)


def passed(row: dict[str, Any]) -> bool:
    """Every gate and every hidden check passed (the condition a tier needs): the scoring's
    `correct`, or for a scoring written before it the same rule (hpcbench.score.verdict)."""
    if row.get("correct") is not None:
        return bool(row["correct"])
    return passed_from_rows(bool(row.get("gates_passed")), row.get("evaluators") or {})


def _cell(row: dict[str, Any]) -> dict[str, Any]:
    # the tier derived again by the rule: a scoring written before tiers required every hidden
    # check stored one for wrong answers
    return {"composite": row.get("composite"), "tier": tier(row.get("composite"), passed(row)),
            "failed_gate": row.get("failed_gate", ""),
            "passed": passed(row), "status": row.get("status", ""), "source": row.get("source", ""),
            "evaluators": {n: e.get("score") for n, e in (row.get("evaluators") or {}).items()}}


def side_of_scoring(sc: Scoring, label: str, agent: str | None = None) -> ComparisonSide:
    """Cells (agent, problem, attempt) of a scoring; with `agent`, (problem,) means of its attempts."""
    side = ComparisonSide(label)
    if agent is None:
        for r in sc.rows:
            if not r.get("refusal_set"):
                side.cells[(r["agent"], r["problem"], r["attempt"])] = _cell(r)
        return side
    by_problem: dict[str, list[dict[str, Any]]] = {}
    for r in sc.rows:
        if r["agent"] == agent and not r.get("refusal_set"):
            by_problem.setdefault(r["problem"], []).append(_cell(r))
    for pid, cells in by_problem.items():
        comps = [c["composite"] for c in cells if c["composite"] is not None]
        names = sorted({n for c in cells for n in c["evaluators"]})
        side.cells[(pid,)] = {
            "composite": statistics.fmean(comps) if comps else None, "attempts": len(cells),
            "passed": sum(c["passed"] for c in cells) / len(cells), "tier": "", "failed_gate": "", "status": "",
            "source": f"{cells[0]['source'].rsplit('/', 1)[0]}/*",
            "evaluators": {n: _mean([c["evaluators"].get(n) for c in cells]) for n in names}}
    if not side.cells:
        raise LookupError(f"agent {agent!r} has no scored submission in scoring {sc.sid}; "
                          f"agents: {', '.join(sorted({r['agent'] for r in sc.rows}))}")
    return side


def _mean(xs: list[float | None]) -> float | None:
    v = [x for x in xs if x is not None]
    return statistics.fmean(v) if v else None


def _moved(a: float | None, b: float | None) -> bool:
    return (a is None) != (b is None) or (a is not None and b is not None and abs(a - b) > EPS)


def diff(a: ComparisonSide, b: ComparisonSide) -> dict[str, Any]:
    keys = sorted(set(a.cells) | set(b.cells))
    cells: list[dict[str, Any]] = []
    new_failures: list[dict[str, Any]] = []
    new_passes: list[dict[str, Any]] = []
    for k in keys:
        ca, cb = a.cells.get(k), b.cells.get(k)
        if ca is None or cb is None:
            cells.append({"key": list(k), "change": "only in " + (b.label if ca is None else a.label),
                          "a": ca, "b": cb})
            continue
        evs = {n: [ca["evaluators"].get(n), cb["evaluators"].get(n)]
               for n in sorted(set(ca["evaluators"]) | set(cb["evaluators"]))
               if _moved(ca["evaluators"].get(n), cb["evaluators"].get(n))}
        changed = bool(evs) or _moved(ca["composite"], cb["composite"]) or ca["tier"] != cb["tier"] \
            or ca["failed_gate"] != cb["failed_gate"] or ca["passed"] != cb["passed"]
        delta = (cb["composite"] - ca["composite"]) if None not in (ca["composite"], cb["composite"]) else None
        row = {"key": list(k), "change": "changed" if changed else "same", "delta": delta, "a": ca, "b": cb,
               "evaluators_moved": evs}
        cells.append(row)
        if ca["passed"] > cb["passed"]:  # bools per attempt, pass rates per agent's problem
            new_failures.append(row)
        elif cb["passed"] > ca["passed"]:
            new_passes.append(row)
    shared: list[float] = [c["delta"] for c in cells if c.get("delta") is not None]
    return {
        "a": a.label, "b": b.label, "cells": cells,
        "counts": {"cells": len(cells), "changed": sum(c["change"] == "changed" for c in cells),
                   "same": sum(c["change"] == "same" for c in cells),
                   "only_a": sum(c["change"] == f"only in {a.label}" for c in cells),
                   "only_b": sum(c["change"] == f"only in {b.label}" for c in cells),
                   "new_failures": len(new_failures), "new_passes": len(new_passes)},
        "mean_delta": statistics.fmean(shared) if shared else None,
        "delta_interval": delta_interval(cells),
        "new_failures": [c["key"] for c in new_failures], "new_passes": [c["key"] for c in new_passes],
    }


def delta_interval(cells: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The change B - A as the mean over problems (each once) of each problem's mean change, with
    its 95% interval over problems (hpcbench.stats: Student t on the problems' changes)."""
    by_problem: dict[str, list[float]] = {}
    for c in cells:
        if c.get("delta") is not None:
            by_problem.setdefault(c["key"][1] if len(c["key"]) == 3 else c["key"][0], []).append(c["delta"])
    if not by_problem:
        return None
    return {**mean_interval(by_problem, Settings(), "compare/delta", (-100.0, 100.0)).as_dict(), "source": ""}


def stored_pair(root: Path, sc: Scoring, a: str, b: str) -> dict[str, Any] | None:
    """B - A from the scoring's stored paired interval of A and B (docs/report.md)."""
    doc = uncertainty.load_uncertainty(root, sc.sid, sc.rows)
    for p in doc.get("pairs", []):
        if {p["a"], p["b"]} == {a, b}:
            c = dict(p["composite"])
            if p["a"] == a:  # stored as a - b
                c.update(estimate=None if c["estimate"] is None else -c["estimate"],
                         low=None if c["high"] is None else -c["high"], high=None if c["low"] is None else -c["low"])
            return {**c, "source": p["source"]}
    return None


def compare(a_dir: Path, b_dir: Path | None, scoring: str | None, against: str | None,
            agent: str | None = None, against_agent: str | None = None) -> dict[str, Any]:
    """The comparison the arguments name (see the module docstring): campaigns, scorings or agents."""
    sa = read_scoring(Path(a_dir), scoring)
    if agent or against_agent:
        if not (agent and against_agent):
            raise LookupError("comparing two agents needs both --agent A and --against-agent B")
        sb = read_scoring(Path(b_dir), against) if b_dir else sa
        res = diff(side_of_scoring(sa, agent, agent), side_of_scoring(sb, against_agent, against_agent))
        if sb is sa:  # two agents of one scoring: their paired interval as the leaderboard has it
            res["delta_interval"] = stored_pair(Path(a_dir), sa, agent, against_agent) or res["delta_interval"]
        return res
    if b_dir is None:
        if against is None:
            others = sorted(s for s in _scoring_ids(Path(a_dir)) if s != sa.sid)
            if not others:
                raise LookupError(f"{a_dir}: only one scoring ({sa.sid}); name a second campaign, --against SCORING "
                                  "or two agents")
            against = others[-1]
        sb = read_scoring(Path(a_dir), against)
    else:
        sb = read_scoring(Path(b_dir), against)
    la = f"{Path(a_dir).name}:{sa.sid}"
    lb = f"{Path(b_dir or a_dir).name}:{sb.sid}"
    return diff(side_of_scoring(sa, la), side_of_scoring(sb, lb if lb != la else lb + "(b)"))


def _scoring_ids(root: Path) -> list[str]:
    from hpcbench.store.scorings import list_scorings

    return sorted(list_scorings(root))


def _f(x: Any, nd: int = 1) -> str:
    return "–" if x is None else f"{x:.{nd}f}" if isinstance(x, float) else str(x)


def comparison_markdown(res: dict[str, Any]) -> str:
    c = res["counts"]
    lines = [f"# Comparison: A = {res['a']}, B = {res['b']}", "",
             f"{c['cells']} cells: {c['changed']} changed, {c['same']} the same, {c['only_a']} only in A, "
             f"{c['only_b']} only in B; {c['new_failures']} new failures, {c['new_passes']} new passes; "
             f"mean composite change over shared cells {_f(res['mean_delta'])}.", ""]
    iv = res.get("delta_interval")
    if iv and iv["estimate"] is not None:
        where = f" (`{iv['source']}`)" if iv.get("source") else ""
        bounds = "too few to say" if iv["low"] is None else f"95% interval [{_f(iv['low'])}, {_f(iv['high'])}]"
        lines += [f"Change B - A over problems (each once): {_f(iv['estimate'])}, {bounds}, {iv['scope']}{where}; "
                  "a change whose interval holds 0 is not established.", ""]
    for title, keys in (("New failures (passed every gate and check in A, not in B)", res["new_failures"]),
                        ("New passes", res["new_passes"])):
        if keys:
            lines += [f"## {title}", ""] + [f"- {'/'.join(k)}" for k in keys] + [""]
    lines += ["## Changed cells", "", "| cell | composite A | composite B | change | tier A -> B | gate A -> B | "
              "evaluators moved |", "|---|---|---|---|---|---|---|"]
    for cell in res["cells"]:
        if cell["change"] == "same":
            continue
        a, b = cell.get("a") or {}, cell.get("b") or {}
        moved = ", ".join(f"{n} {_f(x, 2)}->{_f(y, 2)}" for n, (x, y) in (cell.get("evaluators_moved") or {}).items())
        lines.append(f"| {md_code('/'.join(cell['key']))} | {_f(a.get('composite'))} | {_f(b.get('composite'))} | "
                     f"{_f(cell.get('delta')) if cell['change'] == 'changed' else cell['change']} | "
                     f"{a.get('tier') or '–'} -> {b.get('tier') or '–'} | {a.get('failed_gate') or 'none'} -> "
                     f"{b.get('failed_gate') or 'none'} | {moved} |")
    return "\n".join(lines) + "\n"
