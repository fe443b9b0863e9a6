"""Scaling numbers of a sweep, from its records alone (pure: no files, no processes).

Per point (program, mode, size, ranks): the status (ok, crashed, timed out, wrong answer,
not run), the median time over the K timing repeats and their spread, whether the
answer is right, and, for a clean base, the strong-scaling speedup and parallel
efficiency, the weak-scaling efficiency, the Karp-Flatt serial fraction, and the
efficiency relative to the reference's at the same point. Per event of -log_view: its
share of the run's time and how that share grew from the base point (where scaling breaks).

Definitions (docs/sweeps.md), with b the base point's ranks and t(r) the median time:
  strong: speedup S = t(b)/t(r); efficiency E = S * b/r; Karp-Flatt
          e = (1/S - 1/p)/(1 - 1/p) with p = r/b > 1
  weak:   efficiency E = t(b)/t(r) (the size grows so that the work per rank stays)
  relative efficiency = E / E_reference at the same point
The base is the smallest rank count whose point is ok; a point that is not ok gets no
efficiency and is never a base. Oversubscribed (more ranks than cores) and noisy
(spread above NOISY_SPREAD of the median) points are computed and marked, never hidden."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field

from hpcbench.evaluators.metrics.numerical_accuracy import compare_score, sanity_score
from hpcbench.evaluators.output_contract import parse_quantities
from hpcbench.jobs.records import JobResult, RunResult
from hpcbench.problem import ALL_CASES, Checks, CompareCheck, ReferenceRun, SanityCheck
from hpcbench.sweep.plan import ProblemSweep, SweepPlan, SweepPoint

NOISY_SPREAD = 0.25  # (max - min) / median of the repeats above this: the point is noisy
EVENT_MIN_SHARE = 0.02  # events below this share at every point are left out of the breakdown


@dataclass
class PointRow:
    agent: str
    problem: str
    attempt: str
    mode: str
    size: int
    ranks: int
    nodes: int
    case: str
    status: str  # ok | crashed | timeout | wrong answer | not run
    reason: str = ""
    repeats: int = 0
    time_s: float = math.nan  # median over the repeats (the timings' exec_s)
    time_min_s: float = math.nan
    time_max_s: float = math.nan
    spread: float = math.nan  # (max - min) / median
    time_source: str = ""  # log_view | wall_minus_null
    oversubscribed: bool = False
    noisy: bool = False
    correct: bool = False
    correctness: str = ""  # which checks or agreements decided it
    base_ranks: int = 0
    base_time_s: float = math.nan
    speedup: float = math.nan
    efficiency: float = math.nan
    karp_flatt: float = math.nan
    ref_efficiency: float = math.nan
    rel_efficiency: float = math.nan
    # every time behind rel_efficiency (this point, the reference's, both base points) clean
    rel_clean: bool = False
    mflops: float = math.nan  # flop rate of the whole run (-log_view of its first clean timing run)
    mbps: float = math.nan  # message volume rate
    reductions_per_s: float = math.nan
    hostnames: str = ""
    placement: str = ""  # the executor's placement record (JSON), when it gives one

    @property
    def clean(self) -> bool:
        return self.status == "ok" and not self.oversubscribed and not self.noisy

    def key(self) -> tuple:
        return (self.mode, self.size, self.ranks, self.nodes)

    @property
    def path(self) -> str:
        """Where the row is in campaign.h5 (`hpcbench explain` resolves it)."""
        return (f"/sweep/points/{self.agent}/{self.problem}/{self.attempt}/{self.mode}/{self.size}"
                f"/r{self.ranks}-N{self.nodes}")


@dataclass
class EventRow:
    agent: str
    problem: str
    attempt: str
    mode: str
    size: int
    ranks: int
    nodes: int
    event: str
    time_s: float
    share: float  # of the run's total -log_view time
    share_growth: float  # share here minus share at the base point (nan without a base)
    time_max_ratio: float  # slowest rank over fastest: load imbalance
    mflops: float
    mbps: float
    reductions_per_s: float


@dataclass
class SweepAnalysis:
    points: list[PointRow] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)

    def rows(self, agent: str, problem: str, mode: str) -> list[PointRow]:
        return sorted((p for p in self.points if (p.agent, p.problem, p.mode) == (agent, problem, mode)),
                      key=lambda p: (p.size if mode == "strong" else 0, p.ranks, p.nodes))


# ----------------------------------------------------------------------------- one point


def _runs(rec: JobResult, case: str, ranks: int, kind: str) -> list[RunResult]:
    return [r for r in rec.runs if r.case == case and r.ranks == ranks and r.kind == kind]


def _status(rec: JobResult | None, pt: SweepPoint) -> tuple[str, str]:
    if rec is None:
        return "not run", "no record (the allocation ended first, or the job is still queued: --resume)"
    inst = _runs(rec, pt.case, pt.ranks, "instrumented")
    if not inst:
        why = rec.reason or (f"build failed (exit {rec.build.exit_code})" if rec.build and rec.build.exit_code
                             else f"job {rec.status}")
        return ("timeout" if rec.status == "timeout" else "not run"), why
    r = inst[0]
    if r.timed_out:
        return "timeout", f"timed out ({r.stopped_reason or 'time limit'})"
    if r.exit_code != 0:
        return "crashed", f"exit {r.exit_code}" + (f", signal {r.signal}" if r.signal else "") + \
            (f" ({r.stopped_reason})" if r.stopped_reason else "")
    bad = [t for t in _runs(rec, pt.case, pt.ranks, "timing") if t.exit_code != 0 or t.timed_out]
    if bad:
        return "crashed", f"{len(bad)} timing repeat(s) failed (exit {bad[0].exit_code})"
    return "ok", ""


def _times(rec: JobResult, pt: SweepPoint, row: PointRow) -> None:
    summ = [t for t in rec.timings if t.case == pt.case and t.ranks == pt.ranks]
    reps = _runs(rec, pt.case, pt.ranks, "timing")
    if summ:
        row.time_s, row.time_source, row.repeats = summ[0].exec_s, summ[0].exec_source, summ[0].repeats
        row.oversubscribed = row.oversubscribed or summ[0].oversubscribed
    per = [r.log_view.total_time_s for r in reps if r.log_view and r.log_view.total_time_s is not None] \
        if row.time_source == "log_view" else \
        [r.wall_s - (summ[0].null_median_s if summ else 0.0) for r in reps]
    if per:
        row.time_min_s, row.time_max_s = min(per), max(per)
        med = statistics.median(per)
        row.spread = (row.time_max_s - row.time_min_s) / med if med > 0 else math.nan
        row.noisy = bool(row.spread > NOISY_SPREAD)
    row.oversubscribed = row.oversubscribed or any(r.oversubscribed for r in reps)
    hosts = sorted({h for r in reps for h in r.hostnames})
    row.hostnames = ",".join(hosts)
    place = [getattr(r, "placement", None) for r in reps]  # pack's RunResult.placement, once merged
    if place and place[0] is not None:
        row.placement = place[0].model_dump_json() if hasattr(place[0], "model_dump_json") else str(place[0])


def _tolerance(checks: Checks, quantity: str, rtol: float) -> CompareCheck:
    """The loosest compare check on the quantity (the problem's own idea of 'the same answer'),
    else the scaling field's rtol."""
    found = [c for c in checks.checks if isinstance(c, CompareCheck) and c.quantity == quantity]
    if found:
        c = max(found, key=lambda c: (c.rtol, c.atol))
        return CompareCheck(kind="compare", quantity=quantity, reference=ReferenceRun(source="reference_run"),
                            rtol=c.rtol, atol=c.atol, fail_factor=c.fail_factor)
    return CompareCheck(kind="compare", quantity=quantity, reference=ReferenceRun(source="reference_run"), rtol=rtol)


def _quantities(rec: JobResult | None, case: str, ranks: int) -> dict[str, list[float]] | None:
    if rec is None:
        return None
    inst = [r for r in _runs(rec, case, ranks, "instrumented") if r.exit_code == 0 and not r.timed_out]
    return parse_quantities(inst[0].stdout) if inst else None


def correctness(rec: JobResult, ref: JobResult | None, pt: SweepPoint, ps: ProblemSweep, checks: Checks,
                is_reference: bool) -> tuple[bool, str]:
    """Right answer at this point: the problem's sanity checks that apply at any size, then
    each output that must stay right against the reference's run at the same point (the
    reference itself: against its own run at the fewest ranks of the same size)."""
    got = _quantities(rec, pt.case, pt.ranks) or {}
    notes = []
    for chk in checks.checks:
        if isinstance(chk, SanityCheck) and (not chk.cases or ALL_CASES in chk.cases) and chk.quantity in got:
            s, why = sanity_score(got[chk.quantity], chk)
            if s < 1.0:
                return False, f"sanity check {chk.name} failed: {why}"
            notes.append(f"{chk.name} ok")
    if is_reference:
        base = min((p.ranks for p in ps.points if p.case == pt.case), default=pt.ranks)
        other, against = _quantities(rec, pt.case, base), f"its own run at {base} rank(s)"
    else:
        other, against = _quantities(ref, pt.case, pt.ranks), "the reference at this point"
        if other is None:  # the reference failed here: its run at the same size on fewer ranks
            sizes = sorted(r.ranks for r in (ref.runs if ref else []) if r.case == pt.case
                           and r.kind == "instrumented" and r.exit_code == 0)
            if sizes:
                other, against = _quantities(ref, pt.case, sizes[0]), f"the reference at {sizes[0]} rank(s)"
    if other is None:
        return False, "no reference run at this size to compare with"
    for q in ps.outputs:
        if q not in got:
            return False, f"{q} not printed"
        if q not in other:
            continue
        s, why = compare_score(got[q], other[q], _tolerance(checks, q, ps.rtol))
        if s < 1.0:
            return False, f"{q} disagrees with {against}: {why}"
    return True, "; ".join(notes + [f"{', '.join(ps.outputs) or 'outputs'} agree with {against}"])


EventTotals = tuple[str, float, float, float, float, float, float]  # name, time, share, imbalance, rates


def _totals(rec: JobResult, pt: SweepPoint, row: PointRow) -> list[EventTotals]:
    """Events of a clean run (the first timing run: no -malloc_debug, whose checks would be
    timed too; else the instrumented run, records written before timing runs kept their events)
    by name, summed over call sites, and the run's rates."""
    clean = [r for r in _runs(rec, pt.case, pt.ranks, "timing")
             if r.exit_code == 0 and r.log_view is not None and r.log_view.events]
    inst = clean or _runs(rec, pt.case, pt.ranks, "instrumented")
    lv = inst[0].log_view if inst else None
    if lv is None or not lv.events:
        return []
    total = lv.total_time_s or max((e.time_s for e in lv.events), default=0.0)
    top = [e for e in lv.events if not e.path]
    if top and total > 0:  # rates of the whole run: time-weighted over the top-level events
        row.mflops = sum(e.mflops * e.time_s for e in top) / total
        row.mbps = sum(e.mbps * e.time_s for e in top) / total
        row.reductions_per_s = sum(e.reductions_per_s * e.time_s for e in top) / total
    by: dict[str, list] = {}
    for e in lv.events:
        if e.name in ("other", "Main Stage") or not e.path:
            continue
        a = by.setdefault(e.name, [0.0, 1.0, 0.0, 0.0, 0.0])
        a[0] += e.time_s
        a[1] = max(a[1], e.time_max_ratio)
        a[2] += e.mflops * e.time_s
        a[3] += e.mbps * e.time_s
        a[4] += e.reductions_per_s * e.time_s
    return [(n, t, t / total if total > 0 else math.nan, r, f / t if t else 0.0, m / t if t else 0.0,
             d / t if t else 0.0) for n, (t, r, f, m, d) in by.items()]


# ----------------------------------------------------------------------------- derived numbers


def _derive(rows: list[PointRow]) -> None:
    """Speedup, efficiency and Karp-Flatt of one program's points of one mode (and size)."""
    groups: dict[tuple, list[PointRow]] = {}
    for r in rows:
        groups.setdefault((r.mode, r.size if r.mode == "strong" else 0), []).append(r)
    for (mode, _), g in groups.items():
        ok = sorted((r for r in g if r.status == "ok" and math.isfinite(r.time_s) and r.time_s > 0),
                    key=lambda r: r.ranks)
        if not ok:
            continue
        base = ok[0]
        for r in ok:
            r.base_ranks, r.base_time_s = base.ranks, base.time_s
            if mode == "strong":
                r.speedup = base.time_s / r.time_s
                r.efficiency = r.speedup * base.ranks / r.ranks
                p = r.ranks / base.ranks
                if p > 1:
                    r.karp_flatt = (1 / r.speedup - 1 / p) / (1 - 1 / p)
            else:
                r.efficiency = base.time_s / r.time_s


def analyse_sweep(plan: SweepPlan, records: dict[tuple[str, str, str], JobResult | None],
            checks: dict[str, Checks]) -> SweepAnalysis:
    """Every point of every program in `records` ((agent, problem, attempt) -> record,
    None when the job has none yet); the reference (agent `plan.reference`) is the yardstick."""
    out = SweepAnalysis()
    for (agent, pid, attempt), rec in sorted(records.items()):
        ps = plan.problem(pid)
        refkey = next((k for k in records if k[0] == plan.reference and k[1] == pid), None)
        ref = records.get(refkey) if refkey else None
        mine: list[PointRow] = []
        for pt in ps.points:
            row = PointRow(agent, pid, attempt, pt.mode, pt.size, pt.ranks, pt.nodes, pt.case, "ok",
                           oversubscribed=pt.oversubscribed)
            row.status, row.reason = _status(rec, pt)
            if rec is not None:
                _times(rec, pt, row)
            if row.status == "ok" and rec is not None:
                row.correct, row.correctness = correctness(rec, ref, pt, ps, checks[pid], agent == plan.reference)
                if not row.correct:
                    row.status, row.reason = "wrong answer", row.correctness
            mine.append(row)
        _derive(mine)
        base_share: dict[tuple, dict[str, float]] = {}
        for row, pt in zip(mine, ps.points, strict=True):
            if rec is None or row.status != "ok":
                continue
            ev = _totals(rec, pt, row)
            gkey = (row.mode, row.size if row.mode == "strong" else 0)
            shares = {n: s for n, _, s, *_ in ev}
            if row.ranks == row.base_ranks:
                base_share[gkey] = shares
            for n, t, s, ratio, fl, mb, red in ev:
                out.events.append(EventRow(agent, pid, attempt, row.mode, row.size, row.ranks, row.nodes, n, t, s,
                                           math.nan, ratio, fl, mb, red))
        for e in out.events:
            if (e.agent, e.problem, e.attempt) == (agent, pid, attempt):
                b = base_share.get((e.mode, e.size if e.mode == "strong" else 0), {})
                if e.event in b:
                    e.share_growth = e.share - b[e.event]
        out.points += mine
    keep = {(e.agent, e.problem, e.attempt, e.event) for e in out.events if e.share >= EVENT_MIN_SHARE}
    out.events = [e for e in out.events if (e.agent, e.problem, e.attempt, e.event) in keep]
    _relative(out.points, plan.reference)
    return out


def _relative(points: list[PointRow], reference: str) -> None:
    refs = {(p.problem, *p.key()): p for p in points if p.agent == reference}

    def base(p: PointRow) -> PointRow | None:
        size = p.size if p.mode == "strong" else None
        return next((b for b in points if (b.agent, b.problem, b.attempt, b.mode) == (p.agent, p.problem, p.attempt,
                     p.mode) and b.ranks == p.base_ranks and (size is None or b.size == size)), None)

    for p in points:
        r = refs.get((p.problem, *p.key()))
        if r is not None and math.isfinite(r.efficiency) and math.isfinite(p.efficiency) and r.efficiency > 0:
            p.ref_efficiency = r.efficiency
            p.rel_efficiency = p.efficiency / r.efficiency
            bases = [base(p), base(r)]
            p.rel_clean = p.clean and r.clean and all(b is not None and b.clean for b in bases)


def as_dicts(rows: list) -> list[dict]:
    return [asdict(r) for r in rows]
