"""One writer at a time on a campaign's store, and no reader while it writes.

`<campaign>/.store.lock` (filelock) is held by collect for its whole run and by
readers (score, report, explain, agreement) while they read campaign.h5: HDF5
files are not safe to read while another process appends to them. A second
collect therefore waits (saying so on stderr) up to `timeout` seconds, then
fails with a message naming the lock."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from hpcbench.errors import HpcbenchError, env_number

LOCK_NAME = ".store.lock"
TIMEOUT_ENV = "HPCBENCH_STORE_LOCK_TIMEOUT"  # seconds a collect or reader waits for the lock (default 1800)


@contextlib.contextmanager
def store_lock(root: Path, what: str, timeout: float | None = None) -> Iterator[None]:
    path = Path(root) / LOCK_NAME
    lock = FileLock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        wait = env_number(TIMEOUT_ENV, 1800.0) if timeout is None else timeout
        print(f"hpcbench {what}: {path} is held by another collect or reader of this campaign; "
              f"waiting up to {wait:.0f} s", file=sys.stderr, flush=True)
        try:
            lock.acquire(timeout=wait)
        except Timeout:
            raise HpcbenchError(f"{path}: still held after {wait:.0f} s by another hpcbench process "
                                f"(collect, score or report) of this campaign; {what} not done") from None
    try:
        yield
    finally:
        lock.release()
