"""Store files carry checksums, and damage is named with what to do.

Two layers: the chunked datasets of campaign.h5 and of a scoring are written with HDF5's
Fletcher-32 filter where HDF5 allows it (layout.filters: not on variable-length strings), so
a damaged chunk fails the read that meets it instead of decoding into wrong numbers; and each
file, once complete, gets a sidecar `<file>.sha256` (sha256 of the whole file), checked
before the file is used, so damage
anywhere (also in parts a reader would not touch, which collect would otherwise report as
"unchanged") is found. campaign.h5 is derived from records/, so collect rebuilds a damaged
one (setting the old file aside); a scoring is written once, so a damaged one is listed and
skipped, and `score` writes a new one. Files written before sidecars existed are used as
they are (they can still fail a Fletcher-32 or HDF5 check)."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from hpcbench.errors import HpcbenchError

SUFFIX = ".sha256"


class StoreDamaged(HpcbenchError):
    """A store file failed its checksum or could not be read as HDF5."""


def sidecar(path: Path) -> Path:
    return Path(path).with_name(Path(path).name + SUFFIX)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def seal(path: Path) -> None:
    """Record the finished file's sha256 beside it (atomically)."""
    side = sidecar(path)
    tmp = side.with_name(f".{side.name}.{os.getpid()}.tmp")
    tmp.write_text(f"{file_sha256(path)}  {Path(path).name}\n")
    os.replace(tmp, side)


def unseal(path: Path) -> None:
    """The file is about to change: its checksum no longer holds until sealed again."""
    sidecar(path).unlink(missing_ok=True)


# Files this process has hashed and found whole, by what would change if anything wrote them
# since: (path, inode, size, mtime_ns, ctime_ns) -> the sidecar's digest they matched. A results
# browser reads a page at a time and opened the store (hashing all of it) for each: 522 hashes of
# a 2000-submission campaign.h5 were 41 of `report --format html`'s 114 s.
_VERIFIED: dict[tuple[str, int, int, int, int], str] = {}


def _identity(path: Path) -> tuple[str, int, int, int, int]:
    st = os.stat(path)
    return str(Path(path).resolve()), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def mismatch(path: Path) -> str:
    """Why `path` is not the file its sidecar describes ("" when it is, or has no sidecar).
    Hashed once per process while the file's inode, size and times stay those it had then:
    any write changes its ctime, which no user can set back."""
    side = sidecar(path)
    try:
        want = side.read_text().split()[0]
    except (OSError, IndexError):
        return ""
    try:
        key = _identity(path)
    except OSError:
        key = None
    if key is not None and _VERIFIED.get(key) == want:
        return ""
    got = file_sha256(path)
    if got != want:
        return f"its sha256 {got[:12]} differs from the {want[:12]} recorded in {side.name}"
    if key is not None and key == _identity(path):  # unchanged while it was hashed
        _VERIFIED[key] = want
    return ""


def hdf5_failure(e: BaseException) -> bool:
    """Errors h5py raises for a file that is not, or no longer, sound HDF5 (truncated, a
    damaged chunk failing Fletcher-32 or decompression, a broken object header); HDF5's own
    messages say "Unable to ..." or "Can't ...". Other errors are bugs, never called damage."""
    if isinstance(e, HpcbenchError):
        return False
    if isinstance(e, OSError):
        return True
    text = str(e)
    return isinstance(e, (KeyError, ValueError, RuntimeError)) and ("Unable to" in text or "Can't" in text)


@contextlib.contextmanager
def named_damage(path: Path, remedy: str) -> Iterator[None]:
    """Turn an HDF5 read failure inside into StoreDamaged naming `path` and `remedy`."""
    try:
        yield
    except StoreDamaged:
        raise
    except Exception as e:
        if not hdf5_failure(e):
            raise
        raise StoreDamaged(f"{path}: damaged ({type(e).__name__}: {str(e).splitlines()[0][:200]}); {remedy}"
                           ) from None
