"""The kernel's disk limit of a step: its working folder is a tmpfs of `disk_mb` (and the
files it starts with) made by bwrap (`--size`, jobs/sandbox.py), so no write, fallocate
included, can hold more than the limit at any instant (ENOSPC past it), and nothing of it
touches the file system the campaign is on.

The tmpfs lives in the sandbox's mount namespace, which ends with the step. Before the step's
program starts (it waits for our word, sandbox.disk_limited), the harness opens the tmpfs's root
through /proc/<pid>/root of a sandbox process: that open folder keeps the file system alive once
the namespace is gone. The disk watch reads it while the step runs (how full, how many inodes);
when every process of the step is gone, what it left is copied into the host folder the step
started from (the build's binary and objects, a run's malloc dump, a kept work folder), bounded
by the limit by construction, then the tmpfs is let go. A step stopped past a limit has nothing
copied out: its files go at once."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import time
from collections.abc import Callable
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


def _descendants(pid: int, depth: int = 3) -> list[int]:
    """`pid`'s children, grandchildren ... (bwrap, its namespace's init, the step's first command)."""
    found, level = [], [pid]
    for _ in range(depth):
        nxt = []
        for p in level:
            with contextlib.suppress(OSError):
                for task in os.listdir(f"/proc/{p}/task"):
                    with contextlib.suppress(OSError):
                        nxt += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
        found += nxt
        level = nxt
    return found


def free_folders(folders: list[Path]) -> None:
    """Remove everything under `folders` (kept themselves), whatever modes the program set."""
    stack = [str(f) for f in folders]
    while stack:  # folders opened up first: one the program made unreadable is still removed
        d = stack.pop()
        with contextlib.suppress(OSError):
            os.chmod(d, 0o700)
            with os.scandir(d) as it:
                stack += [e.path for e in it if e.is_dir(follow_symlinks=False)]
    for folder in folders:
        with contextlib.suppress(OSError), os.scandir(folder) as it:
            for e in list(it):
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(e.path)


class CappedFolder:
    """The tmpfs a kernel-capped step works in, held open by the harness (`fd`)."""

    def __init__(self, fd: int, size: int, host: Path):
        self.fd, self.size, self.host = fd, size, host

    @property
    def root(self) -> Path:
        """A path to the tmpfs's root that works after the sandbox is gone."""
        return Path(f"/proc/self/fd/{self.fd}")

    @classmethod
    def attach(cls, pid: int, inside: Path, size: int, host: Path, timeout_s: float,
               alive: Callable[[], bool]) -> CappedFolder | None:
        """The tmpfs of `size` bytes mounted at `inside` in the sandbox under `pid` (bwrap), once
        it exists; None when no process of it shows one within `timeout_s` or bwrap ended first
        (`alive`: it failed to start)."""
        host_dev = os.stat(host).st_dev
        deadline, pause = time.monotonic() + timeout_s, 0.001
        while True:
            for p in _descendants(pid):
                try:
                    fd = os.open(f"/proc/{p}/root{inside}", _DIR)
                except OSError:
                    continue
                st, vfs = os.fstat(fd), os.fstatvfs(fd)
                # the tmpfs itself: not the host folder (mounts not made yet) nor bwrap's own root
                if st.st_dev != host_dev and vfs.f_blocks * vfs.f_frsize == size:
                    return cls(fd, size, host)
                os.close(fd)
            if time.monotonic() >= deadline or not alive():
                return None
            time.sleep(pause)
            pause = min(0.005, pause * 2)

    def room(self) -> int:
        """Bytes free in the tmpfs now."""
        vfs = os.fstatvfs(self.fd)
        return vfs.f_bavail * vfs.f_frsize

    def at_limit(self) -> bool:
        """Whether the step has (near enough) all its blocks: a write that did not fit brought it
        there (a program that halves its fallocate until one fits leaves a page or two)."""
        return self.room() < max(64 << 10, self.size >> 8)

    def copy_out(self, max_entries: int) -> None:
        """What the step left, into its host folder (emptied first: it mirrors the tmpfs): files
        (their data only, holes kept: the tmpfs held at most `size` bytes, so does the copy),
        folders, symbolic links and FIFOs as they were (the harness's readers refuse the last
        two by name, jobs/untrusted_files.py), anything else left out; at most `max_entries`."""
        free_folders([self.host])
        stack, seen = [(self.root, self.host)], 0
        modes: list[tuple[Path, int]] = []
        while stack:
            src, dest = stack.pop()
            with contextlib.suppress(OSError):
                os.chmod(src, stat.S_IMODE(os.lstat(src).st_mode) | 0o700)  # one it made unreadable
            try:
                entries = list(os.scandir(src))
            except OSError:
                continue
            for e in entries:
                seen += 1
                if seen > max_entries:
                    return
                try:
                    self._copy_entry(e, dest / e.name, stack, modes)
                except OSError as err:
                    if err.errno in (errno.ENOSPC, errno.EDQUOT):
                        raise  # the campaign's file system is full: the job's full-disk path
                    continue  # one entry the step made uncopyable (its own loss)
        for path, mode in reversed(modes):
            os.chmod(path, mode)

    @staticmethod
    def _copy_entry(e: os.DirEntry, target: Path, stack: list[tuple[Path, Path]],
                    modes: list[tuple[Path, int]]) -> None:
        st = e.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            target.mkdir()
            modes.append((target, stat.S_IMODE(st.st_mode) | 0o700))
            stack.append((Path(e.path), target))
        elif stat.S_ISREG(st.st_mode):
            if not st.st_mode & stat.S_IRUSR:  # one it made unreadable (ours: the same user)
                os.chmod(e.path, stat.S_IMODE(st.st_mode) | stat.S_IRUSR)
            _copy_file(Path(e.path), target, stat.S_IMODE(st.st_mode) & 0o777)
        elif stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(e.path), target)
        elif stat.S_ISFIFO(st.st_mode):
            os.mkfifo(target, 0o600)

    def close(self) -> None:
        """The tmpfs goes with the last reference to it (this one, once the sandbox is gone)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _copy_file(src: Path, dest: Path, mode: int) -> None:
    """The data extents of `src` (SEEK_DATA/SEEK_HOLE: a sparse file stays sparse)."""
    fin = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        fout = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            size, pos = os.fstat(fin).st_size, 0
            while pos < size:
                try:
                    start = os.lseek(fin, pos, os.SEEK_DATA)
                except OSError as e:
                    if e.errno == errno.ENXIO:  # only a hole is left
                        break
                    raise
                end = os.lseek(fin, start, os.SEEK_HOLE)
                while start < end:
                    chunk = os.pread(fin, min(_CHUNK, end - start), start)
                    if not chunk:
                        break
                    os.pwrite(fout, chunk, start)
                    start += len(chunk)
                pos = end
            os.ftruncate(fout, size)
            os.fchmod(fout, mode)
        finally:
            os.close(fout)
    finally:
        os.close(fin)
