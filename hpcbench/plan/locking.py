"""One writer per campaign folder: `run` and `submit` hold `<campaign>/.hpcbench.lock`
while they plan and run jobs.

Two drivers planning into one folder would restage each other's submissions and
start the same jobs twice. The lock is an advisory flock (the `filelock` library): the
kernel drops it when its holder dies, even by SIGKILL, so a crashed driver never
leaves the folder locked. Who holds it (pid, host, command, since) is written beside it,
for the message a second writer gets."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from hpcbench.errors import HpcbenchError

LOCK_NAME = ".hpcbench.lock"
OWNER_NAME = ".hpcbench.lock.json"  # not the lock file itself: filelock truncates that on open


class CampaignBusy(HpcbenchError):
    pass


def holder(root: Path) -> str:
    """Who holds (or last held) the lock, in words."""
    try:
        o = json.loads((Path(root) / OWNER_NAME).read_text())
        return f"pid {o['pid']} on {o['host']} since {o['since']}: {o['command']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another hpcbench process"


@contextlib.contextmanager
def campaign_lock(root: Path, wait: bool = False, notify: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the campaign's writer lock. `wait=False`: a held lock raises CampaignBusy at once;
    `wait=True`: says so through `notify` and waits for it."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(root / LOCK_NAME), thread_local=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        who = holder(root)
        if not wait:
            raise CampaignBusy(f"{root}: campaign is in use by {who}; wait for it to finish "
                               "(or pass --wait-lock to wait for it)") from None
        if notify:
            notify(f"waiting for {root}: in use by {who}")
        lock.acquire()
    try:
        (root / OWNER_NAME).write_text(json.dumps({
            "pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(sys.argv),
            "since": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}))
        yield
    finally:
        lock.release()
