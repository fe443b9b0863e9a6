"""The report's "How sure" sections (markdown and HTML) from rep.stats
(hpcbench.score.uncertainty): paired differences, category means with intervals, the
judge's share of each interval, the smallest difference the design detects, pass@k per
problem, and the plot of means with their intervals. Every number names its
`/stats/<scoring>/...` path, which `hpcbench explain` draws again and compares."""

from __future__ import annotations

import html
import io
from collections.abc import Callable

from hpcbench.report.data import Report, fmt, leaderboard, plotted
from hpcbench.safetext import md_code
from hpcbench.stats.intervals import PROBLEMS, THESE, TOO_FEW

MAX_PAIR_ROWS = 60  # in markdown and HTML; the JSON has every pair


def interval_text(low: float | None, high: float | None, scope: str | None, nd: int = 1, note: str = "") -> str:
    """'[58.3, 91.7]', with † for a wide one (fewer than 6 problems), ‡ for one about these
    problems only (stored by an earlier hpcbench); 'too few to say'."""
    if scope == TOO_FEW or scope is None:
        return "too few to say"
    # + 0.0: a bound that is -0.0 after rounding prints as 0.0
    lo, hi = (None if x is None else round(x, nd) + 0.0 for x in (low, high))
    mark = "‡" if scope == THESE else "†" if (note or "").startswith("wide") else ""
    return f"[{fmt(lo, nd)}, {fmt(hi, nd)}]" + mark


def row_interval(r: dict) -> str:
    """A leaderboard row's composite interval as the tables show it."""
    u = r["uncertainty"]
    return interval_text(r["composite_ci_low"], r["composite_ci_high"], u["scope"], note=u.get("note", ""))


def md_cell(x: object) -> str:
    """A table cell from a name that is ours (a problem id); agents' names are code spans (md_code)."""
    return str(x).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("`", "'")


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0%}"


def ordered_pairs(rep: Report) -> list[dict]:
    """Pairs with the higher-ranked agent first (its difference positive)."""
    place = {r["agent"]: i for i, r in enumerate(leaderboard(rep))}
    out = []
    for p in rep.stats.get("pairs", []):
        a, b, c = p["a"], p["b"], dict(p["composite"])
        if place.get(b, 0) < place.get(a, 0):  # show b - a
            a, b = b, a
            c.update(estimate=-c["estimate"] if c["estimate"] is not None else None,
                     low=-c["high"] if c["high"] is not None else None,
                     high=-c["low"] if c["low"] is not None else None)
            est = -p["established"]
        else:
            est = p["established"]
        out.append({"a": a, "b": b, **c, "established": est, "p_holm": p.get("p_holm"), "source": p["source"]})
    return sorted(out, key=lambda r: (place.get(r["a"], 0), place.get(r["b"], 0)))


def order_text(row: dict, name: Callable[[str], str] = str) -> str:
    """Which of the pair is above, if established; `name` shows an agent's name (md_code in markdown)."""
    return {1: f"{name(row['a'])} above", -1: f"{name(row['b'])} above", 0: "not established"}[row["established"]]


def method_note(rep: Report) -> str:
    s = rep.stats.get("settings", {})
    where = ("stored with the scoring" if rep.stats.get("stored")
             else "drawn now: the scoring predates stored statistics")
    if "Holm" not in str(s.get("method", "")):  # a document stored before one estimand and Holm
        return (f"95% intervals from a cluster bootstrap ({s.get('resamples')} resamples, seed {s.get('seed')}, "
                f"{where}), as this scoring stored them (‡: about these problems only). Ranks are ranges: an agent "
                "is ranked above another where their paired interval excludes 0 (no correction for the number of "
                "pairs). Score again for the current method.")
    fam = rep.stats.get("family") or {}
    pairs = fam.get("pairs", 0)
    return (f"95% intervals over problems ({where}), every agent on the same problems (those every listed agent "
            f"attempted; see Problems measured), from {s.get('min_units')} problems up († wide: fewer than 6), none "
            "below (too few to say): a difference by Student's t on the problems' differences; a mean composite, "
            "pass rate or category by a Clopper-Pearson interval on its effective sample size over problems "
            "(Korn-Graubard), which never collapses onto 0 or 1. Ranks are ranges and orders are established by "
            f"Holm's step-down over all {pairs} pair{'s' * (pairs != 1)} shown: the chance that any order shown is "
            "wrong is at most 5%. Each pair's own interval and 'alone' order hold for one comparison planned in "
            "advance, not for one picked from the table. pass@1: the share of attempts that passed every gate and "
            "every hidden check (each problem counts once).")


def problems_lines(rep: Report) -> list[str]:
    """Which problems the leaderboard is over, which it leaves out, and each agent's missing attempts."""
    pr = rep.stats.get("problems")
    if not pr:
        return []
    common, left = pr.get("common") or [], pr.get("left_out") or []
    if common:
        head = (f"Every agent's mean, interval, rank and pass@k are over the {len(common)} problem"
                f"{'s' * (len(common) != 1)} every listed agent attempted"
                + (f"; left out: {', '.join(md_cell(p) for p in left)}." if left else " (none left out)."))
    else:
        head = ("No problem was attempted by every listed agent: each agent's mean and interval are over its own "
                "problems, which differ, so the leaderboard's order of means is not a comparison; each pair's "
                "difference is over the problems both attempted.")
    lines = ["### Problems measured", "", head]
    missing = pr.get("agents") or {}
    if missing:
        lines += ["", "| agent | missing attempts | not attempted | difficulty rank of the missing (0 hardest) |",
                  "|---|---|---|---|"]
        for a, e in sorted(missing.items()):
            rank = "—" if e.get("hard_rank") is None else f"{e['hard_rank']:.2f}" + (" ⚠" if e.get("hard") else "")
            lines.append(f"| {md_code(a)} | {e['missing']} | {', '.join(md_cell(p) for p in e['not_attempted']) or '—'}"
                         f" | {rank} |")
    for w in pr.get("warnings") or []:
        lines += ["", f"⚠ {md_cell(w)}"]
    return lines + [""]


# ----------------------------------------------------------------------------- markdown


def uncertainty_markdown_lines(rep: Report) -> list[str]:
    if not rep.stats.get("agents"):
        return []
    lines = ["", "## How sure", "", method_note(rep), ""]
    lines += (problems_lines(rep) + _pairsmd_cell(rep) + _categoriesmd_cell(rep) + _judgemd_cell(rep)
              + _powermd_cell(rep) + _passk_agent_lines(rep))
    return lines


def _pairsmd_cell(rep: Report) -> list[str]:
    pairs = ordered_pairs(rep)
    if not pairs:
        return [rep.stats.get("note", "")] if rep.stats.get("note") else []
    judged = any(p.get("judge_share") is not None for p in pairs)
    lines = ["### Paired differences", "",
             "Mean composite of A minus B over the problems measured, with the pair's own 95% interval (for one "
             "comparison planned in advance)" + (", the judge's share of its variance" if judged else "")
             + f", and the order Holm's step-down establishes over all {len(pairs)} pairs (its adjusted p).", "",
             "| A | B | A - B | 95% interval (alone) | problems | order (all pairs) | Holm p | "
             + ("judge | " if judged else "") + "source |",
             "|---|---|---|---|---|---|---|" + ("---|" if judged else "") + "---|"]
    for p in pairs[:MAX_PAIR_ROWS]:
        share = f"{_pct(p.get('judge_share'))} | " if judged else ""
        lines.append(f"| {md_code(p['a'])} | {md_code(p['b'])} | {fmt(p['estimate'])} | "
                     f"{interval_text(p['low'], p['high'], p['scope'], note=p.get('note', ''))} | {p['problems']} | "
                     f"{order_text(p, md_code)} | {fmt(p.get('p_holm'), 3)} | {share}`{p['source']}` |")
    if len(pairs) > MAX_PAIR_ROWS:
        lines.append(f"\n({len(pairs) - MAX_PAIR_ROWS} more pairs in the JSON report.)")
    return lines + [""]


def _categoriesmd_cell(rep: Report) -> list[str]:
    cats = rep.categories
    lines = ["### Category means", "", "Mean of each category (0-1) with its 95% interval.", "",
             "| agent | " + " | ".join(cats) + " | source |", "|---|" + "---|" * len(cats) + "---|"]
    for r in leaderboard(rep):
        st = rep.stats["agents"].get(r["agent"], {}).get("categories", {})
        cells = []
        for c in cats:
            v = st.get(c) or {}
            cells.append("—" if v.get("estimate") is None else
                         f"{fmt(v['estimate'], 2)} {interval_text(v.get('low'), v.get('high'), v.get('scope'), 2)}")
        src = r["uncertainty"]["interval_source"]
        lines.append(f"| {md_code(r['agent'])} | " + " | ".join(cells) + f" | `{src}/<category>` |")
    return lines + [""]


def _judgemd_cell(rep: Report) -> list[str]:
    rows = [r for r in leaderboard(rep) if r["uncertainty"]["judge_share"] is not None]
    if not rows:
        return []
    lines = ["### Judge noise", "",
             "Share of each composite interval's variance that comes from the judge's own variation across its "
             "samples (`score --judge-samples K`); the rest comes from attempts (and problems).", "",
             "| agent | interval | judge | attempts | source |", "|---|---|---|---|---|"]
    for r in rows:
        u = r["uncertainty"]
        lines.append(f"| {md_code(r['agent'])} | {row_interval(r)} | {_pct(u['judge_share'])} | "
                     f"{_pct(1 - u['judge_share'])} | `{u['interval_source']}` |")
    return lines + [""]


def power_sentence(rep: Report) -> str:
    pw = rep.stats.get("power") or {}
    d = pw.get("detectable")
    if not d:
        return f"The smallest detectable difference cannot be estimated: {pw.get('note', 'no data')}."
    where = "problems like these" if d["scope"] == PROBLEMS else "these problems only"
    design = (f"{d['problems']} problem{'s' * (d['problems'] != 1)}, {d['attempts']} attempt"
              f"{'s' * (d['attempts'] != 1)} per agent and problem")
    pairs = d.get("pairs", 1)
    among = (f" as one of the {pairs} pairs the leaderboard tests (level 5%/{pairs}, Holm's first step)"
             if pairs > 1 else " at the 5% level")
    return (f"With this design ({design}), two "
            f"agents' mean composites must differ by at least {d['difference']:.1f} points for the difference to be "
            f"established 80% of the time{among} ({where}; `{pw['source']}`). " + needed_sentence(pw, d)
            + f"`hpcbench plan-power {rep.campaign} --difference D` gives the attempts or problems another needs.")


def needed_sentence(pw: dict, d: dict) -> str:
    """What the differences the power summary asks about (10, 5, 2 points) would need."""
    parts = []
    for row in sorted(pw.get("needed") or [], key=lambda r: -r["difference"]):
        if row["difference"] >= d["difference"]:
            continue  # this design detects it already
        more = (f"{row['problems']} problems at {d['attempts']} attempt{'s' * (d['attempts'] != 1)}"
                if row.get("problems") else "more problems than can be planned")
        att = (f" or {row['attempts']} attempts on each of these {d['problems']} problems" if row.get("attempts")
               else " (more attempts cannot be planned from one attempt each)" if row.get("note")
               else " (no number of attempts on these problems suffices)")
        parts.append(f"{row['difference']:g} points would need {more}{att}")
    return ("; ".join(parts)[:1].upper() + "; ".join(parts)[1:] + ". ") if parts else ""


def _powermd_cell(rep: Report) -> list[str]:
    return ["### How many attempts", "", power_sentence(rep), ""]


def _passk_agent_lines(rep: Report) -> list[str]:
    """Each agent's pass@k over the problems measured, k up to the fewest attempts on one."""
    tables = {a: e.get("pass_at_k") or [] for a, e in rep.stats.get("agents", {}).items()}
    most = max((len(t) for t in tables.values()), default=0)
    if not most:
        return []
    lines = ["### pass@k of each agent", "",
             "Mean over the problems measured of each problem's unbiased pass@k, with its 95% interval over "
             "problems; k up to the fewest attempts any agent made on one of them, so every value is over the same "
             "problems.", "", "| agent | " + " | ".join(f"pass@{k}" for k in range(1, most + 1)) + " |",
             "|---|" + "---|" * most]
    for r in leaderboard(rep):
        cells = [f"{fmt(t['value'], 2)} "
                 + interval_text(t.get("low"), t.get("high"), PROBLEMS if t.get("low") is not None else TOO_FEW, 2)
                 for t in tables.get(r["agent"], [])]
        lines.append(f"| {md_code(r['agent'])} | " + " | ".join(cells) + " |")
    return lines + [""]


def pass_at_k_lines(rep: Report) -> list[str]:
    rows = rep.stats.get("pass_at_k") or []
    if not rows:
        return []
    most = max(r["n"] for r in rows)
    ks = list(range(1, most + 1))
    lines = ["", "### pass@k", "",
             "Unbiased pass@k (Chen et al. 2021) of each agent on each problem: the chance that k of its n attempts "
             "hold one that passed every gate and every hidden check.", "",
             "| agent | problem | n | passed | " + " | ".join(f"pass@{k}" for k in ks) + " | source |",
             "|---|---|---|---|" + "---|" * len(ks) + "---|"]
    for r in rows:
        vals = [fmt(r["values"][k - 1], 2) if k <= r["n"] else "" for k in ks]
        lines.append(f"| {md_code(r['agent'])} | {md_cell(r['problem'])} | {r['n']} | {r['c']} | " + " | ".join(vals)
                     + f" | `{r['source']}` |")
    return lines


# ----------------------------------------------------------------------------- HTML


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def _td(value: str, rep: Report, source: str | None) -> str:
    if not source:
        return f"<td class='num'>{_e(value)}</td>"
    title = f"source: {source}\nre-derive: {rep.explain(source.split('@')[0])}"
    return f"<td class='num' data-source='{_e(source)}' title='{_e(title)}'>{_e(value)}</td>"


def _table(head: list[str], body: list[str], tid: str) -> str:
    ths = "".join(f"<th>{_e(h)}</th>" for h in head)
    return (f"<table id='{tid}'><thead><tr>{ths}</tr></thead><tbody>" + "".join(f"<tr>{b}</tr>" for b in body)
            + "</tbody></table>")


def html_parts(rep: Report) -> list[str]:
    if not rep.stats.get("agents"):
        return []
    import base64

    png = base64.b64encode(intervals_png(rep)).decode()
    parts = ["<h2>How sure</h2>", f"<p class='note'>{_e(method_note(rep))}</p>",
             f"<img id='intervals' alt='mean composite of each agent with its 95% interval' "
             f"src='data:image/png;base64,{png}'>"]
    body = [f"<td>{_e(p['a'])}</td><td>{_e(p['b'])}</td>" + _td(fmt(p["estimate"]), rep, p["source"])
            + _td(interval_text(p["low"], p["high"], p["scope"]), rep, p["source"])
            + f"<td class='num'>{p['problems']}</td><td>{_e(order_text(p))}</td>"
            + f"<td class='num'>{_e(fmt(p.get('p_holm'), 3))}</td>"
            for p in ordered_pairs(rep)[:MAX_PAIR_ROWS]]
    pr = [x for x in problems_lines(rep) if x and not x.startswith(("|", "#"))]
    if pr:
        parts += ["<h3>Problems measured</h3>"] + [f"<p>{_e(x.replace('`', ''))}</p>" for x in pr]
    if body:
        parts += ["<h3>Paired differences</h3>",
                  _table(["A", "B", "A - B", "95% interval (alone)", "problems", "order (all pairs)", "Holm p"],
                         body, "pairs")]
    cats = rep.categories
    body = []
    for r in leaderboard(rep):
        st = rep.stats["agents"].get(r["agent"], {}).get("categories", {})
        body.append(f"<td>{_e(r['agent'])}</td>" + "".join(
            _td("—" if (st.get(c) or {}).get("estimate") is None else
                f"{fmt(st[c]['estimate'], 2)} {interval_text(st[c]['low'], st[c]['high'], st[c]['scope'], 2)}",
                rep, f"{r['uncertainty']['interval_source']}/{c}") for c in cats))
    parts += ["<h3>Category means</h3>", _table(["agent", *cats], body, "category-intervals")]
    judged = [r for r in leaderboard(rep) if r["uncertainty"]["judge_share"] is not None]
    if judged:
        body = [f"<td>{_e(r['agent'])}</td>" + _td(_pct(u["judge_share"]), rep, u["interval_source"])
                + _td(_pct(1 - u["judge_share"]), rep, u["interval_source"])
                for r, u in ((r, r["uncertainty"]) for r in judged)]
        parts += ["<h3>Judge noise</h3>", _table(["agent", "judge share", "attempts share"], body, "judge-noise")]
    parts += ["<h3>How many attempts</h3>", f"<p>{_e(power_sentence(rep))}</p>"]
    return parts


def pass_at_k_html(rep: Report) -> list[str]:
    """The pass@k table of the per-problem section."""
    parts: list[str] = []
    rows = rep.stats.get("pass_at_k") or []
    if rows:
        most = max(r["n"] for r in rows)
        body = [f"<td>{_e(r['agent'])}</td><td>{_e(r['problem'])}</td><td class='num'>{r['n']}</td>"
                f"<td class='num'>{r['c']}</td>" + "".join(
                    _td(fmt(r["values"][k - 1], 2), rep, r["source"]) if k <= r["n"] else "<td></td>"
                    for k in range(1, most + 1)) for r in rows]
        parts += ["<h3>pass@k</h3>", _table(["agent", "problem", "n", "passed", *[f"pass@{k}" for k in
                                                                                    range(1, most + 1)]], body,
                                            "pass-at-k")]
    return parts


def intervals_png(rep: Report) -> bytes:
    """Each agent's mean composite with its 95% interval (hollow: wide, under 6 problems, or about
    these problems only in an earlier document; a cross alone: too few to say), in leaderboard order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lb, left_out = plotted([r for r in leaderboard(rep) if r["composite_mean"] is not None])
    fig, ax = plt.subplots(figsize=(7.0, 0.45 * len(lb) + 1.2), dpi=110)
    for i, r in enumerate(lb):
        y = len(lb) - 1 - i
        kind = r["uncertainty"]["scope"]
        if kind in (PROBLEMS, THESE) and r["composite_ci_low"] is not None:
            ax.plot([r["composite_ci_low"], r["composite_ci_high"]], [y, y], color="#1f4e79", lw=2)
            hollow = kind == THESE or r["uncertainty"].get("note", "").startswith("wide")
            ax.plot(r["composite_mean"], y, "o", color="#1f4e79", mfc="white" if hollow else "#1f4e79")
        else:
            ax.plot(r["composite_mean"], y, "x", color="#888")
    ax.set_yticks(range(len(lb)))
    ax.set_yticklabels([f"{r['agent']} ({r['rank'] or '?'})" for r in reversed(lb)], fontsize=8)
    ax.set_xlim(-2, 102)
    ax.set_xlabel("mean composite with 95% interval (hollow: wide, few problems; x: too few to say)", fontsize=8)
    ax.set_title(f"How sure (scoring {rep.sid}{left_out})", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
