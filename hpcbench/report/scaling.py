"""The scaling section of a report: one figure per problem (time against ranks on log-log
axes with the ideal line, efficiency against ranks, the per-event breakdown), agents side
by side, the machine's own baseline beside it, and a table of the numbers with their
sources (`hpcbench explain CAMPAIGN /sweep/points/...` derives each again).

Oversubscribed points are drawn hollow, noisy ones with a cross, failed ones not at all
(their status is in the table): nothing is hidden, nothing failed is plotted as a time."""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path

from hpcbench.safetext import md_code
from hpcbench.sweep.tables import StoredSweep, sweeps_of

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:0.6em 0 1.4em;font-size:0.85em}
th,td{border:1px solid #ccc;padding:0.2em 0.5em;text-align:left} th{background:#f0f3f7}
td.num{text-align:right;font-variant-numeric:tabular-nums} .note{color:#555;font-size:0.9em}
.bad{color:#a00} img.scaling{max-width:100%}
"""


def _f(x: float, nd: int = 3) -> str:
    return "" if x is None or not math.isfinite(x) else f"{x:.{nd}g}"


def figure_png(sw: StoredSweep, problem: str) -> bytes:
    """Time, efficiency and event breakdown of one problem, every agent on the same axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [p for p in sw.analysis.points if p.problem == problem]
    progs = sorted({(p.agent, p.attempt) for p in pts}, key=lambda k: (k[0] != sw.plan.reference, k))
    colors = {k: f"C{i % 10}" for i, k in enumerate(progs)}
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.3), dpi=100)
    ax_t, ax_e, ax_b = axes
    sizes = sorted({p.size for p in pts if p.mode == "strong"})
    styles = ["-", "--", ":", "-."]
    for k in progs:
        mine = [p for p in pts if (p.agent, p.attempt) == k]
        label = f"{k[0]}/{k[1]}"
        for j, size in enumerate(sizes):
            line = sorted((p for p in mine if p.mode == "strong" and p.size == size and p.status == "ok"),
                          key=lambda p: p.ranks)
            if not line:
                continue
            xs, ys = [p.ranks for p in line], [p.time_s for p in line]
            ax_t.plot(xs, ys, styles[j % 4], color=colors[k], label=f"{label} n={size}")
            for p in line:
                ax_t.plot(p.ranks, p.time_s, "o", color=colors[k], mfc="none" if p.oversubscribed else colors[k])
                if p.noisy:
                    ax_t.plot(p.ranks, p.time_s, "x", color="k", ms=9)
            if k[0] == sw.plan.reference:  # the ideal line from the reference's base point
                b = line[0]
                ax_t.plot([b.ranks, xs[-1]], [b.time_s, b.time_s * b.ranks / xs[-1]], ":", color="grey", lw=1)
            e = [p for p in line if math.isfinite(p.efficiency)]
            ax_e.plot([p.ranks for p in e], [p.efficiency for p in e], styles[j % 4], marker="o", color=colors[k],
                      label=f"{label} strong n={size}")
        weak = sorted((p for p in mine if p.mode == "weak" and math.isfinite(p.efficiency)), key=lambda p: p.ranks)
        if weak:
            ax_e.plot([p.ranks for p in weak], [p.efficiency for p in weak], "-.", marker="s", color=colors[k],
                      label=f"{label} weak")
    over = sorted({p.ranks for p in pts if p.oversubscribed})
    for ax in (ax_t, ax_e):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("MPI ranks")
        for r in over:
            ax.axvspan(r / 1.15, r * 1.15, color="#f3d9d9", zorder=0)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("time (s, median of repeats)")
    ax_t.set_title("time vs ranks (dotted grey: ideal from the reference)", fontsize=9)
    ax_t.legend(fontsize=6)
    ax_e.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax_e.set_ylim(0, 1.25)
    ax_e.set_ylabel("parallel efficiency")
    ax_e.set_title("efficiency vs ranks" + (" (shaded: oversubscribed)" if over else ""), fontsize=9)
    ax_e.legend(fontsize=6)
    _breakdown(ax_b, sw, problem, progs)
    fig.suptitle(f"{problem}: scaling sweep ({sw.plan.site}, variant {sw.plan.variant})", fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _breakdown(ax, sw: StoredSweep, problem: str, progs: list) -> None:
    """Each main event's share of the run time against the ranks at the largest strong size:
    colour = event, line style = program. A share that grows with the ranks is where the
    time goes when scaling breaks (nested events overlap: shares do not add up to 1)."""
    ev = [e for e in sw.analysis.events if e.problem == problem and e.mode == "strong" and e.event != "self"]
    if not ev:
        ax.text(0.5, 0.5, "no -log_view events", ha="center", transform=ax.transAxes)
        return
    size = max(e.size for e in ev)
    ev = [e for e in ev if e.size == size]
    names = sorted({e.event for e in ev}, key=lambda n: -max(e.share for e in ev if e.event == n))[:6]
    styles = ["-", "--", ":", "-."]
    for j, k in enumerate(progs):
        for i, n in enumerate(names):
            line = sorted((e for e in ev if (e.agent, e.attempt, e.event) == (*k, n)), key=lambda e: e.ranks)
            if line:
                ax.plot([e.ranks for e in line], [e.share for e in line], styles[j % 4], marker="o", ms=3,
                        color=f"C{i % 10}", label=f"{n} ({k[0]})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("MPI ranks")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of run time")
    ax.set_title(f"-log_view events at n={size} (line style: program)", fontsize=9)
    ax.legend(fontsize=5, ncol=2)


def _table(sw: StoredSweep, problem: str, campaign: str) -> str:
    head = ["program", "mode", "size", "ranks", "nodes", "status", "time s", "spread", "speedup",
            "bandwidth allows", "efficiency", "Karp-Flatt", "ref eff.", "rel. eff.", "marks", "correctness"]
    rows = []
    for p in sorted((p for p in sw.analysis.points if p.problem == problem),
                    key=lambda p: (p.agent != sw.plan.reference, p.agent, p.attempt, p.mode, p.size, p.ranks)):
        src = p.path
        title = html.escape(f"source: {src}\nre-derive: hpcbench explain {campaign} {src}", quote=True)
        marks = ", ".join(m for m, on in (("oversubscribed", p.oversubscribed), ("noisy", p.noisy)) if on)
        bw = bandwidth_speedup(sw, p.base_ranks, p.ranks) if p.mode == "strong" and p.base_ranks else math.nan
        cells = [f"{p.agent}/{p.attempt}", p.mode, str(p.size), str(p.ranks), str(p.nodes), p.status,
                 _f(p.time_s, 4), _f(p.spread, 2), _f(p.speedup), _f(bw), _f(p.efficiency), _f(p.karp_flatt),
                 _f(p.ref_efficiency), _f(p.rel_efficiency), marks, p.correctness or p.reason]
        tds = "".join(f"<td class='num' data-source='{html.escape(src)}' title='{title}'>{html.escape(c)}</td>"
                      if i in (6, 7, 8, 9, 10, 11, 12, 13) else
                      f"<td{' class=bad' if i == 5 and c != 'ok' else ''}>{html.escape(c)}</td>"
                      for i, c in enumerate(cells))
        rows.append(f"<tr>{tds}</tr>")
    ths = "".join(f"<th>{h}</th>" for h in head)
    return f"<table class='scaling'><thead><tr>{ths}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _baseline(sw: StoredSweep) -> str:
    b = sw.baseline
    if not b:
        return ("<p class='note'>Machine baseline: not measured for this sweep (no "
                f"<code>machine/baseline-{html.escape(sw.plan.variant)}.json</code>); efficiencies stand alone.</p>")
    rows = "".join(
        "<tr>" + "".join(f"<td class='num'>{html.escape(_f(math.nan if p.get(c) is None else float(p[c]), 4))}</td>"
                         for c in ("ranks", "nodes", "pingpong_latency_us", "pingpong_bandwidth_MBps",
                                   "allreduce_8B_us", "allreduce_1MB_us", "stream_triad_MBps")) + "</tr>"
        for p in b.get("points", []))
    return (f"<p>Machine baseline (mpi4py, {html.escape(str(b.get('launcher', '')))}; "
            f"{html.escape(str(b.get('mpi_library', '')))}; measured {html.escape(str(b.get('measured_at', '')))}; "
            "source <code>/sweep/baseline</code>):</p><table><thead><tr><th>ranks</th><th>nodes</th>"
            "<th>ping-pong latency us</th><th>bandwidth MB/s</th><th>allreduce 8 B us</th><th>allreduce 1 MB us</th>"
            f"<th>STREAM triad MB/s (all ranks)</th></tr></thead><tbody>{rows}</tbody></table>")


def bandwidth_speedup(sw: StoredSweep, base_ranks: int, ranks: int) -> float:
    """The speedup memory bandwidth allows from `base_ranks` to `ranks`: the machine's STREAM
    triad bandwidth at the two rank counts (NaN without both)."""
    by = {int(p["ranks"]): p.get("stream_triad_MBps") for p in (sw.baseline or {}).get("points", [])}
    a, b = by.get(base_ranks), by.get(ranks)
    return b / a if a and b else math.nan


def section_html(campaign_root: Path) -> str:
    """The scaling section of a campaign's HTML report ("" when it has no sweep)."""
    parts = []
    for sw in sweeps_of(Path(campaign_root)):
        camp = str(sw.path.parent)
        parts.append(f"<h3>Sweep <code>{html.escape(camp)}</code></h3><p class='note'>modes "
                     f"{', '.join(sw.plan.modes)}, {sw.plan.repeats} repeats per point, {sw.plan.cores} cores per "
                     f"node; gated by <code>{html.escape(sw.plan.gated_by or 'the reference only')}</code>. "
                     "Efficiency is computed only from points that ran and gave the right answer; hover a number "
                     "for its source.</p>" + _baseline(sw))
        for ps in sw.plan.problems:
            png = base64.b64encode(figure_png(sw, ps.problem)).decode()
            img = f"<img class='scaling' alt='scaling of {html.escape(ps.problem)}' src='data:image/png;base64,{png}'>"
            parts.append(f"<h4>{html.escape(ps.problem)}</h4>{img}" + _table(sw, ps.problem, camp))
    return "<h2 id='scaling'>Scaling</h2>" + "".join(parts) if parts else ""


def scaling_markdown_lines(campaign_root: Path) -> list[str]:
    """The scaling numbers as markdown tables (the figures are in the HTML report)."""
    lines: list[str] = []
    for sw in sweeps_of(Path(campaign_root)):
        camp = sw.path.parent
        lines += ["", f"## Scaling (sweep {camp})", "",
                  f"Modes {', '.join(sw.plan.modes)}, {sw.plan.repeats} repeats per point; figures in the HTML "
                  f"report. Each row's source: `hpcbench explain {camp} /sweep/points/...` (last column).", "",
                  "| program | problem | mode | size | ranks | status | time s | speedup | bandwidth allows "
                  "| efficiency | rel. eff. | marks | source |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for p in sorted(sw.analysis.points, key=lambda p: (p.problem, p.agent, p.attempt, p.mode, p.size, p.ranks)):
            marks = ", ".join(m for m, on in (("oversubscribed", p.oversubscribed), ("noisy", p.noisy)) if on)
            bw = bandwidth_speedup(sw, p.base_ranks, p.ranks) if p.mode == "strong" and p.base_ranks else math.nan
            lines.append(f"| {md_code(f'{p.agent}/{p.attempt}')} | {p.problem} | {p.mode} | {p.size} | {p.ranks} | "
                         f"{p.status} | {_f(p.time_s, 4)} | {_f(p.speedup)} | {_f(bw)} | {_f(p.efficiency)} | "
                         f"{_f(p.rel_efficiency)} | {marks} | `{p.path}` |")
        if not sw.baseline:
            lines += ["", "Machine baseline: not measured for this sweep."]
    return lines


def sweep_only(campaign_root: Path, fmt: str) -> str | None:
    """The report of a sweep campaign that has no scoring (sweep.json at its root): its scaling
    section alone; None for any other campaign."""
    from hpcbench.store.scorings import list_scorings

    root = Path(campaign_root)
    if not (root / "sweep.json").is_file() or list_scorings(root):
        return None
    if fmt == "html":
        return _page(root, section_html(root))
    if fmt == "md":
        return f"# hpcbench scaling report: {root.name}\n" + "\n".join(scaling_markdown_lines(root)) + "\n"
    raise LookupError(f"{root}: a sweep campaign's report is md or html (its numbers: `hpcbench explain {root} "
                      "/sweep/points`)")


def _page(root: Path, body: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>hpcbench scaling: {html.escape(root.name)}"
            f"</title><style>{_CSS}</style></head><body><h1>hpcbench scaling report: {html.escape(root.name)}</h1>"
            f"{body}</body></html>")


def write_scaling_report(campaign_root: Path, report_dir: Path) -> Path:
    """report/scaling.html (self-contained) and one PNG per problem beside it."""
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    for sw in sweeps_of(Path(campaign_root))[:1]:
        for ps in sw.plan.problems:
            (report_dir / f"scaling-{ps.problem}.png").write_bytes(figure_png(sw, ps.problem))
    out = report_dir / "scaling.html"
    out.write_text(_page(Path(campaign_root), section_html(Path(campaign_root))))
    return out
