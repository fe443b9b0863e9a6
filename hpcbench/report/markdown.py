"""The markdown report."""

from __future__ import annotations

from pathlib import Path

from hpcbench.report import accounting, calibration, languages, timings, uncertainty
from hpcbench.report.data import (
    STAGES,
    Report,
    costs,
    fmt,
    fmt_comp,
    injections,
    leaderboard,
    left_out_by_problem,
    load_report,
    near_copies,
    per_problem,
    reached,
    refusals,
    taxonomy,
)
from hpcbench.report.scaling import scaling_markdown_lines as scaling_lines
from hpcbench.safetext import md_code
from hpcbench.score import agreement


def report_markdown(h5_path: Path, scoring_id: str | None = None, plot_file: str | None = None) -> str:
    rep = load_report(h5_path, scoring_id)
    sid = rep.sid
    lines = [f"# hpcbench report: {Path(h5_path).parent.name}", "",
             f"Scoring `{sid}` of `{h5_path}`. Every number below names its source, a path into the campaign's "
             f"tables or scores/{sid}.h5 (docs/store.md); "
             f"`hpcbench explain {rep.campaign} PATH` prints the value there and how it was derived.", ""]
    lines += [f"- {k}: {v}" for k, v in rep.provenance.items() if k != "contamination"] + [""]
    if rep.isolation_warning():
        lines += [f"**{rep.isolation_warning()}**", ""]
    lines += _errors(rep)
    lines += _leaderboard(rep, plot_file)
    lines += uncertainty.uncertainty_markdown_lines(rep)  # intervals, paired differences, judge noise, power
    lines += _per_problem(rep)
    lines += uncertainty.pass_at_k_lines(rep)
    lines += _taxonomy(rep)
    lines += _refusals(rep)
    lines += _injections(rep)
    lines += _contamination(rep)
    lines += _submissions(rep)
    lines += _costs(rep)
    lines += languages.language_markdown_lines(rep)  # empty unless a problem's Python reference ran
    lines += timings.timings_markdown_lines(Path(h5_path))
    lines += calibration.calibration_markdown_lines(rep)  # empty unless an LLM judge scored it
    lines += agreement.agreement_markdown_lines(h5_path, sid)  # empty unless a scoring by another judge exists
    lines += scaling_lines(Path(h5_path).parent)  # empty unless the campaign has sweeps
    lines += accounting.accounting_markdown_lines(h5_path)  # empty unless collect read the scheduler's accounting
    return "\n".join(lines) + "\n"


def _errors(rep: Report) -> list[str]:
    if not rep.errors:
        return []
    lines = ["## Not generated: infrastructure errors (not scored)", "",
             f"{len(rep.errors)} attempt(s) were never made or never came back (no key, outage, quota): they are not "
             "on the leaderboard and count for nobody. Fix the cause, then `hpcbench retry "
             f"{rep.campaign}` redoes exactly these (source: `/manifest` errors).", "",
             "| agent | problem | attempt | kind | cause |", "|---|---|---|---|---|"]
    for e in rep.errors:  # names from the tree and a provider's words: code spans, never markup
        lines.append(f"| {md_code(str(e.get('agent', '')))} | {md_code(str(e.get('problem', '')))} | "
                     f"{md_code(str(e.get('attempt', '')))} | {md_code(str(e.get('kind', '')))} | "
                     f"{md_code(str(e.get('cause', '')), 300)} |")
    return lines + [""]


def _leaderboard(rep: Report, plot_file: str | None) -> list[str]:
    lb = leaderboard(rep)
    cats = rep.categories
    lines = ["## Leaderboard", "",
             "Rank range (agents share one where Holm's tests over all pairs set no order), mean composite (0-100: the "
             "mean over the problems every agent attempted of each problem's mean over attempts) with its 95% "
             "interval (section How sure; †: wide, under 6 problems), pass@1 (share "
             "of attempts passing every gate and hidden check), the share of attempts passing every gate, and mean "
             "category scores (0-1). `*`: some composites are partial.", "",
             "| rank | agent | n | composite | 95% interval | pass@1 | gate pass | " + " | ".join(cats) + " | source |",
             "|---|---|---|---|---|---|---|" + "---|" * len(cats) + "---|"]
    for r in lb:
        lines.append(f"| {r['rank'] or '—'} | {md_code(r['agent'])} | {r['submissions']} | "
                     f"{fmt_comp(r['composite_mean'], bool(r['partial']))} | "
                     f"{uncertainty.row_interval(r)} | "
                     f"{fmt(r['pass_at_1'], 2)} | {r['gate_pass_rate']:.0%} | "
                     + " | ".join(fmt(r[c], 2) for c in cats) + f" | `{r['source']}` |")
    lines += ["", f"Sources: an agent's interval `/stats/{rep.sid}/agents/<agent>`, its rank "
                  f"`/stats/{rep.sid}/ranks/<agent>`, its pass@1 `/stats/{rep.sid}/agents/<agent>/pass`."]
    partial = sorted({c for r in rep.scored if r["partial"] for c in r["left_out"]})
    if partial:
        lines += ["", f"\\* Partial composites leave out: {', '.join(partial)} (no scored evaluator in that "
                      "category, e.g. no judge configured; weights renormalised over the rest, never counted as "
                      "zero)."]
    apart = left_out_by_problem(rep)
    if apart:
        lines += ["", "Every composite of a problem weighs the same evaluators: one unscored for any submission of the "
                      "problem (no judge, a judge outage, no sweep) is left out of all of its composites:", ""]
        for p, evs in sorted(apart.items()):
            by_why: dict[str, list[str]] = {}
            for n, why in sorted(evs.items()):
                by_why.setdefault(why, []).append(n)
            lines.append(f"- {p}: " + "; ".join(", ".join(ns) + (f" ({md_code(why, 100)})" if why else "")
                                                 for why, ns in by_why.items()))
    if plot_file:
        lines += ["", f"![per-category profile]({plot_file})", "",
                  f"Plot: leaderboard category means, from `/scores/{rep.sid}/*/*/*@categories`."]
    return lines


def _per_problem(rep: Report) -> list[str]:
    agents, problems, cells = per_problem(rep)
    if not problems:
        return []
    lines = ["", "## Per problem", "",
             f"Mean composite of each agent on each problem (attempts in brackets). Source of a cell: "
             f"`/scores/{rep.sid}/<agent>/<problem>`.", "",
             "| problem | " + " | ".join(map(md_code, agents)) + " |", "|---|" + "---|" * len(agents)]
    for p in problems:
        tds = []
        for a in agents:
            c = cells.get((a, p))
            tds.append("" if c is None else f"{fmt_comp(c['mean'], c['partial'])} ({c['n']})")
        lines.append(f"| {p} | " + " | ".join(tds) + " |")
    return lines


def _taxonomy(rep: Report) -> list[str]:
    stages, reasons = taxonomy(rep)
    if not stages:
        return []
    lines = ["", "## Failure taxonomy", "",
             "How far each attempt got (cumulative: an attempt that ran was also generated and compiled), "
             f"from the gates in `/scores/{rep.sid}/<agent>/<problem>/<attempt>/evaluators`.", "",
             "| agent | attempts | " + " | ".join(STAGES) + " |", "|---|---|" + "---|" * len(STAGES)]
    for a, sc in sorted(stages.items()):
        total = sum(sc.values())
        lines.append(f"| {md_code(a)} | {total} | " + " | ".join(str(reached(sc, s)) for s in STAGES) + " |")
    all_reasons = sorted({k for v in reasons.values() for k in v})
    lines += ["", "Why each attempt stopped:", "",
              "| agent | " + " | ".join(map(md_code, all_reasons)) + " |", "|---|" + "---|" * len(all_reasons)]
    for a, rc in sorted(reasons.items()):
        lines.append(f"| {md_code(a)} | " + " | ".join(str(rc.get(k, 0)) for k in all_reasons) + " |")
    return lines


def _refusals(rep: Report) -> list[str]:
    refs = refusals(rep)
    if not refs:
        return []
    lines = ["", "## Refusals", "",
             "Problems whose right answer is to decline (outside the composite), and refusals of solvable "
             "problems.", "", "| agent | problem | attempt | should refuse | refused | score | why | source |",
             "|---|---|---|---|---|---|---|---|"]
    for x in refs:
        why = md_code(x["rationale"], 140)  # quotes the agent's own reason
        lines.append(f"| {md_code(x['agent'])} | {x['problem']} | {md_code(x['attempt'])} | "
                     f"{'yes' if x['should_refuse'] else 'no'}"
                     f" | {'yes' if x['refused'] else 'no'} | {fmt(x['score'], 2)} | {why} | `{x['source']}` |")
    return lines


def _injections(rep: Report) -> list[str]:
    found = injections(rep)
    if not found:
        return []
    lines = ["", "## Injection attempts", "",
             "Text addressed to the judges (instructions to the evaluator, a requested score, a forged prompt) found "
             "by the deterministic scan in the sources, the program's output or submission.json (evaluator "
             "prompt_injection). Each such attempt's judged dimensions count 0 whatever the judge answered.", "",
             "| agent | problem | attempt | findings (quoted) | source |", "|---|---|---|---|---|"]
    for x in found:
        lines.append(f"| {md_code(x['agent'])} | {x['problem']} | {md_code(x['attempt'])} | "
                     f"{md_code(x['findings'], 400)} | `{x['source']}` |")
    return lines


def _contamination(rep: Report) -> list[str]:
    """How close each program is to PETSc's own examples (measured at planning)."""
    c = rep.provenance.get("contamination", {})
    if not c:
        return []
    if c.get("error"):
        return ["", "## Closeness to PETSc's examples", "", f"Not measured: {c['error']}"]
    corpus = c.get("corpus", {})
    lines = ["", "## Closeness to PETSc's examples", "",
             f"Each program's nearest file among the {corpus.get('files', '?')} tutorials and tests of PETSc "
             f"{corpus.get('version', '')} ({c.get('method', '')}); at {c.get('threshold')} or above a program is a "
             "near-copy (docs/problems.md: a tutorial copied with its names renamed reaches 0.8-1.0, independent "
             "programs below 0.4). Source: `/contamination`.", ""]
    flagged = near_copies(rep)
    if not flagged:
        return lines + ["No submission is a near-copy."]
    lines += ["| agent | problem | attempt | nearest PETSc example | similarity |", "|---|---|---|---|---|"]
    for r in flagged:
        x = r["contamination"]
        lines.append(f"| {md_code(r['agent'])} | {r['problem']} | {md_code(r['attempt'])} | {x['file']} | "
                     f"{x['similarity']:.2f} |")
    return lines


def _near(r: dict) -> str:
    x = r.get("contamination") or {}
    if not x.get("file"):
        return ""
    return f"{x['file'].removeprefix('src/')} {x['similarity']:.2f}" + (" NEAR-COPY" if x.get("near_copy") else "")


def _submissions(rep: Report) -> list[str]:
    lines = ["", "## Submissions", "",
             "| agent | problem | attempt | reached | gates | composite | tier | nearest PETSc example | why "
             "| source |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rep.rows, key=lambda r: (r["problem"], r["agent"], r["attempt"])):
        gates = "refused" if r["refused"] else "refusal set" if r["refusal_set"] else (
            "pass" if r["gates_passed"] else f"FAIL {r['failed_gate']}")
        why = (r["why"] or ("" if r["stop_reason"] == "complete" else r["stop_reason"]))
        why = md_code(why, 140)  # compiler errors and program output: the agent's text
        left = f" (leaves out {', '.join(r['left_out'])})" if r["partial"] else ""
        lines.append(f"| {md_code(r['agent'])} | {r['problem']} | {md_code(r['attempt'])} | {r['stage']} | {gates} | "
                     f"{fmt(r['composite'])}{left} | {r['tier']} | {_near(r)} | {why} | `{r['source']}` |")
    return lines


def _costs(rep: Report) -> list[str]:
    cost_rows = costs(rep)
    if not cost_rows:
        return []
    lines = ["", "## Tokens and cost per case", "",
             "Generation from each submission's `submission.json` (`<submission>@submission_json`), judging "
             "summed over its evaluators (`/scores/.../evaluators/*@cost_usd`); blank where none (hand-written "
             "submissions, no judge).", "",
             "| agent | problem | attempt | prompt tok | completion tok | gen USD | latency s | turns "
             "| judge tok | judge USD |", "|---|---|---|---|---|---|---|---|---|---|"]

    def blank(v: float, nd: int = 0) -> str:
        return "" if not v else (f"{v:.{nd}f}" if nd else str(int(v)))

    for c in cost_rows:
        lines.append(f"| {md_code(c['agent'])} | {c['problem']} | {md_code(c['attempt'])} | "
                     f"{blank(c['prompt_tokens'])} | "
                     f"{blank(c['completion_tokens'])} | {blank(c['cost_usd'], 4)} | {blank(c['latency_s'], 1)} "
                     f"| {blank(c['turns'])} | {blank(c['judge_tokens'])} | {blank(c['judge_cost_usd'], 4)} |")
    tot = sum(c["cost_usd"] for c in cost_rows)
    jt = sum(c["judge_cost_usd"] for c in cost_rows)
    lines += ["", f"Total: generation {tot:.4f} USD, judging {jt:.4f} USD."]
    return lines
