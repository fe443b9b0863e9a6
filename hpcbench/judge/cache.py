"""Judge answers cached by (model, prompt version, sha256 of the rendered prompt).

The cache is one append-only file beside campaign.h5, `judge_cache.jsonl`:
one JSON line {key, entry} per answer, appended (and flushed) as soon as the
answer arrives, so an answer paid for survives a crash or Ctrl-C, concurrent
scorings append without losing each other's lines (O_APPEND, one write per
line), and neither campaign.h5 nor a scoring is rewritten for it. A later line
for the same key wins; a line cut short by a crash is skipped. Only valid
answers are cached: a failure is asked again."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

FILE = "judge_cache.jsonl"


def journal_path(h5_path: Path) -> Path:
    """The cache file of the campaign whose campaign.h5 is `h5_path`."""
    return Path(h5_path).with_name(FILE)


class JudgeCache:
    def __init__(self, h5_path: Path) -> None:
        self.path = journal_path(h5_path)
        self._entries: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._cut = False  # the file ends in a line cut short: the next write starts a new line
        if self.path.is_file():
            text = self.path.read_text(errors="replace")
            self._cut = bool(text) and not text.endswith("\n")
            for line in text.splitlines():
                try:
                    rec = json.loads(line)
                    self._entries[rec["key"]] = rec["entry"]
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by a crash mid-write: the rest is still good

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        line = (json.dumps({"key": key, "entry": entry}, sort_keys=True) + "\n").encode()
        with self._lock:
            if self._cut:
                line, self._cut = b"\n" + line, False
            self._entries[key] = entry
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
