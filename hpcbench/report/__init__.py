"""Reports from a scored campaign.h5, in markdown, HTML (one self-contained file,
plots embedded), CSV or JSON:

- leaderboard per agent: rank range, mean composite over problems with its 95%
  interval, pass@1, gate pass rate, per-category means; partial composites marked
  with what they leave out
- how sure (uncertainty.py, docs/report.md): paired differences, category intervals,
  judge noise, the smallest detectable difference, pass@k, a plot of means with intervals
- per-problem table: mean composite of each agent on each problem
- per-category profile plot (matplotlib)
- failure taxonomy on two axes: how far each attempt got (generated, compiled,
  ran, passed checks) and why it stopped
- tokens and cost per case: generation (submission.json) and judging (/scores)
- judge agreement, when a second judge scored the same campaign (hpcbench.score.agreement)

Every number names its source: the HDF5 path it was read from and the command
that re-derives it, `hpcbench explain CAMPAIGN PATH` (hpcbench.report.explain)."""


from __future__ import annotations

from pathlib import Path

from hpcbench.errors import HpcbenchError
from hpcbench.report.data import (
    CATEGORIES,
    STAGES,
    Report,
    costs,
    leaderboard,
    load_report,
    per_problem,
    reached,
    refusals,
    submission_rows,
    taxonomy,
)
from hpcbench.report.html import to_html
from hpcbench.report.markdown import report_markdown
from hpcbench.report.plot import profile_png
from hpcbench.report.tabular import to_csv, to_json, to_jsonl, to_parquet

__all__ = ["CATEGORIES", "STAGES", "Report", "costs", "leaderboard", "load_report", "per_problem", "profile_png",
           "reached", "refusals", "render_report", "report_markdown", "submission_rows", "taxonomy", "to_csv",
           "to_html", "to_json", "to_jsonl", "to_parquet", "write_campaign_report", "write_report"]


BROWSE_DIR = "browse"  # the results browser beside report.html (report/browser)


def render_report(h5_path: Path, fmt: str, scoring_id: str | None = None) -> str:
    from hpcbench.report.scaling import sweep_only  # a sweep campaign is not scored: its scaling report

    only = sweep_only(Path(h5_path).parent, fmt) if scoring_id is None else None
    if only is not None:
        return only
    if fmt == "parquet":
        raise HpcbenchError("parquet is binary: write it to a file with --out FILE.parquet")
    return {"md": report_markdown, "json": to_json, "csv": to_csv, "html": to_html, "jsonl": to_jsonl}[fmt](h5_path,
                                                                                                   scoring_id)


def write_report(h5_path: Path, fmt: str, out: Path, scoring_id: str | None = None) -> list[Path]:
    """Write a report file; markdown gets its profile plot as a PNG beside it
    (HTML embeds it). Returns the files written."""
    out = Path(out)
    if fmt == "parquet":
        to_parquet(h5_path, out, scoring_id)
        return [out]
    if fmt == "html" and not (Path(h5_path).parent / "sweep.json").is_file():
        from hpcbench.report.browser import write_static

        rep = load_report(h5_path, scoring_id)
        out.write_text(to_html(h5_path, rep.sid, rep))  # the summary page, which links the browser
        return [out, write_static(h5_path, out.parent / BROWSE_DIR, rep.sid, rep=rep)]
    if fmt != "md" or (Path(h5_path).parent / "sweep.json").is_file():
        out.write_text(render_report(h5_path, fmt, scoring_id))
        return [out]
    rep = load_report(h5_path, scoring_id)
    written = [out]
    plot = None
    if leaderboard(rep):
        png = out.with_name(f"{out.stem}-profile.png")
        png.write_bytes(profile_png(rep))
        plot, written = png.name, [out, png]
    out.write_text(report_markdown(h5_path, rep.sid, plot_file=plot))
    return written


def write_campaign_report(h5_path: Path, report_dir: Path, scoring_id: str) -> str:
    """report.md and report.html (plots embedded) of a scoring into `report_dir`; returns the markdown."""
    md = report_markdown(h5_path, scoring_id)
    report_dir.mkdir(exist_ok=True)
    (report_dir / "report.md").write_text(md)
    write_report(h5_path, "html", report_dir / "report.html", scoring_id)
    return md
