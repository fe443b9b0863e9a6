"""C beside Python: each problem's C reference and its petsc4py reference (agent `reference-python`,
problems/<id>/reference-python) side by side, so the report says what Python costs.

The Python reference's time against the C reference's is what execution_time already measured on
the performance case (the two ran it alternately on the same cores: evaluators/metrics/
execution_time.py): its evidence is read here, never measured again. A campaign without a
performance case (the quick profile) shows the case runs' wall times only, and says so."""

from __future__ import annotations

from dataclasses import dataclass

from hpcbench.report.data import Report, fmt
from hpcbench.store import scorings
from hpcbench.submission import PYTHON_REFERENCE_AGENT


@dataclass
class LanguageRow:
    problem: str
    c_run_s: float | None  # the case runs' wall time of each reference's record
    py_run_s: float | None
    py_stage: str  # how far the Python reference got (passed checks, failed gate ...)
    ranks: int | None = None  # the performance case, where it ran: the ranks of the slowest ratio
    c_median_s: float | None = None
    py_median_s: float | None = None
    ratio: float | None = None
    why: str = ""  # why there is no ratio (execution_time's rationale)
    source: str = ""  # the Python reference's execution_time in the scoring


def language_rows(rep: Report) -> list[LanguageRow]:
    """One row per problem whose C and Python references are both in the campaign."""
    by = {(r["agent"], r["problem"]): r for r in rep.rows if r["attempt"] == "1"}
    problems = sorted(p for a, p in by if a == PYTHON_REFERENCE_AGENT and ("reference", p) in by)
    if not problems:
        return []
    evidence = {r["problem"]: r["evaluators"].get("execution_time", {}).get("evidence")
                for r in scorings.read_scoring(rep.h5_path.parent, rep.sid, evidence=True).rows
                if r["agent"] == PYTHON_REFERENCE_AGENT and r["problem"] in problems}
    out = []
    for p in problems:
        c, py = by[("reference", p)], by[(PYTHON_REFERENCE_AGENT, p)]
        ex = py["evaluators"].get("execution_time", {})
        row = LanguageRow(p, c["run_s"], py["run_s"], py["stage"], why=ex.get("rationale", "not scored"),
                          source=ex.get("source", ""))
        perf = (evidence.get(p) or {}).get("performance") or []
        timed = [x for x in perf if x.get("ratio") is not None]
        if timed:
            worst = max(timed, key=lambda x: x["ratio"])
            row.ranks, row.c_median_s, row.py_median_s = worst["ranks"], worst["reference_median_s"], \
                worst["submission_median_s"]
            row.ratio, row.why = worst["ratio"], ""
        out.append(row)
    return out


HEAD = ["problem", "C run s", "Python run s", "perf ranks", "C perf s", "Python perf s", "Python / C",
        "Python reference"]


def row_cells(r: LanguageRow) -> list[str]:
    perf = ([str(r.ranks), fmt(r.c_median_s, 3), fmt(r.py_median_s, 3), f"{r.ratio:.2f}"]
            if r.ratio is not None else ["", "", "", ""])
    return [r.problem, fmt(r.c_run_s, 2), fmt(r.py_run_s, 2), *perf, r.py_stage]


NOTE = ("Each problem's C reference beside its petsc4py reference (agent reference-python): the case runs' wall "
        "time of each record, and on the performance case the median times of the two, run alternately on the "
        "same cores, and their ratio (the Python reference's execution_time evidence; the slowest rank count).")


def language_markdown_lines(rep: Report) -> list[str]:
    rows = language_rows(rep)
    if not rows:
        return []
    lines = ["## C and Python references", "", NOTE, "",
             "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(row_cells(r)) + " |" for r in rows]
    missing = [r for r in rows if r.ratio is None]
    if missing:
        lines += ["", "No performance ratio: " + "; ".join(f"{r.problem}: {r.why[:160]}" for r in missing)]
    return lines + [""]
