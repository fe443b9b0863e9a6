"""The report's "Scheduler accounting" section: node-hours the scheduler charged for the
campaign (its accounting, sacct or qstat -xf, stored by collect in /accounting) and each
agent's share. Empty for a campaign without accounting (the local site)."""

from __future__ import annotations

import html
from pathlib import Path

from hpcbench.safetext import md_code
from hpcbench.store.accounting import node_hours_by_agent, read_accounting


def _rows(h5_path: Path) -> tuple[float, int, list[tuple[str, float]], float] | None:
    acct = read_accounting(Path(h5_path))
    if not acct or not acct["allocations"]:
        return None
    total = sum(float(a["node_hours"]) for a in acct["allocations"])
    rss = max(float(a["max_rss_bytes"]) for a in acct["allocations"])
    return total, len(acct["allocations"]), sorted(node_hours_by_agent(acct).items()), rss


def accounting_markdown_lines(h5_path: Path) -> list[str]:
    got = _rows(h5_path)
    if got is None:
        return []
    total, n, agents, rss = got
    source = sorted({a["source"] for a in (read_accounting(Path(h5_path)) or {}).get("allocations", [])})
    lines = ["", "## Scheduler accounting", "",
             f"{total:.4f} node-hours in {n} allocation(s) as the scheduler accounted them ({', '.join(source)}), "
             f"largest step memory {rss / 2**20:.1f} MiB (`/accounting/allocations`). An allocation's node-hours "
             "are shared among its jobs by wall time x cores (`/accounting/jobs`).", "",
             "| agent | node-hours | share | source |", "|---|---|---|---|"]
    # agents' names are code spans: inert in any markdown renderer
    lines += [f"| {md_code(agent)} | {nh:.4f} | {f'{nh / total:.0%}' if total else '-'} | "
              f"{md_code(f'/accounting/jobs@agent={agent}')} |" for agent, nh in agents]
    return lines


def html_section(h5_path: Path) -> str:
    got = _rows(h5_path)
    if got is None:
        return ""
    total, n, agents, _ = got
    rows = "".join(f"<tr><td>{html.escape(a)}</td><td class='num'>{nh:.4f}</td></tr>" for a, nh in agents)
    return (f"<h2>Scheduler accounting</h2><p>{total:.4f} node-hours in {n} allocation(s), as the scheduler "
            "accounted them (<code>/accounting</code>).</p>"
            f"<table><thead><tr><th>agent</th><th>node-hours</th></tr></thead><tbody>{rows}</tbody></table>")
