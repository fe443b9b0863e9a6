"""Core slots shared by the jobs running at once on one machine.

The local executor runs several jobs side by side; each job spends most of
its time in one-rank builds and runs and only some of it at its widest rank
count. Holding a job's widest width for its whole life left cores idle, so
every build and run instead takes as many slots as it keeps cores busy, just
for as long as it runs, and never more than the machine has: timings are not
distorted by oversubscription between jobs.

Slots are lock files (flock), so a crashed holder frees its slots with its
process. Any waiter that fits takes free slots (a one-rank run does not leave
a core idle behind a two-rank run that cannot start yet), but a waiter older
than `patience_s` goes first and blocks the others until it starts, so a wide
run is never starved by a stream of narrow ones (a queue file guarded by a
mutex keeps the waiters). No
library does this for processes that are not children of one parent;
under Slurm or PBS the allocation is the job's own and slots are not used.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

ENV = "HPCBENCH_CORE_SLOTS"  # "<folder>:<count>", set by the local executor


class CoreSlots:
    poll_s = 0.02
    patience_s = 5.0

    def __init__(self, folder: Path, count: int):
        self.folder, self.count = Path(folder), max(1, int(count))
        self.folder.mkdir(parents=True, exist_ok=True)

    @classmethod
    def from_env(cls) -> CoreSlots | None:
        value = os.environ.get(ENV, "")
        folder, _, count = value.rpartition(":")
        if not folder or not count.isdigit():
            return None
        return cls(Path(folder), int(count))

    @contextlib.contextmanager
    def _mutex(self) -> Iterator[None]:
        with open(self.folder / "mutex", "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _queue(self) -> list[str]:
        path = self.folder / "queue"
        entries = path.read_text().split() if path.is_file() else []
        alive = [e for e in entries if _alive(int(e.split(".")[0]))]
        if alive != entries:
            self._set_queue(alive)
        return alive

    def _set_queue(self, entries: list[str]) -> None:
        (self.folder / "queue").write_text("".join(f"{e}\n" for e in entries))

    def _try_take(self, k: int) -> list:
        held = []
        for i in range(self.count):
            fh = open(self.folder / f"slot{i}", "a")  # noqa: SIM115 (kept open while held)
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                continue
            held.append(fh)
            if len(held) == k:
                return held
        for fh in held:
            fh.close()
        return []

    @contextlib.contextmanager
    def hold(self, cores: int) -> Iterator[None]:
        k = min(max(1, cores), self.count)
        me = f"{os.getpid()}.{time.time_ns()}"
        with self._mutex():
            self._set_queue([*self._queue(), me])
        held: list = []
        try:
            while not held:
                with self._mutex():
                    queue = self._queue()
                    oldest = queue[0] if queue else me
                    waited = (time.time_ns() - int(oldest.split(".")[1])) / 1e9
                    if oldest == me or waited < self.patience_s:
                        held = self._try_take(k)
                        if held:
                            self._set_queue([e for e in queue if e != me])
                if not held:
                    time.sleep(self.poll_s)
            yield
        finally:
            if not held:
                with self._mutex():
                    self._set_queue([e for e in self._queue() if e != me])
            for fh in held:
                fh.close()  # closing drops the flock


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def hold(cores: int) -> contextlib.AbstractContextManager:
    """Slots for `cores` cores when the executor shares the machine, else nothing."""
    slots = CoreSlots.from_env()
    return slots.hold(cores) if slots else contextlib.nullcontext()
