"""The generated mutants of one problem in words: counts (generated, run, broken,
equivalent, killed, surviving), the kill rate over the mutants that count, and every
survivor and equivalent mutant with its edit, so a person can judge it."""

from __future__ import annotations

from hpcbench.mutation.verdict import GeneratedReport, MutantOutcome


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _acc(o: MutantOutcome) -> str:
    return f"gate {o.failed_gate}" if o.failed_gate else ("unscored" if o.accuracy is None else f"{o.accuracy:.3f}")


def counts(g: GeneratedReport) -> str:
    ops = ", ".join(f"{op} {n}" for op, n in g.by_operator.items())
    strong = sum(o.strong for o in g.outcomes)
    screened = sum(o.screened and o.verdict == "killed" for o in g.outcomes)
    return (f"generated {g.total} ({ops}), run {len(g.outcomes)}: broken {g.count('broken')}, "
            f"equivalent (probable) {g.count('equivalent')}, killed {g.count('killed')} "
            f"({screened} at the screening case alone; {strong} by a gate or below accuracy 0.5 at every case), "
            f"surviving {g.count('surviving')}, "
            f"harmless (explained) {g.count('harmless')}"
            + (f", not run {g.count('not run')}" if g.count("not run") else ""))


def summary_lines(g: GeneratedReport) -> list[str]:
    lines = [f"  generated mutants: kill rate {_pct(g.kill_rate)}; {counts(g)}"]
    for o in g.survivors:
        lines.append(f"    survivor {o.name} (accuracy {_acc(o)}, passes every check): {o.mutation.edit}")
    for o in g.outcomes:
        if o.verdict == "harmless":
            lines.append(f"    harmless {o.name}: {o.mutation.edit}: {o.why}")
    return lines


def markdown(g: GeneratedReport) -> str:
    parts = [f"Generated mutants: kill rate {_pct(g.kill_rate)}; {counts(g)}.\n"]
    shown = [o for o in g.outcomes if o.verdict in ("surviving", "harmless", "equivalent", "not run")]
    order = {"surviving": 0, "harmless": 1, "not run": 2, "equivalent": 3}
    if shown:
        parts.append("| mutant | verdict | accuracy | edit | why harmless |\n|---|---|---|---|---|")
        for o in sorted(shown, key=lambda o: (order[o.verdict], o.name)):
            edit = o.mutation.edit.replace("|", "\\|")
            why = o.why.replace("|", "\\|") if o.verdict == "harmless" else ""
            parts.append(f"| {o.name} | {o.verdict} | {_acc(o)} | {edit} | {why} |")
        parts.append("")
    return "\n".join(parts)


def as_json(g: GeneratedReport) -> dict:
    return {"total": g.total, "by_operator": g.by_operator, "kill_rate": g.kill_rate,
            "outcomes": [{"name": o.name, "operator": o.mutation.operator, "edit": o.mutation.edit,
                          "verdict": o.verdict, "accuracy": o.accuracy, "failed_gate": o.failed_gate,
                          "strong": o.strong, "screened": o.screened, "why": o.why} for o in g.outcomes]}
