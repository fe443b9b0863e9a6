"""Core slots shared by the jobs running at once on one machine.

The local executor runs several jobs side by side; each job spends most of
its time in one-rank builds and runs and only some of it at its widest rank
count. Holding a job's widest width for its whole life left cores idle, so
every build and run instead takes as many slots as it keeps cores busy, just
for as long as it runs, and never more than the machine has: timings are not
distorted by oversubscription between jobs.

Slots are lock files (flock), so a crashed holder frees its slots with its
process. Waiters are served in the order of their priority, then of arrival: a
job's runs carry the work the job has left (jobs/job.py Runner.priority), so the
job with the most left goes first and the shorter ones fill the cores around it,
and the campaign does not end with one long job running alone on a machine that
is otherwise idle (a holder that does not say falls back on its job's start-order
rank in HPCBENCH_SLOT_PRIORITY). A waiter that does not fit yet lets those
behind it take the free slots (a one-rank run does not leave a core idle behind
a two-rank run that cannot start), and where the order would leave free slots
idle the widest waiters go first (a lone one-rank run does not start on an empty
machine while a two-rank run waits); but once a waiter has waited `patience_s` it goes
ahead of every waiter that has not, whatever their priority, and blocks them
until it starts, so a wide run is never starved by a stream of narrow ones
(a queue file guarded by a mutex keeps the waiters). Even then a
narrow waiter may start on the idle cores ahead of it when it is sure to be done
before the blocked wide one could start (EASY backfilling, as batch schedulers
do): a holder writes into its slot files the earliest it can end, a waiter the
longest it can take, both from the job's own earlier runs (jobs/job.py
Runner.bounds); where either is unknown nothing passes. No library does this
for processes that are not children of one parent. Under Slurm and PBS the
packed allocation's driver shares its cores the same way (jobs/pack.py).

The packed allocation's driver keeps its slots in node-local memory (`node_local_root`:
/dev/shm, else $TMPDIR), never on the campaign's file system: on a centre that is Lustre, and
every look of every waiter (up to four job drivers a core) was a metadata operation on its
servers. A waiter that sees nothing change backs off (20 ms doubling to `look_s`), and starts
again at 20 ms when the queue or a release moves.

Slot i is core i of the node's layout (jobs/cores.py; `layout.json` beside the slots, written
by the executor): a holder knows which cores it holds (`Held.cores`), and its run is bound to
exactly those (jobs/binding.py). GPUs are slots too (`gpu<i>` files), taken with the cores,
and a GPU run prefers the cores nearest its GPUs (the layout's `gpu_cores`).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

ENV = "HPCBENCH_CORE_SLOTS"  # "<folder>:<count>", set by the local executor and the pack driver
PRIORITY_ENV = "HPCBENCH_SLOT_PRIORITY"  # the job's rank by estimated work: 0 the most
LAYOUT_FILE = "layout.json"  # jobs/cores.NodeLayout, beside the slots (read here without pydantic: holders start fast)
T = TypeVar("T")


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

    def waited_s(self, now_ns: int) -> float:
        return (now_ns - self.since_ns) / 1e9


@dataclass
class Held:
    """When a holder got its cores, how long it waited for them (each build and run records
    both, so a campaign's timeline and its idle cores can be read back), and which it holds."""
    started_at: float = 0.0  # Unix time
    waited_s: float = 0.0
    cores: list[list[int]] = field(default_factory=list)  # per held core its CPU ids ([]: no slots here)
    gpus: list[str] = field(default_factory=list)
    gpu_env: str = ""


def priority_from_env() -> int:
    value = os.environ.get(PRIORITY_ENV, "")
    return int(value) if value.isdigit() else 1 << 20


RELEASED = "released"  # a byte appended at every release (CoreSlots._say_released)
WORK_SCALE = 10**9  # ms: a priority from work left sorts after every start-order rank in the env


def priority_for(work_left_s: float) -> int:
    """The priority of a job's next step from the core-seconds its job has left: the most work
    left goes first (longest remaining processing time), so the job on the campaign's critical
    path is not the one that ends alone on an otherwise idle allocation."""
    return max(1 << 21, WORK_SCALE - int(work_left_s * 1000))


def node_local_root() -> Path:
    """Where coordination files of one node go: node-local memory (/dev/shm), else $TMPDIR, else
    /tmp; the first that is a writable folder."""
    for cand in ("/dev/shm", os.environ.get("TMPDIR", ""), "/tmp"):
        if cand and os.path.isdir(cand) and os.access(cand, os.W_OK | os.X_OK):
            return Path(cand)
    return Path("/tmp")


class CoreSlots:
    poll_s = 0.02  # a waiter's first nap; doubled while nothing changes, up to look_s
    patience_s = 5.0
    # A waiter takes its full look (the mutex, the queue, a probe of every slot: about a
    # millisecond of Python) only when the queue or the release count changed since its last
    # one, or `look_s` after it: admission also moves with time alone (patience, backfill), and a
    # holder killed outright releases without saying so. Twelve waiters looking every 20 ms burned
    # 0.18 cores doing nothing, 0.08 looking on a change (bench/slot_waiters.py, one run).
    look_s = 0.25

    def __init__(self, folder: Path, count: int):
        self.folder, self.count = Path(folder), max(1, int(count))
        self.folder.mkdir(parents=True, exist_ok=True)

    @functools.cached_property
    def layout(self) -> dict:
        """The node's cores and GPUs (jobs/cores.NodeLayout as JSON); without the file, `count`
        cores of one thread numbered from 0."""
        try:
            d = json.loads((self.folder / LAYOUT_FILE).read_text())
        except (OSError, ValueError):
            d = {}
        return {"cores": d.get("cores") or [[i] for i in range(self.count)], "gpus": d.get("gpus", []),
                "gpu_env": d.get("gpu_env", ""), "gpu_cores": d.get("gpu_cores", [])}

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
        return sorted(alive, key=lambda w: (w.priority, w.since_ns))  # those past their patience: `admitted`

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
        """Whether `me` is among the waiters that take slots now (see `admitted`)."""
        avail, ends = self._scan()
        if me not in queue:  # its entry was lost (a queue file cut short): behind everyone
            queue = [*queue, me]
        return me in admitted(queue, avail, ends, time.time_ns(), self.patience_s)

    def unwanted(self) -> int:
        """Free slots that no waiter fits in now (0 when some waiter could take them): a driver
        with jobs not yet started starts one more when this stays above 0, because only work
        not yet in flight (a new job's one-core build and runs) can use those cores."""
        with self._mutex():
            queue = self._queue()
            free, _ = self._scan()
        return 0 if any(w.cores <= free for w in queue) else free

    def _lock_free(self, names: list[str], k: int) -> list:
        """Locks on the first `k` free files of `names` (in that order), or none."""
        held = []
        for name in names:
            fh = open(self.folder / name, "a")  # noqa: SIM115 (kept open while held)
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

    def _try_take(self, k: int, prefer: list[int] | None = None) -> list:
        """Locks on `k` free core slots (those in `prefer` first), or none."""
        order = list(dict.fromkeys([c for c in prefer or [] if c < self.count] + list(range(self.count))))
        return self._lock_free([f"slot{i}" for i in order], k)

    def _take(self, k: int, gpus: int = 0) -> tuple[list, list]:
        """(core slot locks, GPU locks): `k` cores, preferring those nearest the GPUs taken."""
        names = [f"gpu{i}" for i in range(len(self.layout["gpus"]))]
        gpu_locks = self._lock_free(names, min(gpus, len(names))) if gpus and names else []
        if gpus and names and not gpu_locks:
            return [], []
        held = self._paired(k, [self._gpu_cores(fh.name) for fh in gpu_locks])
        if not held:
            for fh in gpu_locks:
                fh.close()
            return [], []
        return held, gpu_locks

    def _paired(self, k: int, near: list[list[int]]) -> list:
        """`k` core locks, the r-th nearest the run's r-th GPU (binding.py puts rank r on core r and
        gpu_bind gives it GPU r): for each GPU a free core of its nearest, the rest from the
        nearest of all; or none."""
        if not near:
            return self._try_take(k)
        held: list = []
        for ks in near[:k]:
            taken = {int(Path(fh.name).name[4:]) for fh in held}
            one = self._try_take(1, [c for c in ks if c not in taken])
            if not one:
                break
            held += one
        taken = {int(Path(fh.name).name[4:]) for fh in held}
        rest = [c for ks in near for c in ks if c not in taken]
        more = self._lock_free([f"slot{i}" for i in dict.fromkeys([*rest, *range(self.count)]) if i < self.count
                                and i not in taken], k - len(held)) if k > len(held) else []
        if len(held) + len(more) < k:
            for fh in held + more:
                fh.close()
            return []
        return held + more

    def _gpu_cores(self, path: str) -> list[int]:
        i = int(Path(path).name[3:])
        return self.layout["gpu_cores"][i] if i < len(self.layout["gpu_cores"]) else []

    def _what(self, held: list, gpu_locks: list) -> tuple[list[list[int]], list[str]]:
        """The cores (CPU ids each) and GPU ids the locks stand for: slot i is core i of the
        layout (on a job spanning nodes, slot i is core i modulo the cores of a node)."""
        n = len(self.layout["cores"])
        cores = [self.layout["cores"][int(Path(fh.name).name[4:]) % n] for fh in held]
        gpus = [self.layout["gpus"][int(Path(fh.name).name[3:])] for fh in gpu_locks]
        return cores, gpus

    @contextlib.contextmanager
    def hold(self, cores: int, min_s: float = 0.0, max_s: float = 0.0, priority: int | None = None,
             gpus: int = 0) -> Iterator[Held]:
        """`cores` slots (and `gpus` GPUs) for the block; `min_s` and `max_s` bound how long the
        block will take (0: unknown), so that narrow waiters can be let past a blocked wide one
        safely; `priority` (lower first) defaults to the job's start-order rank in the environment."""
        k = min(max(1, cores), self.count)
        prio = priority_from_env() if priority is None else priority
        me = Waiter(os.getpid(), _unique_ns(), prio, k, int(max_s * 1e9))
        with self._mutex():
            self._set_queue([*self._queue(), me])
        held: list = []
        gpu_locks: list = []
        try:
            seen, next_look, nap = None, 0.0, self.poll_s
            while not held:
                now, changes = time.monotonic(), self._changes()
                if changes == seen and now < next_look:
                    time.sleep(nap)
                    nap = min(self.look_s, nap * 2)  # backoff: nothing moved
                    continue
                if changes != seen:
                    nap = self.poll_s  # a release or a new waiter: look again soon
                seen, next_look = changes, now + self.look_s
                with self._mutex():
                    queue = self._queue()
                    if self._my_turn(me, queue):
                        held, gpu_locks = self._take(k, gpus)
                        if held:
                            self._set_queue([w for w in queue if w != me])
                            earliest_end = time.time_ns() + int(min_s * 1e9) if min_s > 0 else 0
                            for fh in held:
                                fh.truncate(0)
                                fh.write(f"{earliest_end}\n")
                                fh.flush()
                if not held:
                    time.sleep(nap)
            mine, my_gpus = self._what(held, gpu_locks)
            yield Held(time.time(), (time.time_ns() - me.since_ns) / 1e9, mine, my_gpus,
                       self.layout["gpu_env"] if my_gpus else "")
        finally:
            if not held:
                with self._mutex():
                    self._set_queue([w for w in self._queue() if w != me])
            for fh in held + gpu_locks:
                fh.close()  # closing drops the flock
            if held or gpu_locks:
                with contextlib.suppress(OSError):  # a folder gone meanwhile: nobody left to tell
                    self._say_released()

    def _changes(self) -> tuple:
        """What a waiter watches between its full looks: the queue file and the release count."""
        out: list = []
        for name in ("queue", RELEASED):
            try:
                st = os.stat(self.folder / name)
                out.append((st.st_size, st.st_mtime_ns))
            except FileNotFoundError:
                out.append(None)
        return tuple(out)

    def _say_released(self) -> None:
        """One more byte in the release count (its size is what waiters compare; it is emptied now
        and then, which they see as a change too)."""
        path = self.folder / RELEASED
        with open(path, "ab") as fh:
            fh.write(b".")
            if fh.tell() > 4096:
                fh.truncate(0)


def admitted(queue: list[Waiter], avail: int, ends: list[int], now: int, patience_s: float) -> list[Waiter]:
    """The waiters of `queue` (in priority order) that take slots now, given `avail` free
    slots and the holders' earliest ends (Unix ns, 0 unknown).

    Waiters past their patience go first, whatever their priority (aging: else the job with
    the most work left keeps one core busy with a stream of one-rank runs while the other
    idles under a two-rank waiter), in order, and the first that does not fit has the next
    slots reserved: behind it only a waiter that fits and will be done before the
    reservation may start (backfill). Without such a reservation the free slots go in
    priority order when that fills them, else to the widest waiters first (stable in
    priority order): a lone one-rank run started on an empty two-core machine leaves the
    other core idle for its whole length while a two-rank run waits."""
    chosen: list[Waiter] = []
    fresh = [w for w in queue if w.waited_s(now) < patience_s]
    shadow = None
    for w in (w for w in queue if w not in fresh):
        if w.cores <= avail and (shadow is None or 0 < w.max_ns <= shadow - now):
            chosen.append(w)
            avail -= w.cores
        elif shadow is None:
            shadow = _reserved_at(w.cores - avail, ends, now)
    if shadow is not None:
        return chosen + _first_fit([w for w in fresh if 0 < w.max_ns <= shadow - now], avail)
    in_order = _first_fit(fresh, avail)
    widest = _first_fit(sorted(fresh, key=lambda w: -w.cores), avail)
    return chosen + (widest if sum(w.cores for w in widest) > sum(w.cores for w in in_order) else in_order)


def _first_fit(waiters: list[Waiter], avail: int) -> list[Waiter]:
    chosen = []
    for w in waiters:
        if w.cores <= avail:
            chosen.append(w)
            avail -= w.cores
    return chosen


def _reserved_at(needed: int, ends: list[int], now: int) -> int:
    """When `needed` more slots will have freed up at the earliest, from the holders' earliest
    ends (Unix ns). An unknown end (0) or one already past could be any moment: `now`, and
    where that decides it nothing backfills."""
    soonest = sorted(max(e, now) for e in ends)
    return soonest[needed - 1] if 0 < needed <= len(soonest) else now


class Admission:
    """Which job a driver starts next on cores shared through the slots. Twice as many jobs
    as cores are kept in flight, in the start order; one more (up to four per core) whenever
    cores have stayed free with no waiter that fits them for `patience` polls in a row
    (every job in flight waits for a wider run): then the narrowest job not yet started,
    whose build and runs can fill them. Without it the last jobs, often narrow, started only
    as others ended and ran alone at the end of a packed allocation."""

    settle_s = 1.0  # a job just started needs about this long to ask for its build's core

    def __init__(self, folder: Path, cores: int, patience: int = 2):
        self.slots, self.base, self.most = CoreSlots(folder, cores), 2 * cores, 4 * cores
        self.patience, self.starved, self.quiet_until = patience, 0, 0.0

    def next(self, queue: list[T], in_flight: int, width: Callable[[T], int]) -> int | None:
        """The index in `queue` of the job to start now, or None (call once per poll)."""
        if not queue:
            return None
        if in_flight < self.base:
            self.starved = 0
            return 0
        if in_flight >= self.most or time.monotonic() < self.quiet_until:
            return None
        self.starved = self.starved + 1 if self.slots.unwanted() > 0 else 0
        if self.starved < self.patience:
            return None
        self.starved, self.quiet_until = 0, time.monotonic() + self.settle_s
        narrowest = min(width(j) for j in queue)
        return next(i for i, j in enumerate(queue) if width(j) == narrowest)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def hold(cores: int, min_s: float = 0.0, max_s: float = 0.0, priority: int | None = None,
         gpus: int = 0) -> contextlib.AbstractContextManager[Held]:
    """Slots for `cores` cores (and `gpus` GPUs) when the executor shares the machine, else
    nothing to wait for (and nothing held: the launcher's or scheduler's own placement)."""
    slots = CoreSlots.from_env()
    return slots.hold(cores, min_s, max_s, priority, gpus) if slots else contextlib.nullcontext(Held(time.time(), 0.0))


_last_ns = 0


def _unique_ns() -> int:
    """A waiter's arrival, never equal to an earlier one of this process (it is part of the
    waiter's identity in the queue file)."""
    global _last_ns
    _last_ns = max(time.time_ns(), _last_ns + 1)
    return _last_ns
