"""Reading campaign.h5 (store schema 2) back: for scoring (JobResult records
rebuilt from the tables) and for people and tools (`tables()` -> pandas)."""

from __future__ import annotations

import bisect
import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import h5py
import numpy as np

from hpcbench.errors import HpcbenchError
from hpcbench.jobs.records import JobResult
from hpcbench.petsc_headers import PetscApi
from hpcbench.problem import Checks, Problem, is_held_out
from hpcbench.store import layout
from hpcbench.store.integrity import StoreDamaged, mismatch, named_damage
from hpcbench.store.lock import store_lock
from hpcbench.submission import Submission

_s = layout.text  # a string cell as h5py returns it


def check_schema(f: h5py.File) -> None:
    if _s(f.attrs.get("writing", "")):  # first: a file a killed collect was creating has no version yet
        raise HpcbenchError(f"{f.filename}: left half-written by a collect that did not finish "
                            f"({_s(f.attrs['writing'])}); run `hpcbench collect {Path(f.filename).parent}` again")
    version = int(f.attrs.get("schema_version", 1))
    if version != layout.SCHEMA_VERSION:
        raise HpcbenchError(f"{f.filename}: campaign store schema {version}, this hpcbench reads schema "
                            f"{layout.SCHEMA_VERSION}; run `hpcbench collect {Path(f.filename).parent}` to rebuild it "
                            f"from the records (the old file is kept as campaign.v{version}.h5)")


@contextlib.contextmanager
def open_store(h5_path: Path, what: str = "read") -> Iterator[h5py.File]:
    """campaign.h5 opened for reading under the store lock (no collect appends meanwhile)."""
    h5_path = Path(h5_path)
    if not h5_path.is_file():
        raise HpcbenchError(f"{h5_path}: not collected yet; run `hpcbench collect {h5_path.parent}`")
    remedy = f"run `hpcbench collect {h5_path.parent}`: it rebuilds campaign.h5 from the records, losing nothing"
    with store_lock(h5_path.parent, what):
        why = mismatch(h5_path)
        if why:
            raise StoreDamaged(f"{h5_path}: damaged ({why}); {remedy}")
        with named_damage(h5_path, remedy):  # truncated, garbage, a chunk failing Fletcher-32 ...
            f = h5py.File(h5_path, "r")
            with f:
                check_schema(f)
                yield f


class Texts:
    """The /texts byte array read once; `get(off, n)` decodes one text."""

    def __init__(self, f: h5py.File) -> None:
        self.buf = f["texts"][()].tobytes()

    def get(self, off: int, n: int) -> str:
        return self.buf[off:off + n].decode("utf-8", errors="replace") if n else ""


def live_submissions(f: h5py.File) -> np.ndarray:
    subs = f["submissions"][()]
    return subs[subs["live"]]


def strings(f: h5py.File) -> list[str]:
    return [_s(s) for s in f["strings"][()]]


# ----------------------------------------------------------------------------- scoring


@dataclass
class StoredSubmission:
    path: str  # logical path /submissions/<agent>/<problem>/<attempt> (a row of the submissions table)
    meta: Submission
    sources: dict[str, str]
    record: JobResult | None
    status: str


@dataclass
class StoredCampaign:
    attrs: dict
    manifest: dict
    problems: dict[str, tuple[Problem, Checks]]
    submissions: list[StoredSubmission]
    petsc_api: PetscApi | None = None
    references: dict[str, JobResult | None] | None = None  # problem -> its reference's record
    # problem -> case -> its arguments: the published cases and those drawn at planning
    case_args: dict[str, dict[str, list[str]]] | None = None


def read_petsc_api(f: h5py.File) -> PetscApi | None:
    g = f.get("petsc")
    if g is None or "errorcode_functions" not in g:
        return None
    api = PetscApi(version=_s(g.attrs.get("version", "")), source=f"{f.filename}:/petsc")
    api.errorcode_functions = {_s(x) for x in g["errorcode_functions"][()]}
    for name, note in g["deprecated"][()] if "deprecated" in g else ():
        api.deprecated[_s(name)] = _s(note)
    return api


def read_case_args(f: h5py.File, problems: dict[str, tuple[Problem, Checks]]) -> dict[str, dict[str, list[str]]]:
    """Each problem's cases and their arguments: problem.json's and the draw's ("held_out",
    written at collect); a draw that is not the shape collect writes is named, not guessed at."""
    out = {pid: {c.name: list(c.args) for c in p.cases} for pid, (p, _) in problems.items()}
    if "held_out" not in f:
        return out
    try:
        drawn = json.loads(f["held_out"][()].decode()).get("problems", {})
        for pid, cases in drawn.items():
            for c in cases:
                if not (isinstance(c["name"], str) and all(isinstance(a, str) for a in c["args"])):
                    raise TypeError("a case's name and arguments must be text")
                if not is_held_out(c["name"]):  # a drawn case never stands in for a published one
                    raise ValueError(f"case {c['name']!r} is not named as a drawn case")
                out.setdefault(pid, {})[c["name"]] = list(c["args"])
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise HpcbenchError(f"{f.filename}: dataset /held_out is not the draw collect writes ({e!r})") from None
    return out


def _rows(tab: np.ndarray, start: int, n: int) -> np.ndarray:
    return tab[start:start + n]


def rebuild_record(row: np.void, t: dict[str, np.ndarray], texts: Texts, codes: list[str],
                   events: bool) -> JobResult:
    """A JobResult from its skeleton and its rows (log_view events only if `events`)."""
    d = json.loads(texts.get(row["record_off"], row["record_len"]))
    for b in _rows(t["builds"], row["builds_start"], row["builds_n"]):
        d["build"].update(command=texts.get(b["command_off"], b["command_len"]),
                          stdout=texts.get(b["stdout_off"], b["stdout_len"]),
                          stderr=texts.get(b["stderr_off"], b["stderr_len"]),
                          makefile=texts.get(b["makefile_off"], b["makefile_len"]))
    runs = d["runs"]
    for r in _rows(t["runs"], row["runs_start"], row["runs_n"]):
        runs[r["run"]].update(stdout=texts.get(r["stdout_off"], r["stdout_len"]),
                              stderr=texts.get(r["stderr_off"], r["stderr_len"]), leaks=[])
    for lk in _rows(t["leaks"], row["leaks_start"], row["leaks_n"]):
        runs[lk["run"]]["leaks"].append({"rank": int(lk["rank"]), "bytes": int(lk["bytes"]),
                                         "function": codes[lk["function"]], "file": codes[lk["file"]],
                                         "line": int(lk["line"])})
    for v in _rows(t["valgrind"], row["valgrind_start"], row["valgrind_n"]):
        runs[v["run"]]["valgrind"].setdefault("errors", []).append(
            {"kind": codes[v["kind"]], "bytes": int(v["bytes"]), "blocks": int(v["blocks"]),
             "in_submission": bool(v["in_submission"]), "what": texts.get(v["what_off"], v["what_len"]),
             "frames": [x for x in texts.get(v["frames_off"], v["frames_len"]).split("\n") if x]})
    if events:
        for e in _rows(t["log_view"], row["log_view_start"], row["log_view_n"]):
            runs[e["run"]]["log_view"].setdefault("events", []).append(
                {"path": codes[e["stage"]], "name": codes[e["event"]], "time_s": float(e["time_s"]),
                 "time_pct": float(e["time_pct"]), "time_max_ratio": float(e["time_max_ratio"]),
                 "calls_per_parent": float(e["calls_per_parent"]), "mflops": float(e["mflops"]),
                 "mbps": float(e["mbps"]), "reductions_per_s": float(e["reductions_per_s"])})
    d["timings"] = [
        {"case": codes[x["case"]], "ranks": int(x["ranks"]), "repeats": int(x["repeats"]),
         "wall_median_s": float(x["wall_median_s"]), "null_median_s": float(x["null_median_s"]),
         "exec_s": float(x["exec_s"]),
         "petsc_time_median_s": None if np.isnan(x["petsc_time_median_s"]) else float(x["petsc_time_median_s"]),
         "wall_minus_null_s": float(x["wall_minus_null_s"]), "exec_source": codes[x["exec_source"]],
         "oversubscribed": bool(x["oversubscribed"])}
        for x in _rows(t["timings"], row["timings_start"], row["timings_n"])]
    return JobResult.model_validate(d)


def read_campaign_batches(h5_path: Path, events: bool = True, batch: int = 500
                          ) -> tuple[StoredCampaign, Iterator[list[StoredSubmission]]]:
    """The campaign (its `references`: each problem's reference record, filled) and an
    iterator of its submissions, `batch` at a time, records rebuilt as they are
    needed so memory stays bounded at any campaign size. The file is read (tables
    and texts) under the store lock at once; a collect may append once this returns.
    `events=False` skips the -log_view event rows (only the judges' evidence reads them)."""
    with open_store(h5_path, "score") as f:
        attrs = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
        manifest = json.loads(f["manifest"][()].decode())
        problems = {_s(r["id"]): (Problem.model_validate_json(_s(r["problem_json"])),
                                  Checks.model_validate_json(_s(r["checks_json"])))
                    for r in f["problems"][()]}
        subs = live_submissions(f)
        attrs["live_submissions"] = len(subs)
        t = {name: f[name][()] for name in layout.CHILDREN if name != "log_view" or events}
        texts = Texts(f)
        codes = strings(f)
        api = read_petsc_api(f)
        case_args = read_case_args(f, problems)
    order = sorted(range(len(subs)), key=lambda i: (_s(subs[i]["agent"]), _s(subs[i]["problem"]),
                                                     _s(subs[i]["attempt"])))

    def one(row: np.void) -> StoredSubmission:
        meta = Submission.model_validate_json(texts.get(row["submission_json_off"], row["submission_json_len"]))
        sources = json.loads(texts.get(row["sources_off"], row["sources_len"]) or "{}")
        rec = rebuild_record(row, t, texts, codes, events) if row["record_len"] else None
        return StoredSubmission(f"/submissions/{meta.agent}/{meta.problem}/{meta.attempt}", meta, sources, rec,
                                _s(row["status"]))

    refs = {_s(r["problem"]): one(r).record for r in subs if _s(r["agent"]) == "reference"}
    head = StoredCampaign(attrs, manifest, problems, [], api, refs, case_args)

    def batches() -> Iterator[list[StoredSubmission]]:
        for lo in range(0, len(order), batch):
            yield [one(subs[i]) for i in order[lo:lo + batch]]

    return head, batches()


def record_skeletons(h5_path: Path) -> list[tuple[str, str, dict]]:
    """(submission path, agent/problem/attempt, record skeleton as a dict) of every live
    submission with a record: its builds' and runs' times and places without their outputs,
    cheap enough to read whole before scoring (hpcbench/score/contention.py)."""
    with open_store(h5_path, "read") as f:
        return skeletons_of(f)


def skeletons_of(f: h5py.File) -> list[tuple[str, str, dict]]:
    """record_skeletons of a store already open (and locked) by the caller."""
    out = []
    texts = Texts(f)
    for row in live_submissions(f):
        if row["record_len"]:
            label = f"{_s(row['agent'])}/{_s(row['problem'])}/{_s(row['attempt'])}"
            out.append((f"/submissions/{label}", label, json.loads(texts.get(row["record_off"], row["record_len"]))))
    return out


class _SlicedTexts(Texts):
    """Texts read where they lie (a few chunks of /texts), not the whole array."""

    def __init__(self, f: h5py.File, wanted: list[tuple[int, int]] | None = None) -> None:
        # not super().__init__: that reads all of /texts. `wanted` (offset, length): read first,
        # in a few merged ranges, instead of one h5py read per text (~80 per submission: 16k
        # slices were 5 of the 6.5 s that 200 browser pages took)
        self.ds = f["texts"]
        self.windows: list[tuple[int, bytes]] = []
        lo = hi = -1
        for off, n in sorted(wanted or ()):
            if lo >= 0 and off <= hi + GAP:
                hi = max(hi, off + n)
                continue
            if lo >= 0:
                self.windows.append((lo, self.ds[lo:hi].tobytes()))
            lo, hi = off, off + n
        if lo >= 0:
            self.windows.append((lo, self.ds[lo:hi].tobytes()))
        self.starts = [w[0] for w in self.windows]

    def get(self, off: int, n: int) -> str:
        if not n:
            return ""
        off, n = int(off), int(n)
        k = bisect.bisect_right(self.starts, off) - 1
        if k >= 0:
            lo, buf = self.windows[k]
            if off + n <= lo + len(buf):
                return buf[off - lo:off - lo + n].decode("utf-8", errors="replace")
        return self.ds[off:off + n].tobytes().decode("utf-8", errors="replace")


GAP = 1 << 16  # texts this close are read in one range: cheaper than another h5py read


def _texts_wanted(row: np.void, tables: dict[str, np.ndarray]) -> list[tuple[int, int]]:
    """(offset, length) of every text of one submission: its row's and its child rows'."""
    out: list[tuple[int, int]] = []
    groups: list[tuple[str, Any]] = [("submissions", [row]), *tables.items()]
    for table, rows in groups:
        for name in layout.text_columns(table):
            out += [(int(r[f"{name}_off"]), int(r[f"{name}_len"])) for r in rows if r[f"{name}_len"]]
    return out


def submission_index(h5_path: Path) -> tuple[dict[str, int], list[str]]:
    """{logical path /submissions/<agent>/<problem>/<attempt>: row} of the live submissions,
    and the /strings codes (what read_one needs besides the row)."""
    with open_store(h5_path, "index") as f:
        subs = f["submissions"].fields(["agent", "problem", "attempt", "live"])[()]
        codes = strings(f)
    return {f"/submissions/{_s(r['agent'])}/{_s(r['problem'])}/{_s(r['attempt'])}": i
            for i, r in enumerate(subs) if r["live"]}, codes


def read_one(h5_path: Path, row_index: int, codes: list[str] | None = None) -> StoredSubmission:
    """One submission with its record, reading only its own rows and texts: what a results
    browser asks for one page, at any campaign size (`codes`: /strings, read once by the caller)."""
    with open_store(h5_path, "read one") as f:
        return read_row(f, row_index, codes)


class Blocks:
    """Rows of an open store's tables read a block at a time and kept (most recent
    `keep` per table): a batch of pages (a static browser export) reads each block once, where
    one h5py slice per table and page cost ~1 ms each in compound-type conversion alone."""

    SIZE = layout.CHUNK_ROWS  # a block is one chunk of the tables

    def __init__(self, f: h5py.File, keep: int = 16) -> None:
        self.f, self.keep = f, keep
        self.cache: dict[str, dict[int, np.ndarray]] = {}

    def rows(self, name: str, start: int, n: int) -> np.ndarray:
        if n <= 0:
            return self.f[name][0:0]
        first, last = start // self.SIZE, (start + n - 1) // self.SIZE
        parts = [self._block(name, b) for b in range(first, last + 1)]
        block = parts[0] if len(parts) == 1 else np.concatenate(parts)
        lo = start - first * self.SIZE
        return block[lo:lo + n]

    def _block(self, name: str, b: int) -> np.ndarray:
        got = self.cache.setdefault(name, {})
        if b not in got:
            if len(got) >= self.keep:
                got.pop(next(iter(got)))
            got[b] = self.f[name][b * self.SIZE:(b + 1) * self.SIZE]
        return got[b]


def read_row(src: h5py.File | Blocks, row_index: int, codes: list[str] | None = None) -> StoredSubmission:
    """read_one from a store already open (open_store): many pages, one open; `src` Blocks of
    it keeps the tables' blocks between pages."""
    blocks = src if isinstance(src, Blocks) else None
    f = src.f if isinstance(src, Blocks) else src
    row = blocks.rows("submissions", row_index, 1)[0] if blocks else f["submissions"][row_index]
    t = {}
    shifted = cast(np.void, np.array(row, dtype=row.dtype)[()])  # its rows, re-based at 0 in the slices below
    for name in layout.CHILDREN:
        start, n = int(row[f"{name}_start"]), int(row[f"{name}_n"])
        t[name] = blocks.rows(name, start, n) if blocks else f[name][start:start + n]
        shifted[f"{name}_start"] = 0
    texts = _SlicedTexts(f, _texts_wanted(row, t))
    codes = codes if codes is not None else strings(f)
    meta = Submission.model_validate_json(texts.get(row["submission_json_off"], row["submission_json_len"]))
    sources = json.loads(texts.get(row["sources_off"], row["sources_len"]) or "{}")
    rec = rebuild_record(shifted, t, texts, codes, True) if row["record_len"] else None
    return StoredSubmission(f"/submissions/{meta.agent}/{meta.problem}/{meta.attempt}", meta, sources, rec,
                            _s(row["status"]))


def read_campaign(h5_path: Path, events: bool = True) -> StoredCampaign:
    """Everything scoring needs, every record rebuilt (read_campaign_batches bounds memory)."""
    head, batches = read_campaign_batches(h5_path, events)
    head.submissions = [s for b in batches for s in b]
    return head


# ----------------------------------------------------------------------------- pandas


def tables(h5_path: Path, live_only: bool = True) -> dict:
    """Every table of campaign.h5 as a pandas DataFrame: `code` columns resolved to
    their strings, `text` columns to their text, only live submissions' rows."""
    import pandas as pd

    out = {}
    with open_store(h5_path, "read tables") as f:
        codes = np.array(strings(f) or [""], dtype=object)
        texts = Texts(f)
        subs = f["submissions"][()]
        keep = set(subs["sub_id"][subs["live"]].tolist()) if live_only else None
        for name, cols in layout.TABLES.items():
            arr = f[name][()]
            df = pd.DataFrame({c: arr[c] for c in arr.dtype.names if not c.endswith(("_off", "_len"))})
            for col, kind in cols:
                if kind == "code":
                    df[col] = codes[arr[col]] if len(arr) else pd.Series([], dtype=object)
                elif kind == "text":
                    df[col] = [texts.get(o, n) for o, n in zip(arr[f"{col}_off"], arr[f"{col}_len"], strict=True)]
                elif kind == "str":
                    df[col] = [_s(x) for x in arr[col]]
            df = df[[c for c, _ in cols]]
            if keep is not None:
                df = df[df["sub_id"].isin(keep)].reset_index(drop=True)
            out[name] = df
    return out
