"""The scheduler's accounting in campaign.h5 (docs/store.md, "Accounting"): group `/accounting`,
replaced whole by each `collect` from scheduler/accounting.json (executors/accounting.py):

- `/accounting/allocations`: one row per finished allocation: sched_id, state, nodes, elapsed_s,
  node_hours, max_rss_bytes, start, end, source (the command that said so)
- `/accounting/jobs`: one row per job and allocation: sched_id, job_id, agent, problem, attempt,
  node_hours (its share of the allocation's: wall time x cores)"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

from hpcbench.store.integrity import open_read
from hpcbench.store.layout import COMPRESSION, STR, text

GROUP = "accounting"
ALLOC_COLUMNS = [("sched_id", STR), ("state", STR), ("nodes", "i8"), ("elapsed_s", "f8"), ("node_hours", "f8"),
                 ("max_rss_bytes", "f8"), ("start", STR), ("end", STR), ("source", STR)]
JOB_COLUMNS = [("sched_id", STR), ("job_id", STR), ("agent", STR), ("problem", STR), ("attempt", STR),
               ("node_hours", "f8")]


def read_allocations(scheduler_dir: Path) -> list[dict]:
    """scheduler/accounting.json as `hpcbench collect` wrote it (executors/accounting.py); [] if none."""
    path = scheduler_dir / "accounting.json"
    if not path.is_file():
        return []
    try:
        return list(json.loads(path.read_text()).get("allocations") or [])
    except (OSError, ValueError):
        return []


def write_accounting(f: h5py.File, allocations: list[dict]) -> None:
    """Replace /accounting in an open campaign.h5 (collect holds the store lock)."""
    if GROUP in f:
        del f[GROUP]
    if not allocations:
        return
    g = f.create_group(GROUP)
    rows = np.zeros(len(allocations), dtype=np.dtype(ALLOC_COLUMNS))
    for i, a in enumerate(allocations):
        rows[i] = tuple(a.get(name, 0 if kind != STR else "") for name, kind in ALLOC_COLUMNS)
    jobs = [(a["sched_id"], jid, *(jid.rsplit("__", 2) + ["", "", ""])[:3], share)
            for a in allocations for jid, share in (a.get("jobs") or {}).items()]
    jrows = np.zeros(len(jobs), dtype=np.dtype(JOB_COLUMNS))
    for i, j in enumerate(jobs):
        jrows[i] = j
    for name, arr in (("allocations", rows), ("jobs", jrows)):
        g.create_dataset(name, data=arr, maxshape=(None,), chunks=(max(1, min(4096, len(arr) or 1)),),
                         **COMPRESSION)


def read_accounting(h5_path: Path) -> dict | None:
    """{"allocations": [...], "jobs": [...]} as dicts, or None when the campaign has no accounting."""
    with open_read(h5_path) as f:
        if GROUP not in f:
            return None
        out = {}
        for name in ("allocations", "jobs"):
            arr = f[GROUP][name][()]
            out[name] = [{k: (text(r[k]) if isinstance(r[k], (bytes, str)) else r[k].item()) for k in arr.dtype.names}
                         for r in arr]
        return out


def node_hours_by_agent(acct: dict) -> dict[str, float]:
    out: dict[str, float] = {}
    for j in acct["jobs"]:
        out[j["agent"]] = out.get(j["agent"], 0.0) + float(j["node_hours"])
    return out
