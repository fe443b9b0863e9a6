"""What the results browser shows, as plain JSON: one index of every submission (a row
each, columns named once) and one detail per submission (its sources, build, runs,
-log_view events, timings beside the reference's, each evaluator's rationale and
evidence). Every number keeps the logical path `hpcbench explain` resolves.

Details are built one at a time from campaign.h5 (store.read.read_one reads only that
submission's rows), so `hpcbench view` answers a page at any campaign size."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hpcbench.report.data import Report, leaderboard, load_report
from hpcbench.score.scoring import TIERS
from hpcbench.store.read import Blocks, StoredSubmission, open_store, read_one, read_row, submission_index
from hpcbench.store.scorings import read_evidence, row_index

COLUMNS = ["agent", "problem", "attempt", "tier", "composite", "partial", "stage", "stop_reason", "status",
           "failed_gate", "build_s", "run_s", "submission", "source"]
SOURCE_CAP = 256 * 1024  # per file shown; the store keeps all of it
OUTPUT_CAP = 64 * 1024  # per stream of a run
EVENTS_SHOWN = 25  # -log_view events of a run, the most expensive first (all in campaign.h5)


def index_payload(rep: Report) -> dict[str, Any]:
    """The summary page and the submissions table: small enough at 10,000 submissions
    (one array per row) to load and filter at once in the browser."""
    cats = rep.categories
    rows = []
    for i, r in enumerate(rep.rows):
        cells = [r.get(c) for c in COLUMNS]
        rows.append([i, *cells, *[(r.get("categories") or {}).get(c) for c in cats]])
    return {
        "campaign": Path(rep.campaign).name, "campaign_dir": rep.campaign, "scoring": rep.sid,
        "provenance": rep.provenance, "weights": rep.weights, "categories": cats,
        "tiers": [{"tier": name, "min": lo} for name, lo in TIERS], "warning": rep.isolation_warning(),
        "errors": rep.errors, "leaderboard": leaderboard(rep), "columns": ["id", *COLUMNS, *cats], "rows": rows,
    }


def _cap(text: str, cap: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= cap else (text[:cap], True)


def _run(r: Any) -> dict[str, Any]:
    d = r.model_dump(mode="json")
    for stream in ("stdout", "stderr"):
        d[stream], cut = _cap(d.get(stream) or "", OUTPUT_CAP)
        d[f"{stream}_cut_here"] = cut
    lv = d.get("log_view") or {}
    events = sorted(lv.get("events") or [], key=lambda e: -(e.get("time_s") or 0.0))
    if lv:
        lv["events_total"] = len(events)
        lv["events"] = events[:EVENTS_SHOWN]
    return d


def _record(sub: StoredSubmission) -> dict[str, Any] | None:
    if sub.record is None:
        return None
    d = sub.record.model_dump(mode="json", exclude={"runs"})
    if d.get("build"):
        for stream in ("stdout", "stderr"):
            d["build"][stream], _ = _cap(d["build"].get(stream) or "", OUTPUT_CAP)
    d["runs"] = [_run(r) for r in sub.record.runs]
    return d


class Details:
    """Per-submission details of one campaign and scoring, built on demand."""

    def __init__(self, h5_path: Path, rep: Report) -> None:
        self.h5_path = Path(h5_path)
        self.sid = rep.sid
        where = row_index(self.h5_path.parent, rep.sid)  # evidence is read per page (read_evidence)
        self.rows = {r["submission"]: (where.get(r["submission"], -1), r) for r in rep.rows}
        self.paths = [r["submission"] for r in rep.rows]  # index id -> logical path
        self.where, self.codes = submission_index(self.h5_path)
        self._ref_timings: dict[str, list] = {}
        self._open: Blocks | None = None

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Pages read from one open store (a static export writes hundreds), not one open each."""
        with open_store(self.h5_path, "write the browser's pages") as f:
            self._open = Blocks(f)
            try:
                yield
            finally:
                self._open = None

    def _read(self, row: int) -> StoredSubmission:
        if self._open is not None:
            return read_row(self._open, row, self.codes)
        return read_one(self.h5_path, row, self.codes)

    def reference_timings(self, problem: str) -> list:
        if problem not in self._ref_timings:
            path = next((p for p in self.where if p.startswith(f"/submissions/reference/{problem}/")), None)
            sub = self._read(self.where[path]) if path else None
            self._ref_timings[problem] = ([t.model_dump(mode="json") for t in sub.record.timings]
                                          if sub is not None and sub.record is not None else [])
        return self._ref_timings[problem]

    def get(self, i: int) -> dict[str, Any]:
        path = self.paths[i]
        sub = self._read(self.where[path])
        row, score = self.rows.get(path) or (-1, {})
        evidence = read_evidence(self.h5_path.parent, self.sid, row) if row >= 0 else {}
        evaluators = [{"name": name, **{k: e.get(k) for k in ("stage", "category", "status", "score", "confidence",
                                                             "rationale", "method", "source")},
                       "evidence": evidence.get(name)} for name, e in (score.get("evaluators") or {}).items()]
        return {
            "id": i, "path": path, "agent": sub.meta.agent, "problem": sub.meta.problem, "attempt": sub.meta.attempt,
            "meta": json.loads(sub.meta.model_dump_json()), "status": sub.status,
            "sources": {n: _cap(t, SOURCE_CAP)[0] for n, t in sub.sources.items()},
            "record": _record(sub),
            "score": {k: score.get(k) for k in ("composite", "tier", "categories", "failed_gate", "partial",
                                                "left_out", "unscored", "status", "source", "stage", "stop_reason")},
            "evaluators": evaluators,
            "reference_timings": self.reference_timings(sub.meta.problem) if sub.meta.agent != "reference" else [],
        }


def build_payload(h5_path: Path, scoring_id: str | None = None, rep: Report | None = None
                  ) -> tuple[dict[str, Any], Details]:
    rep = rep or load_report(h5_path, scoring_id)
    return index_payload(rep), Details(h5_path, rep)
