"""The per-category profile plot (matplotlib, rendered to PNG)."""

from __future__ import annotations

import io

from hpcbench.report.data import Report, leaderboard, plotted


def profile_png(rep: Report) -> bytes:
    """Grouped bars: each agent's mean score per category (failed gates count 0)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lb, left_out = plotted(leaderboard(rep))
    cats = rep.categories
    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(cats) + 0.4 * len(lb)), 3.6), dpi=110)
    width = 0.8 / max(1, len(lb))
    for i, row in enumerate(lb):
        vals = [row[c] if row[c] is not None else 0.0 for c in cats]
        xs = [k + (i - (len(lb) - 1) / 2) * width for k in range(len(cats))]
        bars = ax.bar(xs, vals, width, label=row["agent"])
        for x, c, b in zip(xs, cats, bars, strict=True):
            if row[c] is None:  # a category without a score is shown as such, not as a zero
                b.set_hatch("//")
                b.set_alpha(0.25)
                ax.text(x, 0.02, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels(cats)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean category score")
    ax.set_title(f"Per-category profile (scoring {rep.sid}{left_out})", fontsize=9)
    ax.legend(fontsize=7, ncol=min(4, max(1, len(lb))), loc="upper center", bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
