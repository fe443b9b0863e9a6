"""Reading files an untrusted program could have touched: a submission tree, or what a
run left in its folders.

Every path is opened one component at a time relative to a folder we trust, without
following a symbolic link at any component (a `logs/x.xml -> /etc/shadow` or a
`ref -> problems/x/reference` folder would otherwise smuggle other files in), with
O_NONBLOCK (a FIFO is refused instead of blocking the reader for ever), refused
unless it is a regular file with a single link (a hard link would name a file of
somewhere else), and read only up to a cap (a sparse or growing file cannot make the
reader hold more).

Outputs the harness asks an instrument for are created by the driver before the run
and kept open (`HeldFile`): afterwards the driver reads the inode it made, whatever the
program did to the name, and says so when the name no longer leads to it."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeFile(ValueError):
    """A path that is a symlink (at any component), not a regular file, linked elsewhere, or too large."""


def _open_dir_chain(base: Path, parts: tuple[str, ...]) -> int:
    fd = os.open(base, _FLAGS | os.O_DIRECTORY)
    for i, part in enumerate(parts):
        try:
            nxt = os.open(part, _FLAGS | os.O_DIRECTORY, dir_fd=fd)
        except OSError as e:
            os.close(fd)
            if e.errno == errno.ELOOP or os.path.islink(os.path.join(base, *parts[:i + 1])):
                raise UnsafeFile(f"{'/'.join(parts[:i + 1])!r} is a symbolic link") from None
            if e.errno == errno.ENOTDIR:
                raise UnsafeFile(f"{'/'.join(parts[:i + 1])!r} is not a folder") from None
            raise
        os.close(fd)
        fd = nxt
    return fd


def open_untrusted(base: Path, rel: str, single_link: bool = False) -> int:
    """A read-only descriptor of the regular file `base/rel`, opened as the module says.
    FileNotFoundError when it is not there; UnsafeFile with the reason otherwise."""
    parts = PurePosixPath(rel).parts
    if not parts or any(p in ("..", "/") for p in parts):
        raise UnsafeFile(f"{rel!r} is not a plain relative path")
    parent = _open_dir_chain(base, parts[:-1])
    try:
        fd = os.open(parts[-1], _FLAGS | os.O_NONBLOCK, dir_fd=parent)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafeFile(f"{rel!r} is a symbolic link") from None
        raise
    finally:
        os.close(parent)
    st = os.fstat(fd)
    why = "" if stat.S_ISREG(st.st_mode) else f"{rel!r} is not a regular file ({file_kind(st.st_mode)})"
    if not why and single_link and st.st_nlink != 1:
        why = f"{rel!r} has {st.st_nlink} hard links (a link to a file of somewhere else?)"
    if why:
        os.close(fd)
        raise UnsafeFile(why)
    return fd


def file_kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def read_capped(fd: int, max_bytes: int, what: str) -> bytes:
    """At most `max_bytes` from the start of `fd`; UnsafeFile (naming `what`) past that."""
    if os.fstat(fd).st_size > max_bytes:
        raise UnsafeFile(f"{what} is larger than {max_bytes} bytes ({os.fstat(fd).st_size} bytes)")
    chunks, got = [], 0
    while got <= max_bytes:
        chunk = os.pread(fd, max_bytes + 1 - got, got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    if got > max_bytes:  # it grew after fstat
        raise UnsafeFile(f"{what} is larger than {max_bytes} bytes")
    return b"".join(chunks)


def read_untrusted(base: Path, rel: str, max_bytes: int, single_link: bool = False) -> bytes:
    """The bytes of `base/rel` (see open_untrusted), at most `max_bytes` of them."""
    fd = open_untrusted(base, rel, single_link)
    try:
        return read_capped(fd, max_bytes, repr(rel))
    finally:
        os.close(fd)


class CappedReader:
    """A binary file object over `fd` that ends after `max_bytes` (XML parsers stream from it)."""

    def __init__(self, fd: int, max_bytes: int):
        self.fd, self.left, self.pos, self.over = fd, max_bytes, 0, False

    def read(self, n: int = -1) -> bytes:
        n = self.left if n is None or n < 0 else min(n, self.left)
        if n <= 0:
            self.over = self.over or bool(os.pread(self.fd, 1, self.pos))
            return b""
        chunk = os.pread(self.fd, n, self.pos)
        self.pos += len(chunk)
        self.left -= len(chunk)
        return chunk


@dataclass
class HeldFile:
    """An output file created by the driver before a run and held open by it."""

    path: Path
    fd: int
    dev: int
    ino: int

    @classmethod
    def create(cls, folder: Path, name: str) -> HeldFile:
        path = Path(folder) / name
        # Writable by the program's user (the run writes it), never a link followed at creation.
        wfd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        os.close(wfd)
        fd = os.open(path, _FLAGS)
        st = os.fstat(fd)
        return cls(path, fd, st.st_dev, st.st_ino)

    def tampered(self) -> str:
        """Why the name no longer leads to the file the driver made ("" when it does)."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return f"{self.path.name} was removed during the run"
        except OSError as e:
            return f"{self.path.name} cannot be examined: {e.strerror}"
        if (st.st_dev, st.st_ino) != (self.dev, self.ino):
            return f"{self.path.name} was replaced during the run (now {file_kind(st.st_mode)})" \
                if not stat.S_ISREG(st.st_mode) else f"{self.path.name} was replaced by another file during the run"
        return ""

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def read(self, max_bytes: int) -> bytes:
        return read_capped(self.fd, max_bytes, self.path.name)

    def head(self, n: int) -> bytes:
        """The first `n` bytes at most, however large the file."""
        return os.pread(self.fd, n, 0)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
