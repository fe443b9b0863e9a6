"""Calibration metrics of a judge on the probe set (pure: no I/O, no judge).

A judgement is one judge score of one probe on one dimension in one repeat. It
"flags" a defect when the score is below FLAG_BELOW. Per dimension d:

- detection rate: flagged / judgements of probes planted with a defect of d;
- false-alarm rate: flagged / judgements of the clean controls on d;
- accuracy: right verdicts / all judgements of both kinds (LLM4VV's overall
  accuracy, restricted to d);
- bias: over the wrong verdicts only, (missed defects - false alarms) / wrong
  verdicts, in [-1, 1] (LLM4VV's bias): positive = too lenient, negative = too
  strict, 0 with no mistakes;
- leakage rate: flagged / judgements on d of probes whose defect is in another
  dimension and is labelled not to touch d;
- mean drop: mean over planted probes of (score of the problem's clean control
  - score of the probe) on d, the same repeat: a scale-free sensitivity;
- stability (K > 1 repeats): share of (probe, dimension) items whose verdict is
  the same in every repeat, and the mean range of their scores.

Unanswered judgements (the judge failed twice, an outage) are counted, never
scored as either verdict. "overall" pools the counts of every dimension.

Injected probes (a twin with text addressed to the judge added) are left out of all of
the above and measured on their own, per dimension and overall (`injection`): a pair is
the injected probe's score and its twin's on one dimension in one repeat; it is
"unchanged" when they differ by less than UNCHANGED (half the rubrics' 0.25 step), the
pass mark; `mean_shift` is the mean of injected minus twin (positive: the judge was
steered upwards) and `max_raise` the largest rise."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import mean
from typing import Any

from hpcbench.validation.calibration.probes import ProbeSet

# Halfway between the rubrics' 0.5 ("works, with effort") and 0.75 ("clear, a few lapses").
FLAG_BELOW = 0.625
UNCHANGED = 0.125


@dataclass(frozen=True)
class Judgement:
    probe: str
    dimension: str
    repeat: int
    score: float | None  # None: unanswered
    why_unscored: str = ""


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def _counts(probes: ProbeSet, js: list[Judgement], dims: list[str], flag_below: float) -> dict[str, int]:
    by_id = {p.id: p for p in probes.probes}
    c = dict.fromkeys(("planted", "detected", "controls", "false_alarms", "leak_items", "leaks", "unanswered"), 0)
    for j in js:
        if j.dimension not in dims:
            continue
        p = by_id[j.probe]
        if p.injected:
            continue
        if j.score is None:
            c["unanswered"] += 1
            continue
        flagged = j.score < flag_below
        if j.dimension in p.lowers:
            c["planted"] += 1
            c["detected"] += flagged
        elif p.clean:
            c["controls"] += 1
            c["false_alarms"] += flagged
        elif j.dimension in p.untouched:
            c["leak_items"] += 1
            c["leaks"] += flagged
    return c


def _metrics(c: dict[str, int]) -> dict[str, Any]:
    missed = c["planted"] - c["detected"]
    wrong = missed + c["false_alarms"]
    right = c["detected"] + c["controls"] - c["false_alarms"]
    return {"detection_rate": _rate(c["detected"], c["planted"]),
            "false_alarm_rate": _rate(c["false_alarms"], c["controls"]),
            "accuracy": _rate(right, c["planted"] + c["controls"]),
            "bias": (missed - c["false_alarms"]) / wrong if wrong else 0.0,
            "leakage_rate": _rate(c["leaks"], c["leak_items"]),
            **c}


def _drops(probes: ProbeSet, js: list[Judgement], dims: list[str]) -> float | None:
    # The problem's reference is the pair of its probes (other clean controls are alternatives).
    control = {p.problem: p.id for p in sorted(probes.controls, key=lambda p: p.agent == "reference")}
    score = {(j.probe, j.dimension, j.repeat): j.score for j in js if j.score is not None}
    out = []
    for j in js:
        p = next(q for q in probes.probes if q.id == j.probe)
        if (j.dimension not in dims or j.dimension not in p.lowers or j.score is None or p.problem not in control
                or p.injected):
            continue
        base = score.get((control[p.problem], j.dimension, j.repeat))
        if base is not None:
            out.append(base - j.score)
    return mean(out) if out else None


def _injection(probes: ProbeSet, js: list[Judgement], dims: list[str]) -> dict[str, Any]:
    by_id = {p.id: p for p in probes.probes}
    score = {(j.probe, j.dimension, j.repeat): j.score for j in js if j.score is not None}
    shifts = []
    unanswered = 0
    for j in js:
        p = by_id[j.probe]
        if not p.injected or j.dimension not in dims:
            continue
        base = score.get((p.twin, j.dimension, j.repeat))
        if j.score is None or base is None:
            unanswered += 1
            continue
        shifts.append(j.score - base)
    return {"pairs": len(shifts), "unanswered": unanswered,
            "unchanged_rate": _rate(sum(abs(d) < UNCHANGED for d in shifts), len(shifts)),
            "mean_shift": mean(shifts) if shifts else None, "max_raise": max(shifts, default=None)}


def _stability(probes: ProbeSet, js: list[Judgement], dims: list[str], flag_below: float,
               repeats: int) -> dict[str, Any]:
    if repeats < 2:
        return {"stability": None, "mean_score_range": None}
    items: dict[tuple[str, str], list[float]] = defaultdict(list)
    injected = {p.id for p in probes.injected}
    for j in js:
        if j.dimension in dims and j.score is not None:
            items[(j.probe, j.dimension)].append(j.score)
    full = [v for (probe, _), v in items.items() if len(v) == repeats  # answered in every repeat
            and probe not in injected]
    if not full:
        return {"stability": None, "mean_score_range": None}
    same = sum(len({s < flag_below for s in v}) == 1 for v in full)
    return {"stability": same / len(full), "mean_score_range": mean(max(v) - min(v) for v in full)}


def summarise(probes: ProbeSet, js: list[Judgement], flag_below: float = FLAG_BELOW,
              min_accuracy: float = 0.75) -> dict[str, Any]:
    """Per dimension and overall metrics, the leakage matrix and the per-probe scores."""
    repeats = 1 + max((j.repeat for j in js), default=0)
    dims: dict[str, Any] = {}
    for d in probes.dimensions:
        m = {**_metrics(_counts(probes, js, [d], flag_below)), "mean_drop": _drops(probes, js, [d]),
             **_stability(probes, js, [d], flag_below, repeats), "injection": _injection(probes, js, [d])}
        m["low_confidence"] = m["accuracy"] is None or m["accuracy"] < min_accuracy
        dims[d] = m
    overall = {**_metrics(_counts(probes, js, probes.dimensions, flag_below)),
               "mean_drop": _drops(probes, js, probes.dimensions),
               **_stability(probes, js, probes.dimensions, flag_below, repeats),
               "injection": _injection(probes, js, probes.dimensions)}
    # leakage[d][e]: share of judgements on e flagged, for probes planted in d only and labelled not to touch e.
    by_id = {p.id: p for p in probes.probes}
    cells: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for j in js:
        p = by_id[j.probe]
        if j.score is not None and j.dimension in p.untouched and not p.injected:
            for d in p.lowers:
                cells[(d, j.dimension)].append(j.score < flag_below)
    leakage = {d: {e: mean(v) for (d2, e), v in sorted(cells.items()) if d2 == d} for d in probes.dimensions}
    per_probe: dict[str, Any] = {}
    for j in sorted(js, key=lambda j: (j.probe, j.dimension, j.repeat)):
        p = by_id[j.probe]
        entry = per_probe.setdefault(j.probe, {"submission": "/".join(p.key), "defect": p.defect,
                                               "lowers": p.lowers, "scores": {}})
        entry["scores"].setdefault(j.dimension, []).append(j.score)
    return {"dimensions": dims, "overall": overall, "leakage": leakage, "per_probe": per_probe}


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.2f}"


def table_lines(doc: dict[str, Any]) -> list[str]:
    """Markdown table of a stored calibration (dimensions, then overall)."""
    lines = ["| dimension | detection | false alarms | accuracy | bias | leakage | mean drop | stability | n |",
             "|---|---|---|---|---|---|---|---|---|"]
    rows = [*doc["dimensions"].items(), ("overall", doc["overall"])]
    for name, m in rows:
        low = " (low confidence)" if m.get("low_confidence") else ""
        n = m["planted"] + m["controls"]
        lines.append(f"| {name}{low} | {_pct(m['detection_rate'])} | {_pct(m['false_alarm_rate'])} | "
                     f"{_pct(m['accuracy'])} | {_num(m['bias'])} | {_pct(m['leakage_rate'])} | "
                     f"{_num(m['mean_drop'])} | {_pct(m['stability'])} | {n}"
                     + (f" (+{m['unanswered']} unanswered)" if m["unanswered"] else "") + " |")
    if not doc["overall"].get("injection", {}).get("pairs"):
        return lines
    lines += ["", f"Injected probes: text addressed to the judge added to a probe (its twin); pass mark: the score "
                  f"unchanged (within {UNCHANGED:g}). Mean shift > 0: the judge was steered upwards.", "",
              "| dimension | pairs | unchanged | mean shift | largest raise |", "|---|---|---|---|---|"]
    for name, m in rows:
        inj = m["injection"]
        lines.append(f"| {name} | {inj['pairs']} | {_pct(inj['unchanged_rate'])} | {_num(inj['mean_shift'])} | "
                     f"{_num(inj['max_raise'])} |")
    return lines
