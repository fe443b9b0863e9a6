"""`hpcbench explain CAMPAIGN /sweep/...`: a sweep point's numbers, and its per-event breakdown,
derived again from the store's own rows (runs, timings, -log_view events of the program and
of the reference) and sweep.json as stored in /sweep@plan, then compared with the stored rows.

Paths: `/sweep` (the group), `/sweep/points` | `/sweep/events` | `/sweep/baseline` (the
tables as stored), `/sweep/points/<agent>/<problem>/<attempt>/<mode>/<size>/r<R>-N<N>`
(one point with its derivation, and its rows of /sweep/events)."""

from __future__ import annotations

import dataclasses
import json
import math

import h5py

from hpcbench.problem import Checks
from hpcbench.store import layout
from hpcbench.store.read import Texts, live_submissions, rebuild_record, strings
from hpcbench.sweep.analysis import EventRow, SweepAnalysis, analyse_sweep
from hpcbench.sweep.plan import SweepPlan
from hpcbench.sweep.tables import GROUP, PointRow, table_rows

_s = layout.text  # a string cell as h5py returns it


def derive(f: h5py.File, plan: SweepPlan, problem: str) -> SweepAnalysis:
    """Every point and event row of `problem`, computed again from campaign.h5's rows (an open file)."""
    subs = live_submissions(f)
    t = {name: f[name][()] for name in layout.CHILDREN}
    texts, codes = Texts(f), strings(f)
    records = {}
    for row in subs:
        if _s(row["problem"]) != problem:
            continue
        key = (_s(row["agent"]), problem, _s(row["attempt"]))
        records[key] = rebuild_record(row, t, texts, codes, True) if row["record_len"] else None
    checks = {_s(r["id"]): Checks.model_validate_json(_s(r["checks_json"])) for r in f["problems"][()]}
    return analyse_sweep(plan, records, checks)


def _fmt(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.6g}"


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def explain_point(f: h5py.File, parts: list[str]) -> list[str]:
    """parts: agent, problem, attempt, mode, size, r<R>-N<N>."""
    if len(parts) != 6 or not parts[5].startswith("r") or "-N" not in parts[5]:
        raise LookupError("a sweep point is /sweep/points/<agent>/<problem>/<attempt>/<mode>/<size>/r<R>-N<N>")
    agent, problem, attempt, mode, size, rn = parts
    ranks, nodes = (int(x) for x in rn[1:].split("-N"))
    g = f[GROUP]
    plan = SweepPlan.model_validate_json(_s(g.attrs["plan"]))
    want = (agent, problem, attempt, mode, int(size), ranks, nodes)

    def pick(rows: list[PointRow]) -> PointRow | None:
        return next((p for p in rows if (p.agent, p.problem, p.attempt, p.mode, p.size, p.ranks, p.nodes) == want),
                    None)

    stored = pick(table_rows(g["points"][()], PointRow))
    if stored is None:
        raise LookupError(f"/sweep/points: no point {'/'.join(parts)}")
    derived = derive(f, plan, problem)
    again = pick(derived.points)
    lines = [f"sweep point {agent}/{problem}/{attempt}: {mode} scaling, size {size}, {ranks} ranks on {nodes} node(s)",
             f"  status: {stored.status}" + (f" ({stored.reason})" if stored.reason else ""),
             f"  time: median of {stored.repeats} timing repeats = {_fmt(stored.time_s)} s ({stored.time_source}); "
             f"min {_fmt(stored.time_min_s)}, max {_fmt(stored.time_max_s)}, spread (max-min)/median "
             f"{_fmt(stored.spread)}" + (" -> noisy" if stored.noisy else ""),
             f"     from /submissions/{agent}/{problem}/{attempt}/timings (case {stored.case}, ranks {ranks}) and "
             "its runs of kind timing",
             f"  correctness: {stored.correctness or stored.reason}"]
    if math.isfinite(stored.efficiency):
        b = stored.base_ranks
        if mode == "strong":
            lines += [f"  speedup = t({b}) / t({ranks}) = {_fmt(stored.base_time_s)} / {_fmt(stored.time_s)} = "
                      f"{_fmt(stored.speedup)}",
                      f"  efficiency = speedup * {b} / {ranks} = {_fmt(stored.efficiency)}"]
            if math.isfinite(stored.karp_flatt):
                p = ranks / b
                lines.append(f"  Karp-Flatt serial fraction = (1/S - 1/p) / (1 - 1/p), p = {p:g}: "
                             f"{_fmt(stored.karp_flatt)}")
        else:
            lines.append(f"  weak efficiency = t({b}) / t({ranks}) = {_fmt(stored.base_time_s)} / "
                         f"{_fmt(stored.time_s)} = {_fmt(stored.efficiency)}")
        if math.isfinite(stored.rel_efficiency):
            lines.append(f"  relative to the reference ({plan.reference}) at this point: {_fmt(stored.efficiency)} / "
                         f"{_fmt(stored.ref_efficiency)} = {_fmt(stored.rel_efficiency)}")
    else:
        lines.append("  no efficiency: the point is not ok, or no ok base point exists")
    marks = [m for m, on in (("oversubscribed", stored.oversubscribed), ("noisy", stored.noisy)) if on]
    if marks:
        lines.append(f"  marked: {', '.join(marks)}")
    if again is None:
        lines.append("  recomputed: MISMATCH (the point is not in the plan or records any more)")
    else:
        diff = [fl.name for fl in dataclasses.fields(PointRow)
                if not _same(getattr(stored, fl.name), getattr(again, fl.name))]
        lines.append("  recomputed from the stored rows: " + ("match" if not diff else
                                                               f"MISMATCH in {', '.join(diff)}"))
    lines.append(f"  row: {json.dumps(dataclasses.asdict(stored), default=str)}")
    return lines + _events(table_rows(g["events"][()], EventRow), derived.events, want)


def _events(stored: list[EventRow], derived: list[EventRow], want: tuple) -> list[str]:
    """The point's rows of /sweep/events, each compared with the same row derived again."""
    def mine(rows: list[EventRow]) -> dict[str, EventRow]:
        return {e.event: e for e in rows if (e.agent, e.problem, e.attempt, e.mode, e.size, e.ranks, e.nodes) == want}

    have, again = mine(stored), mine(derived)
    if not have:
        return ["  events: none stored for this point (no -log_view, or every event under the breakdown's "
                "2% floor)"]
    lines = ["  events (/sweep/events; share of the run's -log_view time, growth against the base point, "
             "slowest/fastest rank):"]
    for name, e in sorted(have.items(), key=lambda kv: -kv[1].time_s):
        other = again.get(name)
        diff = ["missing"] if other is None else [fl.name for fl in dataclasses.fields(EventRow)
                                                   if not _same(getattr(e, fl.name), getattr(other, fl.name))]
        lines.append(f"    {name:24s} {_fmt(e.time_s)} s  share {_fmt(e.share)}  growth {_fmt(e.share_growth)}  "
                     f"imbalance {_fmt(e.time_max_ratio)}  {_fmt(e.mflops)} Mflop/s  "
                     + ("recomputed: match" if not diff else f"recomputed: MISMATCH in {', '.join(diff)}"))
    return lines
