"""The sweep's tables in campaign.h5 (docs/store.md, "Sweep tables"): group `/sweep`,
written after collect by `hpcbench sweep`, replaced whole each time (every number in it
is derived from the store's own runs and timings tables plus sweep.json, and
`hpcbench explain CAMPAIGN /sweep/...` derives it again):

- `/sweep/points`: one row per (agent, problem, attempt, mode, size, ranks, nodes)
- `/sweep/events`: one row per point and -log_view event (share of the time, growth)
- `/sweep/baseline`: the machine's own ping-pong, allreduce and STREAM triad per rank count, when measured
- attrs: `plan` (sweep.json), `baseline` (the baseline file as read), `analysed`, `hpcbench_version`,
  `git_commit`, `records` (how many records the analysis read)

A collect that rebuilds campaign.h5 from the records (after a killed collect) drops the
group; `hpcbench sweep --out DIR` (resume) writes it again."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import math
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np

from hpcbench import __version__
from hpcbench.store.integrity import StoreDamaged, mismatch, named_damage, open_read, seal, unseal
from hpcbench.store.layout import STR, filters
from hpcbench.store.lock import store_lock
from hpcbench.sweep.analysis import EventRow, PointRow, SweepAnalysis
from hpcbench.sweep.plan import SweepPlan

GROUP = "sweep"
BASELINE_COLUMNS = [("ranks", "i8"), ("nodes", "i8"), ("pingpong_latency_us", "f8"),
                    ("pingpong_bandwidth_MBps", "f8"), ("allreduce_8B_us", "f8"), ("allreduce_1MB_us", "f8"),
                    ("stream_triad_MBps", "f8")]


def _columns(cls: type) -> list[tuple[str, object]]:
    kinds = {"str": STR, "int": "i8", "float": "f8", "bool": "?"}
    return [(f.name, kinds[str(f.type)]) for f in dataclasses.fields(cls)]


def _array(rows: list, cls: type) -> np.ndarray:
    cols = _columns(cls)
    arr = np.zeros(len(rows), dtype=np.dtype(cols))
    for i, r in enumerate(rows):
        arr[i] = tuple(getattr(r, name) for name, _ in cols)
    return arr


def _table(g: h5py.Group, name: str, arr: np.ndarray) -> None:
    g.create_dataset(name, data=arr, maxshape=(None,), chunks=(max(1, min(4096, len(arr) or 1)),),
                     **filters(arr.dtype))


@contextlib.contextmanager
def _resealed(h5_path: Path) -> Iterator[None]:
    """campaign.h5 changes here: its checksum is dropped first and written again once done."""
    why = mismatch(h5_path)
    if why:
        raise StoreDamaged(f"{h5_path}: damaged ({why}); run `hpcbench collect {h5_path.parent}` to rebuild it")
    unseal(h5_path)
    yield
    seal(h5_path)


def write_sweep(h5_path: Path, plan: SweepPlan, analysis: SweepAnalysis, baseline: dict | None,
                records: int, git_commit: str = "") -> None:
    """Replace /sweep in campaign.h5 (under the store lock: no reader sees half of it)."""
    h5_path = Path(h5_path)
    with store_lock(h5_path.parent, "sweep"), _resealed(h5_path), h5py.File(h5_path, "a") as f:
        if GROUP in f:
            del f[GROUP]
        g = f.create_group(GROUP)
        g.attrs["plan"] = plan.model_dump_json()
        g.attrs["baseline"] = json.dumps(baseline) if baseline else ""
        g.attrs["analysed"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        g.attrs["hpcbench_version"] = __version__
        g.attrs["git_commit"] = git_commit
        g.attrs["records"] = records
        _table(g, "points", _array(analysis.points, PointRow))
        _table(g, "events", _array(analysis.events, EventRow))
        pts = (baseline or {}).get("points", [])
        base = np.zeros(len(pts), dtype=np.dtype(BASELINE_COLUMNS))
        for i, p in enumerate(pts):
            # null where a point has no such figure (no ping-pong partner at 1 rank): NaN, not an error
            base[i] = tuple(float(math.nan if p.get(c) is None else p[c]) if k == "f8" else int(p.get(c) or 0)
                            for c, k in BASELINE_COLUMNS)
        _table(g, "baseline", base)


def table_rows(arr: np.ndarray, cls: type) -> list:
    out = []
    for r in arr:
        d = {}
        for name, _kind in _columns(cls):
            v = r[name]
            d[name] = v.decode() if isinstance(v, bytes) else (v.item() if hasattr(v, "item") else v)
        out.append(cls(**d))
    return out


@dataclasses.dataclass
class StoredSweep:
    path: Path  # the campaign.h5 it was read from
    plan: SweepPlan
    analysis: SweepAnalysis
    baseline: dict | None
    attrs: dict


def read_sweep(h5_path: Path) -> StoredSweep | None:
    """The /sweep group of a campaign.h5, or None when it has none."""
    h5_path = Path(h5_path)
    if not h5_path.is_file():
        return None
    remedy = f"run `hpcbench collect {h5_path.parent}`: it rebuilds campaign.h5 and derives /sweep again"
    with store_lock(h5_path.parent, "read sweep"), named_damage(h5_path, remedy), open_read(h5_path) as f:
        if GROUP not in f:
            return None
        g = f[GROUP]
        attrs = {k: (v.decode() if isinstance(v, bytes) else v.item() if hasattr(v, "item") else v)
                 for k, v in g.attrs.items()}
        an = SweepAnalysis(table_rows(g["points"][()], PointRow), table_rows(g["events"][()], EventRow))
    base = json.loads(attrs["baseline"]) if attrs.get("baseline") else None
    return StoredSweep(h5_path, SweepPlan.model_validate_json(attrs["plan"]), an, base, attrs)


def sweeps_of(campaign_root: Path) -> list[StoredSweep]:
    """The sweeps a campaign's report shows: its own /sweep (a sweep campaign) and those of the
    sweep campaigns under <campaign>/sweeps/ (a sweep started `--from` it)."""
    root = Path(campaign_root)
    found = []
    for h5 in [root / "campaign.h5", *sorted(root.glob("sweeps/*/campaign.h5"))]:
        s = read_sweep(h5)
        if s is not None:
            found.append(s)
    return found
