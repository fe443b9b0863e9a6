"""The store's checksum check is hashed once per process while nothing writes the file, and
still finds a change made after that (same size, modification time set back)."""

from __future__ import annotations

import os
from pathlib import Path

from hpcbench.store import integrity


def test_a_verified_file_is_not_hashed_again_until_something_writes_it(tmp_path: Path, monkeypatch):
    path = tmp_path / "campaign.h5"
    path.write_bytes(os.urandom(1 << 20))
    integrity.seal(path)
    hashed = []
    real = integrity.file_sha256
    monkeypatch.setattr(integrity, "file_sha256", lambda p: hashed.append(p) or real(p))
    assert integrity.mismatch(path) == "" and len(hashed) == 1
    for _ in range(5):  # a browser export opens the store once per page: one hash in all
        assert integrity.mismatch(path) == ""
    assert len(hashed) == 1
    st = os.stat(path)
    with open(path, "r+b") as f:  # one byte changed in place: same size ...
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # ... and its modification time set back
    assert "differs from the" in integrity.mismatch(path)  # the write changed its ctime
    assert len(hashed) == 2
    assert "differs from the" in integrity.mismatch(path)  # a damaged file is never remembered as whole
    integrity.seal(path)  # collect rewrote it and sealed it again: whole, hashed once more
    assert integrity.mismatch(path) == ""
    assert integrity.mismatch(path) == ""


def test_a_file_without_a_sidecar_is_not_checked(tmp_path: Path):
    path = tmp_path / "old.h5"
    path.write_bytes(b"x" * 100)
    assert integrity.mismatch(path) == ""
