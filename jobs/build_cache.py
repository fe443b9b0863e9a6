"""Built binaries reused across jobs and campaigns: the same sources built against the same
PETSc with the same makefile give the same program, so a second build of them is only time.

Every campaign builds each problem's reference (for its own job and for the performance case),
and a campaign run again, a test suite, or validate-checks with its screens builds the same
sources many times over. The job driver (outside the sandbox) looks the build up here first;
a miss builds in the sandbox as always and, when the build succeeded, stores the binary with
the build's record. A hit copies the binary into the job's build folder and returns that
record, marked `cached` with the key: the compiler's output a scorer reads is the same bytes.

The key covers everything the binary depends on that can change under a path: the makefile
hpcbench writes, each source's name and bytes, the entry, PETSc's folder and arch, the bytes of
PETSc's petscvariables (compilers, flags, libraries) and the size and modification time of
its library (a rebuilt PETSc). Failed builds are never stored (a time-out or a memory limit is
not a property of the sources). Planning gives no cache to a site with `isolation: none`
(hpcbench/plan/campaign.py): there a program runs with the user's rights and could write into
the cache what another job would then run.

    <cache>/<key[:2]>/<key>/app          the binary
    <cache>/<key[:2]>/<key>/build.json   the BuildResult of the build that made it"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import uuid
from pathlib import Path

from hpcbench.jobs.build import BINARY_NAME, MAKEFILE_NAME, build_submission, render_makefile
from hpcbench.jobs.records import BuildResult, write_atomic
from hpcbench.petsc_env import PetscInstall
from hpcbench.problem import language_of

SCHEMA = 2  # part of every key: a change of what a build produces starts a new cache
RECORD = "build.json"


def _petsc_fingerprint(petsc: PetscInstall) -> bytes:
    base = Path(petsc.petsc_dir) / petsc.petsc_arch if petsc.petsc_arch else Path(petsc.petsc_dir)
    parts = [str(petsc.petsc_dir).encode(), petsc.petsc_arch.encode()]
    variables = base / "lib" / "petsc" / "conf" / "petscvariables"
    parts.append(variables.read_bytes() if variables.is_file() else b"-")
    for lib in sorted((base / "lib").glob("libpetsc.*")):
        st = lib.stat()
        parts.append(f"{lib.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return b"\0".join(parts)


def cache_key(folder: Path, sources: list[str], entry: str, petsc: PetscInstall) -> str:
    h = hashlib.sha256(f"hpcbench-build-{SCHEMA}\0{entry}\0".encode())
    h.update(render_makefile(sources).encode())
    for name in sorted(set(sources) | {entry}):
        data = (Path(folder) / name).read_bytes()
        h.update(f"\0{name}\0{len(data)}\0".encode())
        h.update(data)
    h.update(_petsc_fingerprint(petsc))
    return h.hexdigest()


def _hit(entry_dir: Path, folder: Path, sources: list[str], key: str) -> BuildResult | None:
    try:
        rec = BuildResult.model_validate_json((entry_dir / RECORD).read_text())
        t0 = time.perf_counter()
        shutil.copy2(entry_dir / BINARY_NAME, folder / BINARY_NAME)
    except (OSError, ValueError):
        return None
    (folder / MAKEFILE_NAME).write_text(render_makefile(sources))
    return rec.model_copy(update={"wall_s": time.perf_counter() - t0, "cached": key})


def _store(entry_dir: Path, folder: Path, res: BuildResult) -> None:
    tmp = entry_dir.parent / f".{entry_dir.name}.{uuid.uuid4().hex[:8]}"
    try:
        tmp.mkdir(parents=True)
        shutil.copy2(folder / BINARY_NAME, tmp / BINARY_NAME)
        write_atomic(tmp / RECORD, res.model_dump_json())
        os.rename(tmp, entry_dir)  # atomic; another job that stored the same key first keeps its entry
    except OSError:  # a full or read-only cache costs a rebuild next time, nothing else
        shutil.rmtree(tmp, ignore_errors=True)


def build(cache_dir: str, folder: Path, sources: list[str], entry: str, petsc: PetscInstall,
          **options) -> BuildResult:
    """build_submission(folder, sources, entry, petsc, **options), through the cache at
    `cache_dir` ("": no cache)."""
    if not cache_dir or language_of(entry) == "python":  # a Python program's check is quicker than a cache lookup
        return build_submission(folder, sources, entry, petsc, **options)
    if entry not in sources:
        sources = [entry, *sources]
    try:
        key = cache_key(folder, sources, entry, petsc)
    except OSError:  # a source missing: the build says so
        return build_submission(folder, sources, entry, petsc, **options)
    entry_dir = Path(cache_dir) / key[:2] / key
    hit = _hit(entry_dir, Path(folder), sources, key) if entry_dir.is_dir() else None
    if hit is not None:
        return hit.model_copy(update={"cpus": ""})  # nothing was compiled on this job's cores
    res = build_submission(folder, sources, entry, petsc, **options)
    if res.exit_code == 0 and not res.timed_out and (Path(folder) / BINARY_NAME).is_file():
        _store(entry_dir, Path(folder), res)
    return res
