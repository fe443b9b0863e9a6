"""A full file system is the machine's failure, never the program's.

When the file system holding a job's work folder fills up, compilers, linkers, PETSc and
our own record writes fail with ENOSPC (or EDQUOT under a quota): a build would be scored
"FAIL compilation", a run a crash. A job that sees this writes no record (its rerun starts
afresh once there is space), says so on stderr and exits EXIT_DISK_FULL; the driver then
stops the whole run naming the file system and what was kept (hpcbench/cli/diskfull.py)."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from hpcbench.jobs.records import JobSpec

T = TypeVar("T")

EXIT_DISK_FULL = 75  # sysexits.h EX_TEMPFAIL: try again later
# Below this much room (or this many inodes) a failed step is put down to the file system:
# a build needs a few MB for objects and the binary, a record a few hundred KB.
MIN_FREE_BYTES = 16 << 20
MIN_FREE_INODES = 64
LOW_SHARE = 0.1
_WORDS = ("No space left on device", "Disk quota exceeded", "errno = 28", "errno = 122")


def is_disk_full_error(e: BaseException) -> bool:
    """ENOSPC/EDQUOT, also where a library (h5py) only says so in its message."""
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return isinstance(e, OSError) and any(w in str(e) for w in _WORDS)


def mount_point(path: Path) -> Path:
    p = Path(os.path.abspath(path))
    while not p.exists():
        p = p.parent
    while not os.path.ismount(p):
        p = p.parent
    return p


def free_space(path: Path) -> tuple[int, int, int]:
    """(bytes free to us, bytes in all, inodes free) of the file system holding `path`."""
    p = Path(os.path.abspath(path))
    while not p.exists():
        p = p.parent
    st = os.statvfs(p)
    return st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize, st.f_favail


def is_low(path: Path) -> bool:
    """Little room left (under LOW_SHARE of the file system, or of MIN_FREE_BYTES): where a
    step's own "No space left on device" is believed (jobs/job.py). A compiler or linker that
    ran out of room removes its partial output at once, so a sampler rarely sees the moment the
    file system was full; on a roomy one the words are the program's (`#error No space left`)."""
    try:
        free, total, _ = free_space(path)
    except OSError:
        return False
    return free < LOW_SHARE * max(total, MIN_FREE_BYTES)


def says_full(text: str) -> bool:
    """Whether a failed step's output says it ran out of room."""
    return any(w in text for w in _WORDS)


def is_full(path: Path) -> bool:
    """Too little room left for a build or a record (a small file system: 2% of it)."""
    try:
        free, total, inodes = free_space(path)
    except OSError:
        return False
    return free < min(MIN_FREE_BYTES, total // 50) or inodes < MIN_FREE_INODES


def describe(path: Path) -> str:
    """`the file system at /mnt (holding /mnt/c)`."""
    return f"the file system at {mount_point(path)} (holding {path})"


def room(path: Path) -> str:
    """`12 KB free of 1.2 MB, 10 inodes free` (now)."""
    try:
        free, total, inodes = free_space(path)
        return f"{_size(free)} free of {_size(total)}, {inodes} inodes free"
    except OSError as e:
        return f"size unknown: {e.strerror or e}"


def full_message(path: Path, why: str) -> str:
    return f"{describe(path)} is full ({why}; now {room(path)})"


def _size(n: int) -> str:
    x = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if x < 1024:
            return f"{x:.0f} {unit}" if unit == "bytes" else f"{x:.1f} {unit}"
        x /= 1024
    return f"{x:.1f} TB"


class FullWatch(threading.Thread):
    """Whether the file system holding `path` ran full at any moment while the job ran: other
    jobs free their work folders soon after, so a step that failed for want of room may find
    plenty of it when its job ends. Sampled every PERIOD_S (statvfs costs microseconds)."""

    PERIOD_S = 0.1

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path = path
        self.seen_full = is_full(path)
        self.seen_low = is_low(path)  # little room at some moment (is_low)
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.PERIOD_S):
            if is_full(self.path):
                self.seen_full = True
            if is_low(self.path):
                self.seen_low = True

    def __enter__(self) -> FullWatch:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.seen_full = self.seen_full or is_full(self.path)
        self.seen_low = self.seen_low or is_low(self.path)


class FullJobs(Generic[T]):
    """Jobs that exited for a full file system (EXIT_DISK_FULL), each with what its driver needs
    to start it again: ready again once their file system has room, each at most RETRIES
    times; stuck where room does not come back within ROOM_WAIT_S. The local executor stops the
    run on a stuck one; a packed allocation leaves it unrecorded for the resume."""

    ROOM_WAIT_S = 10.0
    RETRIES = 2

    def __init__(self) -> None:
        self.waiting: dict[str, tuple[JobSpec, T, float]] = {}
        self.tries: Counter[str] = Counter()

    def add(self, job: JobSpec, item: T) -> None:
        self.tries[job.job_id] += 1
        self.waiting[job.job_id] = (job, item, time.monotonic())

    def with_room(self) -> list[T]:
        ready = [jid for jid, (job, _, _) in self.waiting.items()
                 if self.tries[jid] <= self.RETRIES and not is_full(Path(job.work_dir))]
        return [self.waiting.pop(jid)[1] for jid in ready]

    def stuck(self) -> tuple[JobSpec, str] | None:
        for jid, (job, _, since) in self.waiting.items():
            if self.tries[jid] > self.RETRIES:
                return job, f"the file system was full at each of its {self.tries[jid]} tries"
            if time.monotonic() - since >= self.ROOM_WAIT_S:
                return job, f"no room came back within {self.ROOM_WAIT_S:g} s"
        return None
