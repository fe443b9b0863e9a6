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
narrow ones (a queue file guarded by a mutex keeps the waiters). Even then a
narrow waiter may start on the idle cores ahead of it when it is sure to be done
before the blocked wide one could start (EASY backfilling, as batch schedulers
do): a holder writes into its slot files the earliest it can end, a waiter the
longest it can take, both from the job's own earlier runs (jobs/job.py
Runner.bounds); where either is unknown nothing passes. No library does this
for processes that are not children of one parent. Under Slurm and PBS the
packed allocation's driver shares its cores the same way (jobs/pack.py).
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
    max_ns: int = 0  # the longest it will hold its cores (0: unknown)

    def __str__(self) -> str:
        return f"{self.pid}.{self.since_ns}.{self.priority}.{self.cores}.{self.max_ns}"

    @classmethod
    def parse(cls, text: str) -> Waiter | None:
        parts = text.split(".")
        if len(parts) != 5 or not all(p.isdigit() for p in parts):
            return None
        return cls(*(int(p) for p in parts))

    def waited_s(self) -> float:
        return (time.time_ns() - self.since_ns) / 1e9


@dataclass
class Held:
    """When a holder got its cores and how long it waited for them: each build and run
    records both, so a campaign's timeline (and its idle cores) can be read back."""
    started_at: float = 0.0  # Unix time
    waited_s: float = 0.0


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

    def _scan(self) -> tuple[int, list[int]]:
        """(free slots, for each held slot the earliest its holder can end: Unix ns, 0 unknown)."""
        free, ends = 0, []
        for i in range(self.count):
            with open(self.folder / f"slot{i}", "a+") as fh:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    fh.seek(0)
                    text = fh.read().strip()
                    ends.append(int(text) if text.isdigit() else 0)
                    continue
                free += 1  # closing the file drops the probe's lock
        return free, ends

    def _my_turn(self, me: Waiter, queue: list[Waiter]) -> bool:
        """Whether `me` may take slots now: the free slots, served in queue order, reach it.
        A waiter ahead that fits keeps its share; one that does not fit lets the others pass
        until it has waited `patience_s`. From then on it has the next slots that free up
        reserved: behind it, only a waiter that fits and will be done before those holders
        can end may start (backfill)."""
        avail, ends = self._scan()
        now, shadow = time.time_ns(), None
        for w in queue:
            fits = w.cores <= avail and (shadow is None or 0 < w.max_ns <= shadow - now)
            if w == me:
                return fits
            if fits:
                avail -= w.cores
            elif shadow is None and w.waited_s() >= self.patience_s:
                shadow = _reserved_at(w.cores - avail, ends, now)
        return avail >= me.cores and shadow is None

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
    def hold(self, cores: int, min_s: float = 0.0, max_s: float = 0.0) -> Iterator[Held]:
        """`cores` slots for the block; `min_s` and `max_s` bound how long the block will take
        (0: unknown), so that narrow waiters can be let past a blocked wide one safely."""
        k = min(max(1, cores), self.count)
        me = Waiter(os.getpid(), time.time_ns(), priority_from_env(), k, int(max_s * 1e9))
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
                            earliest_end = time.time_ns() + int(min_s * 1e9) if min_s > 0 else 0
                            for fh in held:
                                fh.truncate(0)
                                fh.write(f"{earliest_end}\n")
                                fh.flush()
                if not held:
                    time.sleep(self.poll_s)
            yield Held(time.time(), (time.time_ns() - me.since_ns) / 1e9)
        finally:
            if not held:
                with self._mutex():
                    self._set_queue([w for w in self._queue() if w != me])
            for fh in held:
                fh.close()  # closing drops the flock


def _reserved_at(needed: int, ends: list[int], now: int) -> int:
    """When `needed` more slots will have freed up at the earliest, from the holders' earliest
    ends (Unix ns). An unknown end (0) or one already past could be any moment: `now`, and
    where that decides it nothing backfills."""
    soonest = sorted(max(e, now) for e in ends)
    return soonest[needed - 1] if 0 < needed <= len(soonest) else now


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def hold(cores: int, min_s: float = 0.0, max_s: float = 0.0) -> contextlib.AbstractContextManager[Held]:
    """Slots for `cores` cores when the executor shares the machine, else nothing to wait for."""
    slots = CoreSlots.from_env()
    return slots.hold(cores, min_s, max_s) if slots else contextlib.nullcontext(Held(time.time(), 0.0))
