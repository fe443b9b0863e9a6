"""The report's "Judge calibration" section: how far to trust each judged column.

Shown beside a scoring by an LLM judge: the calibration that scoring applied
(recorded in its config by `hpcbench score`), else the judge's latest stored
calibration (hpcbench calibrate), said to be measured after the scoring, whose
confidences it therefore did not lower."""

from __future__ import annotations

from typing import Any

from hpcbench.report.data import Report


def section(rep: Report) -> dict[str, Any] | None:
    judge = (rep.scoring.get("config") or {}).get("judge") or {}
    if not judge.get("model"):
        return None
    if judge.get("calibration"):
        return {"applied": True, "model": judge["model"], **judge["calibration"]}
    from hpcbench.errors import HpcbenchError
    from hpcbench.judge.calibrations import lookup, trust_summary

    try:
        found = lookup(judge["model"])
    except HpcbenchError as e:  # an unreadable results file: say so in the report instead of failing it
        return {"applied": False, "model": judge["model"], "error": str(e)}
    return {"applied": False, "model": judge["model"], **trust_summary(*found)} if found else None


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def calibration_markdown_lines(rep: Report) -> list[str]:
    cal = section(rep)
    if cal is None:
        return []
    lines = ["", "## Judge calibration", ""]
    if cal.get("error"):
        return lines + [f"Judge {cal['model']}: {cal['error']}"]
    how = ("applied by this scoring: dimensions below the threshold had their confidence lowered "
           "(rationale starts with `[low-confidence judge`)" if cal["applied"] else
           "measured after this scoring, which did not use it; score again to apply it")
    lines += [f"Judge `{cal['model']}` on probe set {cal['probe_set']} ({cal['created']}, {cal['repeats']} "
              f"repeat(s), threshold {cal['threshold']:g}; {how}). Detection: planted defects found; false alarms: "
              "clean controls flagged; bias: (missed - false alarms) / mistakes, positive = too lenient; leakage: "
              f"a defect of another dimension flagged here. Source: `{cal['file']}`.", "",
              "| dimension | detection | false alarms | accuracy | bias | leakage | stability | unchanged by injection "
              "| trust |", "|---|---|---|---|---|---|---|---|---|"]
    for d, m in cal["dimensions"].items():
        bias = "n/a" if m.get("bias") is None else f"{m['bias']:+.2f}"
        lines.append(f"| {d} | {_pct(m.get('detection_rate'))} | {_pct(m.get('false_alarm_rate'))} | "
                     f"{_pct(m.get('accuracy'))} | {bias} | {_pct(m.get('leakage_rate'))} | "
                     f"{_pct(m.get('stability'))} | {_pct(m.get('injection_unchanged_rate'))} | "
                     f"{'LOW CONFIDENCE' if m.get('low_confidence') else 'ok'} |")
    return lines
