"""Core slots shared by the jobs running at once on one machine.

The local executor runs several jobs side by side; each job spends most of
its time in one-rank builds and runs and only some of it at its widest rank
count. Holding a job's widest width for its whole life left cores idle, so
every build and run instead takes as many slots as it keeps cores busy, just
for as long as it runs, and never more than the machine has: timings are not
distorted by oversubscription between jobs.

Slots are lock files (flock), so a crashed holder frees its slots with its
process. Waiters are served in the order of their job's priority (the executor
gives the jobs with the most work the lowest number, in HPCBENCH_SLOT_PRIORITY),
then of arrival: the longest job's runs go first and the shorter jobs fill the
cores around them, so the campaign does not end with one long job running alone
on a machine that is otherwise idle. A waiter that does not fit yet lets those
behind it take the free slots (a one-rank run does not leave a core idle behind
a two-rank run that cannot start), but once it has waited `patience_s` it
blocks them until it starts, so a wide run is never starved by a stream of
narrow ones (a queue file guarded by a mutex keeps the waiters). No library
does this for processes that are not children of one parent. Under Slurm and
PBS the packed allocation's driver shares its cores the same way (jobs/pack.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ENV = "HPCBENCH_CORE_SLOTS"  # "<folder>:<count>", set by the local executor and the pack driver
PRIORITY_ENV = "HPCBENCH_SLOT_PRIORITY"  # the job's rank by estimated work: 0 the most


@dataclass(frozen=True)
class Waiter:
    pid: int
    since_ns: int
    priority: int
    cores: int

    def __str__(self) -> str:
        return f"{self.pid}.{self.since_ns}.{self.priority}.{self.cores}"

    @classmethod
    def parse(cls, text: str) -> Waiter | None:
        parts = text.split(".")
        if len(parts) != 4 or not all(p.isdigit() for p in parts):
            return None
        return cls(*(int(p) for p in parts))

    def waited_s(self) -> float:
        return (time.time_ns() - self.since_ns) / 1e9


def priority_from_env() -> int:
    value = os.environ.get(PRIORITY_ENV, "")
    return int(value) if value.isdigit() else 1 << 20


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

    def _queue(self) -> list[Waiter]:
        """The live waiters, in the order they are served."""
        path = self.folder / "queue"
        entries = [Waiter.parse(e) for e in (path.read_text().split() if path.is_file() else [])]
        alive = [w for w in entries if w is not None and _alive(w.pid)]
        if len(alive) != len(entries):
            self._set_queue(alive)
        return sorted(alive, key=lambda w: (w.priority, w.since_ns))

    def _set_queue(self, waiters: list[Waiter]) -> None:
        (self.folder / "queue").write_text("".join(f"{w}\n" for w in waiters))

    def _free(self) -> int:
        free = 0
        for i in range(self.count):
            with open(self.folder / f"slot{i}", "a") as fh:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                free += 1  # closing the file drops the probe's lock
        return free

    def _my_turn(self, me: Waiter, queue: list[Waiter]) -> bool:
        """Whether `me` may take slots now: the free slots, served in queue order, reach it.
        A waiter ahead that fits keeps its share; one that does not fit lets the others pass
        until it has waited `patience_s`, then nobody behind it starts before it does."""
        avail = self._free()
        for w in queue:
            if w == me:
                return avail >= me.cores
            if w.cores <= avail:
                avail -= w.cores
            elif w.waited_s() >= self.patience_s:
                return False
        return avail >= me.cores

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
        me = Waiter(os.getpid(), time.time_ns(), priority_from_env(), k)
        with self._mutex():
            self._set_queue([*self._queue(), me])
        held: list = []
        try:
            while not held:
                with self._mutex():
                    queue = self._queue()
                    if self._my_turn(me, queue):
                        held = self._try_take(k)
                        if held:
                            self._set_queue([w for w in queue if w != me])
                if not held:
                    time.sleep(self.poll_s)
            yield
        finally:
            if not held:
                with self._mutex():
                    self._set_queue([w for w in self._queue() if w != me])
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
