"""The HTML report: one self-contained file, the plot embedded, every cell
carrying the HDF5 path of its number."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from hpcbench.report import uncertainty
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
    per_problem,
    reached,
    refusals,
    taxonomy,
)
from hpcbench.report.plot import profile_png
from hpcbench.safetext import visible
from hpcbench.score import agreement
from hpcbench.score.verdict import TIERS

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:0.6em 0 1.4em;font-size:0.88em}
th,td{border:1px solid #ccc;padding:0.25em 0.55em;text-align:left}
th{background:#f0f3f7} td.num{text-align:right;font-variant-numeric:tabular-nums}
td[data-source]{cursor:help} code{font-size:0.92em;background:#f6f6f6;padding:0 0.2em}
.fail{color:#a00}.pass{color:#070}.partial{color:#a60} .note{color:#555;font-size:0.9em}
.wrap{overflow-x:auto;max-width:100%} #submissions td:nth-child(8){max-width:28em}
"""


def _e(x: object) -> str:
    # visible(): a program's control and bidirectional-override characters shown, not obeyed
    return html.escape(visible(str(x)), quote=True)


def _td(value: str, rep: Report, source: str = "", cls: str = "num") -> str:
    """A number cell that names its source (tooltip and data attribute)."""
    if not source:
        return f"<td class='{cls}'>{_e(value)}</td>"
    title = f"source: {source}\nre-derive: {rep.explain(source.split('@')[0])}"
    return f"<td class='{cls}' data-source='{_e(source)}' title='{_e(title)}'>{_e(value)}</td>"


def _table(head: list[str], body: list[str], tid: str = "") -> str:
    ths = "".join(f"<th>{_e(h)}</th>" for h in head)
    # in a scrolling box: a wide table scrolls inside the page instead of running off it
    return f"<div class='wrap'><table{f' id={chr(39)}{tid}{chr(39)}' if tid else ''}><thead><tr>{ths}</tr></thead>" \
        "<tbody>" + "".join(f"<tr>{b}</tr>" for b in body) + "</tbody></table></div>"


def _left_out_html(rep: Report) -> list[str]:
    apart = left_out_by_problem(rep)
    if not apart:
        return []
    items = "".join(f"<li>{_e(p)}: " + "; ".join(f"{_e(n)}" + (f" (<code>{_e(why[:100])}</code>)" if why else "")
                                                for n, why in sorted(evs.items())) + "</li>"
                    for p, evs in sorted(apart.items()))
    return ["<p class='partial'>Every composite of a problem weighs the same evaluators: one unscored for any "
            f"submission of the problem is left out of all of its composites:</p><ul>{items}</ul>"]


def _injections_html(rep: Report) -> list[str]:
    found = injections(rep)
    if not found:
        return []
    body = [f"<td>{_e(x['agent'])}</td><td>{_e(x['problem'])}</td><td>{_e(x['attempt'])}</td>"
            + _td(x["findings"][:400], rep, x["source"], "") for x in found]
    return ["<h2>Injection attempts</h2>",
            "<p class='note'>Text addressed to the judges found by the deterministic scan (evaluator "
            "prompt_injection); each such attempt's judged dimensions count 0.</p>",
            _table(["agent", "problem", "attempt", "findings (quoted)"], body, "injections")]


def to_html(h5_path: Path, scoring_id: str | None = None, rep: Report | None = None) -> str:
    rep = rep or load_report(h5_path, scoring_id)
    parts = _head_html(h5_path, rep) + _leaderboard_html(rep)
    parts += uncertainty.html_parts(rep)  # plot of means with intervals, pairs, categories, judge noise, power
    parts += _per_problem_html(rep)
    parts += uncertainty.pass_at_k_html(rep)
    parts += _taxonomy_html(rep) + _refusals_html(rep)
    parts += _injections_html(rep)
    parts += _submissions_html(rep) + _costs_html(rep) + _languages_html(rep) + _agreement_html(h5_path, rep)
    from hpcbench.report.scaling import section_html  # the campaign's sweeps, when it has any

    parts.append(section_html(Path(h5_path).parent))
    from hpcbench.report.accounting import html_section  # node-hours, when collect read the scheduler's accounting

    parts.append(html_section(h5_path))
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>hpcbench report {_e(Path(h5_path).parent.name)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")


def _languages_html(rep: Report) -> list[str]:
    from hpcbench.report import languages

    rows = languages.language_rows(rep)
    if not rows:
        return []
    body = []
    for r in rows:
        c = languages.row_cells(r)
        body.append(f"<td>{_e(c[0])}</td>" + "".join(_td(x, rep) for x in c[1:6])
                    + _td(c[6], rep, r.source if r.ratio is not None else "") + f"<td>{_e(c[7])}</td>")
    missing = [r for r in rows if r.ratio is None]
    note = ("<p class='note'>No performance ratio: " + "; ".join(f"{_e(r.problem)}: {_e(r.why[:160])}" for r in missing)
            + "</p>") if missing else ""
    return ["<h2>C and Python references</h2>", f"<p class='note'>{_e(languages.NOTE)}</p>",
            _table(languages.HEAD, body, "languages"), note]


def _head_html(h5_path: Path, rep: Report) -> list[str]:
    sid = rep.sid
    parts = [f"<h1>hpcbench report: {_e(Path(h5_path).parent.name)}</h1>",
             f"<p>Scoring <code>{_e(sid)}</code> of <code>{_e(h5_path)}</code>. Every number names its source: hover "
             f"a cell for the HDF5 path and the command that re-derives it "
             f"(<code>hpcbench explain {_e(rep.campaign)} PATH</code>).</p>",
             "<ul>" + "".join(f"<li>{_e(k)}: {_e(v)}</li>" for k, v in rep.provenance.items()) + "</ul>",
             "<p><a href='browse/index.html'>Explore every submission</a> (sortable, filterable, a page per submission "
             f"with its source, runs and evaluators; also <code>hpcbench view {_e(rep.campaign)}</code>).</p>"]
    if rep.isolation_warning():
        parts.append(f"<p class='warning'><strong>{_e(rep.isolation_warning())}</strong></p>")
    return parts


def _leaderboard_html(rep: Report) -> list[str]:
    sid, cats = rep.sid, rep.categories
    parts: list[str] = []
    lb = leaderboard(rep)
    body = []
    for r in lb:
        src = r["source"]
        comp = fmt_comp(r["composite_mean"], bool(r["partial"]))
        body.append(_td(r["rank"] or "—", rep, r["uncertainty"]["rank_source"], "num") + f"<td>{_e(r['agent'])}</td>"
                    + _td(str(r["submissions"]), rep, src)
                    + _td(comp, rep, f"{src}@composite_mean", "num partial" if r["partial"] else "num")
                    + _td(uncertainty.row_interval(r), rep, r["uncertainty"]["interval_source"])
                    + _td(fmt(r["pass_at_1"], 2), rep, r["uncertainty"]["pass_source"])
                    + _td(f"{r['gate_pass_rate']:.0%}", rep, f"{src}@gate_pass_rate")
                    + "".join(_td(fmt(r[c], 2), rep, f"{src}@{c}") for c in cats)
                    + f"<td><code>{_e(src)}</code></td>")
    tiers = ", ".join(f"{name} &ge; {lo:g}" for name, lo in TIERS)
    weights = ", ".join(f"{_e(c)} {w:g}" for c, w in rep.weights.items())
    parts += ["<h2>How scores are made</h2>",
              f"<p class='note'>Composite = 100 &times; the weighted mean of the category scores ({weights}), each "
              "category the confidence-weighted mean of its evaluators; a failed gate makes it 0. Tiers "
              f"({tiers}) only for programs that pass every gate and every hidden check. Seconds: each "
              "submission's page in the <a href='browse/index.html'>results browser</a> shows its runs and its "
              "time against the reference's.</p>"]
    parts += ["<h2>Leaderboard</h2>",
              "<p class='note'>Rank range (shared where Holm's tests over all pairs set no order), mean composite "
              "(0-100: mean over the problems every agent attempted of each problem's mean over attempts) with its "
              "95% interval (†: wide, under 6 problems), "
              "pass@1 (attempts passing every gate and hidden check), share of attempts passing every gate, mean "
              "category scores (0-1). * partial composite.</p>",
              _table(["rank", "agent", "n", "composite", "95% interval", "pass@1", "gate pass", *cats, "source"], body,
                     "leaderboard")]
    partial = sorted({c for r in rep.scored if r["partial"] for c in r["left_out"]})
    if partial:
        parts.append(f"<p class='partial'>* Partial composites leave out: {_e(', '.join(partial))} (no scored "
                     "evaluator in that category; weights renormalised over the rest, never counted as zero).</p>")
    parts += _left_out_html(rep)
    if lb:
        png = base64.b64encode(profile_png(rep)).decode()
        parts += ["<h2>Per-category profile</h2>",
                  f"<img id='profile' alt='per-category profile' src='data:image/png;base64,{png}'>",
                  f"<p class='note'>From <code>/scores/{_e(sid)}/*/*/*@categories</code> (leaderboard means).</p>"]
    return parts


def _per_problem_html(rep: Report) -> list[str]:
    parts: list[str] = []
    agents, problems, cells = per_problem(rep)
    if problems:
        body = []
        for p in problems:
            tds = "".join(_td(f"{fmt_comp(c['mean'], c['partial'])} ({c['n']})", rep, c["source"]) if c else "<td></td>"
                          for c in (cells.get((a, p)) for a in agents))
            body.append(f"<td>{_e(p)}</td>{tds}")
        parts += ["<h2>Per problem</h2>", "<p class='note'>Mean composite (attempts).</p>",
                  _table(["problem", *agents], body, "per-problem")]
    return parts


def _taxonomy_html(rep: Report) -> list[str]:
    sid = rep.sid
    parts: list[str] = []
    stages, reasons = taxonomy(rep)
    if stages:
        body = [f"<td>{_e(a)}</td>" + _td(str(sum(sc.values())), rep, f"/scores/{sid}/{a}")
                + "".join(_td(str(reached(sc, s)), rep, f"/scores/{sid}/{a}") for s in STAGES)
                for a, sc in sorted(stages.items())]
        all_reasons = sorted({k for v in reasons.values() for k in v})
        body2 = [f"<td>{_e(a)}</td>" + "".join(_td(str(rc.get(k, 0)), rep, f"/scores/{sid}/{a}")
                                                 for k in all_reasons) for a, rc in sorted(reasons.items())]
        parts += ["<h2>Failure taxonomy</h2>", "<p class='note'>How far each attempt got (cumulative).</p>",
                  _table(["agent", "attempts", *STAGES], body, "taxonomy-stage"),
                  "<p class='note'>Why each attempt stopped.</p>",
                  _table(["agent", *all_reasons], body2, "taxonomy-reason")]
    return parts


def _refusals_html(rep: Report) -> list[str]:
    parts: list[str] = []
    refs = refusals(rep)
    if refs:
        body = [f"<td>{_e(x['agent'])}</td><td>{_e(x['problem'])}</td><td>{_e(x['attempt'])}</td>"
                f"<td>{'yes' if x['should_refuse'] else 'no'}</td><td>{'yes' if x['refused'] else 'no'}</td>"
                + _td(fmt(x["score"], 2), rep, x["source"]) + f"<td>{_e(x['rationale'][:200])}</td>" for x in refs]
        parts += ["<h2>Refusals</h2>", _table(["agent", "problem", "attempt", "should refuse", "refused", "score",
                                               "why"], body, "refusals")]
    return parts


def _submissions_html(rep: Report) -> list[str]:
    parts: list[str] = []
    body = []
    for r in sorted(rep.rows, key=lambda r: (r["problem"], r["agent"], r["attempt"])):
        gates = "refused" if r["refused"] else "refusal set" if r["refusal_set"] else (
            "pass" if r["gates_passed"] else f"FAIL {r['failed_gate']}")
        gcls = "pass" if gates == "pass" else "fail" if gates.startswith("FAIL") else ""
        left = f" (leaves out {', '.join(r['left_out'])})" if r["partial"] else ""
        why = r["why"] or ("" if r["stop_reason"] == "complete" else r["stop_reason"])
        body.append(f"<td>{_e(r['agent'])}</td><td>{_e(r['problem'])}</td><td>{_e(r['attempt'])}</td>"
                    f"<td>{_e(r['stage'])}</td><td class='{gcls}'>{_e(gates)}</td>"
                    + _td(fmt(r["composite"]) + left, rep, f"{r['source']}@composite")
                    + f"<td>{_e(r['tier'])}</td><td>{_e(why[:200])}</td><td><code>{_e(r['source'])}</code></td>")
    parts += ["<h2>Submissions</h2>",
              _table(["agent", "problem", "attempt", "reached", "gates", "composite", "tier", "why", "source"], body,
                     "submissions")]
    return parts


def _costs_html(rep: Report) -> list[str]:
    parts: list[str] = []
    body: list[str] = []
    priced = [c for c in costs(rep) if c["prompt_tokens"] or c["cost_usd"] or c["judge_tokens"] or c["judge_cost_usd"]]
    for c in priced:
        def v(x: float, nd: int = 0) -> str:
            return "" if not x else (f"{x:.{nd}f}" if nd else str(int(x)))
        body.append(f"<td>{_e(c['agent'])}</td><td>{_e(c['problem'])}</td><td>{_e(c['attempt'])}</td>"
                    + _td(v(c["prompt_tokens"]), rep, c["source"]) + _td(v(c["completion_tokens"]), rep, c["source"])
                    + _td(v(c["cost_usd"], 4), rep, c["source"]) + _td(v(c["latency_s"], 1), rep, c["source"])
                    + _td(v(c["turns"]), rep, c["source"]) + _td(v(c["judge_tokens"]), rep, c["judge_source"])
                    + _td(v(c["judge_cost_usd"], 4), rep, c["judge_source"]))
    if priced:  # hand-written submissions scored without a judge cost nothing: no empty table
        parts += ["<h2>Tokens and cost per case</h2>",
                  "<p class='note'>Generation from submission.json; judging summed over evaluators; blank where "
                  "none; attempts that cost nothing are not listed.</p>",
                  _table(["agent", "problem", "attempt", "prompt tok", "completion tok", "gen USD", "latency s",
                          "turns", "judge tok", "judge USD"], body, "costs")]
    return parts


def _agreement_html(h5_path: Path, rep: Report) -> list[str]:
    sid = rep.sid
    parts: list[str] = []
    other = agreement.partner(h5_path, sid)
    if other is not None:
        ag = agreement.agreement(h5_path, sid, other)
        body = []
        for r in ag["rows"]:
            nd = 1 if r["name"] == "composite" else 3
            body.append(f"<td>{_e(r['name'])}</td>" + "".join(
                _td(fmt(r[k], nd) if k != "n" and k != "only_one" else str(r[k]), rep, ag["source"])
                for k in ("n", "mean_a", "mean_b", "mean_abs_diff", "max_abs_diff", "only_one")))
        parts += ["<h2>Judge agreement</h2>",
                  f"<p class='note'><code>{_e(sid)}</code> (judge <code>{_e(ag['judge_a'])}</code>) vs "
                  f"<code>{_e(other)}</code> (judge <code>{_e(ag['judge_b'])}</code>) on byte-identical prompts; "
                  f"re-derive with <code>hpcbench agreement {_e(rep.campaign)} --scoring {_e(sid)} --against "
                  f"{_e(other)}</code>.</p>",
                  _table(["evaluator", "n", "mean A", "mean B", "mean abs diff", "max abs diff", "scored by one only"],
                         body, "agreement")]
    return parts
