"""The results browser: explore a campaign (sortable, filterable submissions, a page per
submission with its source, build, runs, -log_view events and every evaluator's rationale
and evidence, charts), offline, with nothing fetched from outside.

Two ways to open it, one page (assets/app.js):
- `hpcbench view C` serves it on 127.0.0.1; each submission's page is read from
  campaign.h5 when asked for, so it stays quick at any campaign size;
- `hpcbench report C --format html` writes it as files beside report.html (`browse/`): the
  index of every submission, and details for the first `details_limit` of them (a folder
  that opens from file://; past the limit, pages say to use `hpcbench view`)."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from hpcbench.report.browser.payload import build_payload
from hpcbench.report.data import Report

SHARD = 50  # submissions per details file of the static browser
DETAILS_LIMIT = 500  # static details at most (~50 kB each); the index always holds every submission


def asset(name: str) -> bytes:
    return resources.files("hpcbench.report.browser").joinpath("assets").joinpath(name).read_bytes()


def shell(mode: str) -> str:
    """The one HTML page; the data comes from data/index.js (static) or api/ (served)."""
    data = '<script src="data/index.js"></script>' if mode == "static" else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>hpcbench</title><link rel="stylesheet" href="app.css">
<script>window.HPCB_MODE = {json.dumps(mode)};</script>
<script src="app.js"></script>{data}
</head><body><header><h1 id="title">hpcbench</h1><a href="#/">summary and submissions</a>
<span id="status"></span></header><main id="app">loading...</main><div id="explain"></div></body></html>
"""


def _js(call: str, obj: Any) -> str:
    # ASCII JSON: valid JavaScript whatever the campaign's texts hold (no raw U+2028, no </script>).
    return f"HPCB.{call}({json.dumps(obj, ensure_ascii=True, default=str, separators=(',', ':'))});\n"


def write_static(h5_path: Path, out_dir: Path, scoring_id: str | None = None,
                 details_limit: int = DETAILS_LIMIT, rep: Report | None = None) -> Path:
    """Write the browser into `out_dir` (index.html, app.js, app.css, data/); returns index.html."""
    out_dir = Path(out_dir)
    index, details = build_payload(h5_path, scoring_id, rep)
    shutil.rmtree(out_dir / "data", ignore_errors=True)
    (out_dir / "data" / "sub").mkdir(parents=True)
    n = min(len(index["rows"]), max(0, details_limit))
    index.update(details="static", details_written=n, shard=SHARD,
                 details_note=f"details written for {n} of {len(index['rows'])} submissions")
    (out_dir / "data" / "index.js").write_text(_js("index", index))
    with details.reading():
        for lo in range(0, n, SHARD):
            batch = {i: details.get(i) for i in range(lo, min(n, lo + SHARD))}
            (out_dir / "data" / "sub" / f"{lo // SHARD}.js").write_text(_js("details", batch))
    for name in ("app.js", "app.css"):
        (out_dir / name).write_bytes(asset(name))
    (out_dir / "index.html").write_text(shell("static"))
    return out_dir / "index.html"


__all__ = ["DETAILS_LIMIT", "asset", "shell", "write_static"]
