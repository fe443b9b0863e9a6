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
    """Why `path` cannot be used as the store file it claims to be ("" when it can): it is not
    the file its sidecar describes (no sidecar: not checked), or something in it points outside
    it (`foreign_reference`). Checked once per process while the file's inode, size and times
    stay those it had then: any write changes its ctime, which no user can set back."""
    side = sidecar(path)
    try:
        want = side.read_text().split()[0]
    except (OSError, IndexError):
        want = ""
    try:
        key = _identity(path)
    except OSError:
        key = None
    if key is not None and key in _VERIFIED and _VERIFIED[key] == want:
        return ""
    if want:
        got = file_sha256(path)
        if got != want:
            return f"its sha256 {got[:12]} differs from the {want[:12]} recorded in {side.name}"
    why = foreign_reference(path)
    if why:
        return why
    if key is not None and key == _identity(path):  # unchanged while it was read
        _VERIFIED[key] = want
    return ""


def foreign_reference(path: Path) -> str:
    """What in the HDF5 file `path` reads data from outside it ("" when nothing does): an
    external or soft link, a virtual dataset, a dataset with external storage. hpcbench writes
    none of these; a campaign received from someone else could use one to make `report` or
    `view` read any file of the operator (/proc/self/environ) into what they publish. Only the
    links and the datasets' layouts are read, never a dataset's data."""
    import h5py

    found: list[str] = []

    def look(name: str, link: object) -> bool | None:
        if isinstance(link, h5py.ExternalLink):
            found.append(f"/{name} is an external link to {link.filename}:{link.path}")
        elif isinstance(link, h5py.SoftLink):
            found.append(f"/{name} is a soft link to {link.path}")
        elif not isinstance(link, h5py.HardLink):
            found.append(f"/{name} is a {type(link).__name__} link")
        else:
            obj = f[name]
            if isinstance(obj, h5py.Dataset) and obj.is_virtual:
                found.append(f"dataset /{name} is virtual (its data lives in other files)")
            elif isinstance(obj, h5py.Dataset) and obj.external:
                found.append(f"dataset /{name} keeps its data in external files "
                             f"({', '.join(str(e[0]) for e in obj.external[:3])})")
        return True if found else None  # stop at the first

    try:
        with h5py.File(path, "r") as f:
            f.visititems_links(look)
    except Exception as e:  # not HDF5, or damaged where the walk met it: the readers name that damage
        if hdf5_failure(e):
            return ""
        raise
    return f"{found[0]}: a store file holds its own data only, so it is refused" if found else ""


def open_read(path: Path):  # -> h5py.File (h5py imported here only where it is used)
    """`path` opened read-only once `mismatch` finds nothing wrong with it (else StoreDamaged
    naming it and why): the one way a reader opens a store file that did not come through
    `open_store`."""
    import h5py

    why = mismatch(path)
    if why:
        raise StoreDamaged(f"{path}: {why}")
    return h5py.File(path, "r")


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
