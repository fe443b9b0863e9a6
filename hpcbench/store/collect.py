"""collect: job records and staged submissions -> campaign.h5, incrementally.

A submission is keyed by agent/problem/attempt with a fingerprint (size and
mtime of its submission.json and record). A collect appends the submissions
not yet stored or whose fingerprint changed (a rerun): the old rows are marked
`live = False` and the new ones appended, so an unchanged campaign costs only
the stat() calls. Appends happen in place under the store lock; the root attr
`writing` is set while they do, so a collect killed half-way is noticed by the
next one, which rebuilds the file from the records (campaign.h5 holds nothing
that is not in records/, submissions/ and snapshot/). A new or rebuilt file is
written in place the same way, marker first, so no temporary file exists to be
left behind (one left by an older version is removed). A record that cannot be read is stored as
status "record unreadable" with the file and the reason, and the rest goes on."""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pydantic_core
from pydantic import ValidationError

from hpcbench.errors import HpcbenchError
from hpcbench.jobs.records import JobResult, LogEvent, compact
from hpcbench.plan import snapshot, staging
from hpcbench.plan.campaign import Campaign
from hpcbench.plan.held_out import read_draw, read_performance_draw, read_spec
from hpcbench.store import integrity, layout
from hpcbench.store.accounting import read_allocations, write_accounting
from hpcbench.store.lock import store_lock
from hpcbench.submission import Submission

FLUSH_EVERY = 256  # submissions per batch of appends: bounds memory at any campaign size
# kept in the record skeleton only where no table holds them
_SKELETON_EXCLUDE = {
    "build": {"stdout": True, "stderr": True, "makefile": True, "command": True},
    "runs": {"__all__": {"stdout": True, "stderr": True, "leaks": True, "log_view": {"events"},
                         "valgrind": {"errors"}}},
    "timings": True,
}


_s = layout.text  # a string cell as h5py returns it


def _fingerprint(*paths: Path) -> str:
    parts = []
    for p in paths:
        try:
            st = p.stat()
            parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        except FileNotFoundError:
            parts.append("-")
    return "/".join(parts)


class _Writer:
    """Rows buffered per table and appended in batches; codes and texts assigned as they come."""

    def __init__(self, f: h5py.File) -> None:
        self.f = f
        self.codes = {_s(s): i for i, s in enumerate(f["strings"][()])}
        self.new_strings: list[str] = []
        self.text_parts: list[bytes] = []
        self.text_end = f["texts"].shape[0]
        self.seen_text: dict[bytes, tuple[int, int]] = {}  # identical texts stored once per collect
        self.rows: dict[str, list[tuple]] = {t: [] for t in layout.TABLES}
        self.n = {t: f[t].shape[0] for t in layout.TABLES}
        subs = f["submissions"]
        self.next_sub_id = int(subs["sub_id"].max()) + 1 if subs.shape[0] else 0

    def code(self, s: str) -> int:
        s = layout.storable(s)
        c = self.codes.get(s)
        if c is None:
            c = self.codes[s] = len(self.codes)
            self.new_strings.append(s)
        return c

    def text(self, s: str) -> tuple[int, int]:
        if not s:
            return (0, 0)
        b = s.encode("utf-8", errors="replace")
        if len(b) > 32:
            got = self.seen_text.get(b)
            if got is not None:
                return got
        ref = (self.text_end, len(b))
        self.text_end += len(b)
        self.text_parts.append(b)
        if len(b) > 32:
            self.seen_text[b] = ref
        return ref

    def add(self, table: str, row: tuple) -> int:
        self.rows[table].append(row)
        self.n[table] += 1
        return self.n[table] - 1

    def flush(self) -> None:
        for t, rows in self.rows.items():
            if rows:
                layout.append(self.f[t], layout.storable_rows(np.array(rows, dtype=layout.dtype(t))))
                rows.clear()
        if self.text_parts:
            layout.append(self.f["texts"], np.frombuffer(b"".join(self.text_parts), dtype="u1"))
            self.text_parts.clear()
        self.seen_text.clear()
        if self.new_strings:
            layout.append(self.f["strings"], np.array(self.new_strings, dtype=object))
            self.new_strings.clear()

    # ------------------------------------------------------------------ one submission

    def submission(self, sub: Submission, sub_dir: Path, rec: JobResult | None, events: dict[int, list[tuple]],
                   status: str, reason: str, fingerprint: str) -> None:
        sid = self.next_sub_id
        self.next_sub_id += 1
        sources = {}
        for name in sub.files if not sub.refused else []:
            p = sub_dir / name
            if p.is_file():
                sources[name] = p.read_text(errors="replace")
        start = {t: self.n[t] for t in layout.CHILDREN}
        if rec is not None:
            self._record(sid, rec, events)
        skeleton = rec.model_dump_json(exclude=_SKELETON_EXCLUDE) if rec is not None else ""  # type: ignore[arg-type]
        r = rec
        row: tuple[Any, ...] = (sid, True, sub.agent, sub.problem, sub.attempt, r.job_id if r else "", status, reason,
               sub.generation_error_kind or "", sub.refused, r.hostname if r else "", r.scheduler if r else "",
               r.scheduler_job_id if r else "", r.started if r else "", r.finished if r else "",
               r.wall_s if r else np.nan, r.petsc_version if r else "", r.cores if r else 0, fingerprint,
               *self.text(sub.model_dump_json()), *self.text(json.dumps(sources)), *self.text(skeleton))
        for t in layout.CHILDREN:
            row += (start[t], self.n[t] - start[t])
        self.add("submissions", row)

    def _record(self, sid: int, rec: JobResult, events: dict[int, list[tuple]]) -> None:
        b = rec.build
        if b is not None:
            self.add("builds", (sid, b.exit_code, b.timed_out, b.wall_s, b.stdout_truncated, b.stderr_truncated,
                                self.code(b.isolation), *self.text(b.command), *self.text(b.stdout),
                                *self.text(b.stderr), *self.text(b.makefile)))
        code = self.code
        for i, run in enumerate(rec.runs):
            lv = run.log_view
            self.add("runs", (sid, i, code(run.case), run.ranks, code(run.kind), run.repeat, code(run.variant),
                              -1 if run.exit_code is None else run.exit_code, run.signal or 0, run.timed_out,
                              code(run.stopped_reason), run.wall_s, run.oversubscribed, run.stdout_truncated,
                              run.stderr_truncated, run.stdout_bytes, run.stderr_bytes,
                              np.nan if lv is None or lv.total_time_s is None else lv.total_time_s,
                              np.nan if lv is None or lv.max_memory_bytes is None else lv.max_memory_bytes,
                              run.malloc_dump_seen, code(",".join(run.hostnames)), code(run.isolation),
                              *self.text(run.stdout), *self.text(run.stderr)))
            for path, name, *nums in events.get(i, ()):
                self.add("log_view", (sid, i, code(path), code(name), *nums))
            for lk in run.leaks:
                self.add("leaks", (sid, i, lk.rank, lk.bytes, code(lk.function), code(lk.file), lk.line))
            for ve in run.valgrind.errors if run.valgrind is not None else ():
                self.add("valgrind", (sid, i, code(ve.kind), ve.bytes, ve.blocks, ve.in_submission,
                                      *self.text(ve.what), *self.text("\n".join(ve.frames))))
        for t in rec.timings:
            self.add("timings", (sid, code(t.case), t.ranks, t.repeats, t.wall_median_s, t.null_median_s, t.exec_s,
                                 np.nan if t.petsc_time_median_s is None else t.petsc_time_median_s,
                                 t.wall_minus_null_s, code(t.exec_source), t.oversubscribed))


# ----------------------------------------------------------------------------- collect


def _usable(path: Path) -> bool:
    """A schema-2 store that no killed collect left half-written."""
    try:
        with h5py.File(path, "r") as f:
            return int(f.attrs.get("schema_version", 1)) == layout.SCHEMA_VERSION and not _s(f.attrs.get("writing", ""))
    except OSError:
        return False


def _provenance(f: h5py.File, m, rec: JobResult | None) -> None:
    cpu: dict[str, Any] = next(iter(m.petsc.values()), {})
    for k, v in dict(hpcbench_version=m.hpcbench_version, git_commit=m.git_commit, site=m.site,
                     campaign_id=m.campaign_id, created=m.created,
                     collected=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")).items():
        f.attrs[k] = v
    if rec is not None or "petsc_version" not in f.attrs:
        f.attrs.update(petsc_version=rec.petsc_version if rec else cpu.get("version", ""),
                       petsc_configure_options=rec.petsc_configure_options if rec else cpu.get("configure_options", ""),
                       mpi=rec.mpi_version if rec else "", compilers=json.dumps(rec.compilers if rec else {}))


def _write_static(f: h5py.File, root: Path, m, probs: dict) -> None:
    """Manifest, the snapshot's problems and PETSc API facts: small, rewritten every collect."""
    for name in ("manifest", "problems", "petsc", "held_out", "contamination"):
        if name in f:
            del f[name]
    f.create_dataset("manifest", data=m.model_dump_json(), dtype=layout.STR)
    seed, drawn = read_draw(root)
    if seed is not None:  # the held-out cases and performance arguments drawn at planning, with their seed
        f.create_dataset("held_out", data=json.dumps({"seed": seed, "problems": {
            pid: [c.model_dump(mode="json") for c in cs] for pid, cs in sorted(drawn.items())},
            "performance": read_performance_draw(root), **({"spec": spec} if (spec := read_spec(root)) else {})}),
            dtype=layout.STR)
    contamination = root / "snapshot" / "contamination.json"
    if contamination.is_file():  # each program's nearest PETSc example, measured at planning
        f.create_dataset("contamination", data=contamination.read_text(), dtype=layout.STR)
    rows = [(pid, p.model_dump_json(), c.model_dump_json(), e.get("problem_sha256", ""), e.get("checks_sha256", ""))
            for pid, (p, c, e) in sorted(probs.items())]
    f.create_dataset("problems", data=np.array(rows, dtype=np.dtype(
        [("id", layout.STR), ("problem_json", layout.STR), ("checks_json", layout.STR),
         ("problem_sha256", layout.STR), ("checks_sha256", layout.STR)])))
    api, error = snapshot.read_snapshot_petsc_api(root)
    g = f.create_group("petsc")
    g.attrs["error"] = error
    if api is not None:
        g.attrs.update(version=api.version, source=api.source,
                       method="PETSC_EXTERN/static inline PetscErrorCode declarations, forwarding macros, "
                              "PETSC_DEPRECATED_* markings and 'Level: deprecated' manual pages in <include>/*.h, "
                              "scanned at planning (snapshot/petsc_api)")
        g.create_dataset("errorcode_functions", data=sorted(api.errorcode_functions), dtype=layout.STR)
        g.create_dataset("deprecated", data=np.array(sorted(api.deprecated.items()),
                                                     dtype=np.dtype([("name", layout.STR), ("note", layout.STR)])))


_EVENT_FIELDS = ("time_s", "time_pct", "time_max_ratio", "calls_per_parent", "mflops", "mbps", "reductions_per_s")
_EVENT_DEFAULTS = {f: LogEvent.model_fields[f].default for f in _EVENT_FIELDS}


def _event_rows(events: list) -> list[tuple]:
    """-log_view events as (path, name, numbers...), checked as LogEvent would be: the
    bulk of a record, so converted directly rather than through pydantic."""
    out = []
    for e in events:
        path, name = e.get("path", ""), e["name"]
        if not (isinstance(path, str) and isinstance(name, str)):
            raise ValueError(f"log_view event {name!r}: path and name must be strings")
        out.append((path, name, *(float(e.get(f, _EVENT_DEFAULTS[f])) for f in _EVENT_FIELDS)))
    return out


def _load_record(path: Path) -> tuple[JobResult | None, dict[int, list[tuple]], str]:
    """(the compacted record without its -log_view events, {run index: event rows}, why unreadable)."""
    if not path.is_file():
        return None, {}, ""
    try:
        d = pydantic_core.from_json(path.read_bytes())
        events: dict[int, list[tuple]] = {}
        for i, run in enumerate(d.get("runs") or []):
            lv = run.get("log_view") if isinstance(run, dict) else None
            if isinstance(lv, dict) and lv.get("events"):
                if run.get("kind") == "instrumented":  # what compact() keeps
                    events[i] = _event_rows(lv["events"])
                lv["events"] = []
        return compact(JobResult.model_validate(d)), events, ""
    except (ValidationError, ValueError, TypeError, KeyError, AttributeError, OSError) as e:
        first = str(e).splitlines()
        return None, {}, f"{path}: unreadable record ({type(e).__name__}: {' '.join(first[:3])[:300]})"


def collect(campaign: Campaign, problems_root: Path | None = None, lock_timeout: float | None = None) -> dict:
    """Bring campaign.h5 up to date with records/ and submissions/; returns counts
    (submissions, records, missing, added, replaced, unchanged) and `unreadable`
    (one line per record that could not be read)."""
    del problems_root  # problems come from the plan-time snapshot only
    m = campaign.manifest()
    root = campaign.root
    probs = snapshot.read_problems(root)  # before any work: a campaign without its snapshot is refused
    with store_lock(root, "collect", lock_timeout):
        for stale in root.glob(".campaign.h5.*.tmp"):  # left by a killed collect or score
            stale.unlink(missing_ok=True)
        h5 = campaign.h5_path
        damage = _set_aside_if_damaged(h5)
        if h5.is_file() and not _usable(h5):
            try:
                with h5py.File(h5, "r") as f:
                    # a marked file is ours, left by a killed collect, whatever else it lacks
                    version = -1 if "writing" in f.attrs else int(f.attrs.get("schema_version", 1))
            except OSError:
                version = -1
            if version not in (-1, layout.SCHEMA_VERSION):
                aside = h5.with_name(f"campaign.v{version}.h5")
                os.replace(h5, aside)  # its scorings stay readable there with the version that wrote them
                print(f"collect: {h5} has store schema {version}; moved to {aside} and collecting anew",
                      flush=True)
        rebuild = not (h5.is_file() and _usable(h5))  # none yet, or one a killed collect left marked
        try:
            counts = _collect_into(h5, rebuild, campaign, m, probs)
        except Exception as e:  # a damaged chunk met while appending: the file is derived, so rebuild it
            if rebuild or not integrity.hdf5_failure(e):
                raise
            damage = _set_aside(h5, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
            counts = _collect_into(h5, True, campaign, m, probs)
        integrity.seal(h5)
        counts["rebuilt"] = damage
        return counts


def _set_aside_if_damaged(h5: Path) -> str:
    """A campaign.h5 that fails its checksum or is not HDF5 at all is moved aside (kept for a
    post-mortem) and rebuilt from records/: returns what was wrong and where it went ("": sound)."""
    if not h5.is_file():
        integrity.unseal(h5)
        return ""
    why = integrity.mismatch(h5)
    if not why:
        try:
            with h5py.File(h5, "r"):
                return ""
        except OSError as e:
            why = str(e).splitlines()[0][:200]
    return _set_aside(h5, why)


def _set_aside(h5: Path, why: str) -> str:
    aside = h5.with_name(f"campaign.damaged-{dt.datetime.now().strftime('%Y%m%dT%H%M%S')}.h5")
    os.replace(h5, aside)
    integrity.unseal(h5)
    return f"{h5} was damaged ({why}): kept as {aside.name}, rebuilt from the records"


def _open_for_writing(target: Path, new: bool) -> h5py.File:
    try:
        return h5py.File(target, "w" if new else "a")
    except OSError as e:  # HDF5's own lock: a program outside hpcbench has the file open
        raise HpcbenchError(f"{target}: cannot be opened for writing ({e}); is it open in another program "
                            "(an h5py or pandas session)? Close it and collect again") from None


def _live_rows(subs: h5py.Dataset) -> dict:
    """(agent, problem, attempt) -> (row, fingerprint, has no record by design) of the live rows."""
    stored = {}
    if subs.shape[0]:
        tab = subs.fields(["agent", "problem", "attempt", "fingerprint", "live", "status"])[()]
        for i, (a, p, t, fp, live, st) in enumerate(tab):
            if live:
                stored[(_s(a), _s(p), _s(t))] = (i, _s(fp), _s(st) in ("refused", "generation failed"))
    return stored


def _collect_one(w: _Writer, campaign: Campaign, m, meta_path: Path, old: tuple | None, counts: dict
                 ) -> tuple[bool, JobResult | None]:
    """One submission folder: written when new or changed; returns (written, its record)."""
    agent, problem, attempt = meta_path.parent.parts[-3:]
    rec_path = campaign.record_path(f"{agent}__{problem}__{attempt}")
    fp = _fingerprint(meta_path, rec_path)
    counts["submissions"] += 1
    has_rec = rec_path.is_file()
    if old is not None and old[1] == fp:
        counts["unchanged"] += 1
        counts["records" if has_rec else "missing"] += 0 if not has_rec and old[2] else 1
        return False, None
    try:
        sub = Submission.model_validate_json(meta_path.read_bytes())
    except (ValidationError, ValueError, OSError) as e:
        counts["unreadable"].append(f"{meta_path}: unreadable submission.json ({type(e).__name__})")
        return False, None
    rec, events, why = _load_record(rec_path)
    rec = staging.checked_record(meta_path.parent, sub, rec, required=m.staging > 0)
    if rec is None:
        status = "record unreadable" if why else (
            "refused" if sub.refused else "generation failed" if sub.generation_error else "not run")
        reason = why or (sub.generation_error or "")
        if why:
            counts["unreadable"].append(why)
    else:
        status, reason = rec.status, rec.reason
    if not (sub.refused or sub.generation_error):
        counts["records" if rec else "missing"] += 1
    w.submission(sub, meta_path.parent, rec, events, status, reason, fp)
    counts["replaced" if old is not None else "added"] += 1
    return True, rec


def _collect_into(target: Path, new: bool, campaign: Campaign, m, probs: dict) -> dict:
    counts: dict = {"submissions": 0, "records": 0, "missing": 0, "added": 0, "replaced": 0, "unchanged": 0,
                    "removed": 0, "unreadable": []}
    integrity.unseal(target)  # it changes now; sealed again once complete
    with _open_for_writing(target, new) as f:
        f.attrs["writing"] = f"{socket.gethostname()}:{os.getpid()}"  # first: any state before is marked
        f.flush()
        if new:
            layout.create(f)
        subs = f["submissions"]
        stored = _live_rows(subs)
        w = _Writer(f)
        dead: list[int] = []
        first_rec = None
        pending = 0
        seen = set()
        for meta_path in _submission_files(campaign.submissions_dir):
            key = tuple(meta_path.parent.parts[-3:])
            seen.add(key)
            old = stored.get(key)
            written, rec = _collect_one(w, campaign, m, meta_path, old, counts)
            if not written:
                continue
            if first_rec is None and rec is not None and rec.petsc_version:
                first_rec = rec
            if old is not None:
                dead.append(old[0])
            pending += 1
            if pending >= FLUSH_EVERY:
                w.flush()
                pending = 0
        w.flush()
        gone = [row for key, (row, *_) in stored.items() if key not in seen]  # submission folder removed
        counts["removed"] = len(gone)
        dead += gone
        for i in sorted(dead):
            row = subs[i]
            row["live"] = False
            subs[i] = row
        _write_static(f, campaign.root, m, probs)
        _provenance(f, m, first_rec)
        allocations = read_allocations(campaign.root / "scheduler")  # what the scheduler charged, if asked
        write_accounting(f, allocations)
        counts["allocations"] = len(allocations)
        f.attrs["writing"] = ""
    return counts


def _submission_files(root: Path) -> list[Path]:
    """<root>/<agent>/<problem>/<attempt>/submission.json, sorted (scandir: a re-collect of
    10,000 submissions is mostly this walk and their stat() calls)."""
    def dirs(p: Path | str) -> list[str]:
        try:
            return sorted(e.path for e in os.scandir(p) if e.is_dir())
        except FileNotFoundError:
            return []

    out = [Path(t) / "submission.json" for a in dirs(root) for p in dirs(a) for t in dirs(p)]
    return [p for p in out if os.path.isfile(p)]


__all__ = ["collect", "HpcbenchError"]
