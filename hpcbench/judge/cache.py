"""Judge answers cached by (model, prompt version, sha256 of the rendered prompt).

The cache lives in campaign.h5 under /judge_cache/<key> (one JSON string per
answer), written together with a scoring, and is preserved by `collect` like
/scores. While a scoring runs, each new answer is also appended to a journal
beside campaign.h5, so answers already paid for survive a crash or Ctrl-C; the
next scoring reads the journal, and once its answers are in campaign.h5 the
journal is removed. Only valid answers are cached: a failure is asked again."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import h5py

GROUP = "judge_cache"


def journal_path(h5_path: Path) -> Path:
    return Path(h5_path).with_name(Path(h5_path).name + ".judge-journal.jsonl")


class JudgeCache:
    def __init__(self, h5_path: Path) -> None:
        self.h5_path = Path(h5_path)
        self.journal = journal_path(self.h5_path)
        self._entries: dict[str, dict[str, Any]] = {}
        self._stored: set[str] = set()  # keys already in campaign.h5
        self._fresh: set[str] = set()  # newer than campaign.h5: put now or read from the journal
        self._lock = threading.Lock()
        if self.h5_path.is_file():
            with h5py.File(self.h5_path, "r") as f:
                for key, ds in (f[GROUP].items() if GROUP in f else ()):
                    self._entries[key] = json.loads(ds[()].decode())
                    self._stored.add(key)
        if self.journal.is_file():
            for line in self.journal.read_text().splitlines():
                try:
                    rec = json.loads(line)
                    # The journal is newer than campaign.h5 (it is removed once merged).
                    self._entries[rec["key"]] = rec["entry"]
                    self._fresh.add(rec["key"])
                except (ValueError, KeyError):
                    # a line cut short by a crash mid-write: the rest of the journal is still good
                    continue

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        with self._lock:
            self._entries[key] = entry
            self._fresh.add(key)
            with self.journal.open("a") as fh:
                fh.write(json.dumps({"key": key, "entry": entry}, sort_keys=True) + "\n")
                fh.flush()

    def write_into(self, f: h5py.File) -> int:
        """Add the entries campaign.h5 lacks to an open (temporary copy of) campaign.h5."""
        g = f.require_group(GROUP)
        with self._lock:
            new = [k for k in self._entries if k not in g or k in self._fresh]
            for key in new:
                if key in g:
                    del g[key]  # an entry that could not be read was asked again
                e = self._entries[key]
                ds = g.create_dataset(key, data=json.dumps(e, sort_keys=True), dtype=h5py.string_dtype("utf-8"))
                ds.attrs.update(model=e.get("model", ""), prompt_version=e.get("prompt_version", ""))
        return len(new)

    def committed(self) -> None:
        """campaign.h5 now holds every entry: the journal is no longer needed."""
        with self._lock:
            self._stored.update(self._entries)
            self.journal.unlink(missing_ok=True)
