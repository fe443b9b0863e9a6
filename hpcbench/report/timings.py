"""The report's account of where the runs ran: how many were seen by the job wrapper on the
cores they were given, which shared a core with another step while they ran (contended: not
clean timings), and how loaded the machine was from outside (ranks waiting for a CPU)."""

from __future__ import annotations

from pathlib import Path

from hpcbench.safetext import md_code

LOADED = 0.25  # as evaluators/performance_case.LOADED_WAIT_SHARE


def timings_markdown_lines(h5_path: Path) -> list[str]:
    from hpcbench.score.scoring import campaign_contention
    from hpcbench.store.read import record_skeletons

    skeletons = record_skeletons(Path(h5_path))
    runs = [(path, i, r) for path, _, rec in skeletons for i, r in enumerate(rec.get("runs", []))]
    if not runs:
        return []
    seen = [r for _, _, r in runs if r.get("affinity")]
    given = [r for _, _, r in runs if (r.get("placement") or {}).get("cpus")]
    waits = [max(a.get("cpu_wait_s", 0.0) for a in r["affinity"]) / r["wall_s"] for r in seen if r.get("wall_s")]
    loaded = sum(w > LOADED for w in waits)
    contended = campaign_contention(Path(h5_path), skeletons)
    bad = [(path, i, why) for path, by in sorted(contended.items()) for i, why in sorted(by.items())]
    lines = ["", "## Where the runs ran", "",
             f"{len(given)} of {len(runs)} runs were given cores of their own (`runs[].placement.cpus`); the job "
             f"wrapper saw the ranks of {len(seen)} (`runs[].affinity`). {len(bad)} build(s) or run(s) shared a core "
             f"with another while they ran (contended: not scored as clean timings). {loaded} run(s) spent more than "
             f"{100 * LOADED:.0f}% of their time waiting for a CPU (load from outside the campaign)."]
    if bad:
        lines += ["", "| run | shared | source |", "|---|---|---|"]
        # paths and labels hold agents' names: code spans, inert in any markdown renderer
        lines += [f"| {md_code(path)} {'build' if i < 0 else f'run {i:03d}'} | {md_code(why)} | "
                  f"{md_code(f'{path}/runs/{i:03d}')} |" for path, i, why in bad[:20]]
    return lines
