"""campaign.h5 (store schema 2): one row per thing, in resizable compressed tables.

Column kinds: numbers and booleans as they are; `code` columns are int32 indices
into /strings (a dictionary of repeated short strings: event names, cases, kinds);
`text` columns are a pair `<name>_off`, `<name>_len` (int64) addressing UTF-8
bytes in /texts, one chunked, compressed byte array holding every long text
(sources, stdout/stderr, build logs, record skeletons). docs/store.md documents
every column; `hpcbench.store.tables()` loads them into pandas with codes and
texts resolved."""

from __future__ import annotations

import math

import h5py
import numpy as np

SCHEMA_VERSION = 2
STR = h5py.string_dtype("utf-8")
CHUNK_ROWS = 4096
TEXT_CHUNK = 1 << 18
COMPRESSION = {"compression": "gzip", "compression_opts": 4, "shuffle": True}


def filters(dt: np.dtype | str) -> dict:
    """COMPRESSION plus Fletcher-32, a per-chunk checksum HDF5 checks on every read
    (store/integrity.py), for a dtype without variable-length strings (HDF5 refuses the
    checksum filter on those: "not suitable for filters"; their heap data is not in the chunks)."""
    d = np.dtype(dt)
    vlen = any(h5py.check_string_dtype(d[n]) is not None for n in d.names) if d.names else (
        h5py.check_string_dtype(d) is not None)
    return COMPRESSION if vlen else {**COMPRESSION, "fletcher32": True}

# (column, kind): kind is a numpy dtype string, "str" (short, stored inline), "code" or "text"
TABLES: dict[str, list[tuple[str, str]]] = {
    "submissions": [
        ("sub_id", "i8"), ("live", "?"), ("agent", "str"), ("problem", "str"), ("attempt", "str"),
        ("job_id", "str"), ("status", "str"), ("reason", "str"), ("generation_error_kind", "str"),
        ("refused", "?"), ("hostname", "str"), ("scheduler", "str"), ("scheduler_job_id", "str"),
        ("started", "str"), ("finished", "str"), ("wall_s", "f8"), ("petsc_version", "str"), ("cores", "i4"),
        ("fingerprint", "str"), ("submission_json", "text"), ("sources", "text"), ("record", "text"),
        ("builds_start", "i8"), ("builds_n", "i4"), ("runs_start", "i8"), ("runs_n", "i4"),
        ("timings_start", "i8"), ("timings_n", "i4"), ("leaks_start", "i8"), ("leaks_n", "i4"),
        ("valgrind_start", "i8"), ("valgrind_n", "i4"), ("log_view_start", "i8"), ("log_view_n", "i4"),
    ],
    "builds": [
        ("sub_id", "i8"), ("exit_code", "i4"), ("timed_out", "?"), ("wall_s", "f8"),
        ("stdout_truncated", "?"), ("stderr_truncated", "?"), ("isolation", "code"),
        ("command", "text"), ("stdout", "text"), ("stderr", "text"), ("makefile", "text"),
    ],
    "runs": [
        ("sub_id", "i8"), ("run", "i4"), ("case", "code"), ("ranks", "i4"), ("kind", "code"), ("repeat", "i4"),
        ("variant", "code"), ("exit_code", "i4"), ("signal", "i4"), ("timed_out", "?"),
        ("stopped_reason", "code"), ("wall_s", "f8"), ("oversubscribed", "?"), ("stdout_truncated", "?"),
        ("stderr_truncated", "?"), ("stdout_bytes", "i8"), ("stderr_bytes", "i8"), ("petsc_time_s", "f8"),
        ("max_memory_bytes", "f8"), ("malloc_dump_seen", "?"), ("hostnames", "code"), ("isolation", "code"),
        ("stdout", "text"), ("stderr", "text"),
    ],
    "timings": [
        ("sub_id", "i8"), ("case", "code"), ("ranks", "i4"), ("repeats", "i4"), ("wall_median_s", "f8"),
        ("null_median_s", "f8"), ("exec_s", "f8"), ("petsc_time_median_s", "f8"), ("wall_minus_null_s", "f8"),
        ("exec_source", "code"), ("oversubscribed", "?"),
    ],
    "log_view": [
        ("sub_id", "i8"), ("run", "i4"), ("stage", "code"), ("event", "code"), ("time_s", "f8"),
        ("time_pct", "f8"), ("time_max_ratio", "f8"), ("calls_per_parent", "f8"), ("mflops", "f8"),
        ("mbps", "f8"), ("reductions_per_s", "f8"),
    ],
    "leaks": [
        ("sub_id", "i8"), ("run", "i4"), ("rank", "i4"), ("bytes", "i8"), ("function", "code"),
        ("file", "code"), ("line", "i4"),
    ],
    "valgrind": [
        ("sub_id", "i8"), ("run", "i4"), ("kind", "code"), ("bytes", "i8"), ("blocks", "i8"),
        ("in_submission", "?"), ("what", "text"), ("frames", "text"),
    ],
}
CHILDREN = ["builds", "runs", "timings", "leaks", "valgrind", "log_view"]


def text_columns(table: str) -> list[str]:
    """The `text` columns of a table (each stored as `<name>_off`, `<name>_len`)."""
    return [name for name, kind in TABLES[table] if kind == "text"]


def dtype(table: str) -> np.dtype:
    fields: list[tuple[str, object]] = []
    for name, kind in TABLES[table]:
        if kind == "text":
            fields += [(f"{name}_off", "i8"), (f"{name}_len", "i8")]
        elif kind == "code":
            fields.append((name, "i4"))
        elif kind == "str":
            fields.append((name, STR))
        else:
            fields.append((name, kind))
    return np.dtype(fields)


def create(f: h5py.File) -> None:
    """An empty schema-2 store in a new file."""
    f.attrs["schema_version"] = SCHEMA_VERSION
    f.attrs["format"] = "hpcbench campaign store"
    for t in TABLES:
        f.create_dataset(t, shape=(0,), maxshape=(None,), dtype=dtype(t), chunks=(CHUNK_ROWS,), **filters(dtype(t)))
    f.create_dataset("texts", shape=(0,), maxshape=(None,), dtype="u1", chunks=(TEXT_CHUNK,), **filters("u1"))
    f.create_dataset("strings", shape=(0,), maxshape=(None,), dtype=STR, chunks=(1024,), **COMPRESSION)


def append(ds: h5py.Dataset, rows: np.ndarray) -> int:
    """Append rows; returns the index of the first."""
    start = ds.shape[0]
    if len(rows):
        ds.resize((start + len(rows),))
        ds[start:] = rows
    return start


def storable(s: str) -> str:
    """A short string HDF5 can hold: its variable-length strings end at NUL, so a NUL (from a
    submission's metadata or a program's output) is written as the four characters \\x00."""
    return s.replace("\x00", "\\x00") if "\x00" in s else s


def storable_rows(rows: np.ndarray) -> np.ndarray:
    """`rows` with every inline string made storable (see storable)."""
    for name in rows.dtype.names or ():
        if rows.dtype[name] == STR:
            col = rows[name]
            for i, v in enumerate(col):
                if isinstance(v, str) and "\x00" in v:
                    col[i] = storable(v)
    return rows


def text(x: object) -> str:
    """A string cell as h5py returns it (bytes, or str for variable-length strings)."""
    return x.decode() if isinstance(x, bytes) else str(x)


def nan_to_none(x: object) -> float | None:
    """A float cell, None where it is missing (None) or NaN (the store's "no value")."""
    if x is None:
        return None
    v = float(x)  # type: ignore[arg-type]
    return None if math.isnan(v) else v
