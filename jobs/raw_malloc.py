"""The record of memory a C program takes with malloc itself and never frees, in every run
valgrind does not watch (jobs/malloc_shim.c, preloaded; issue 33).

valgrind runs one case, and a program can tell its run from the others (memcheck's allocator
answers `malloc_usable_size(malloc(1))` with 1, its code runs several times slower): a program
that leaked with malloc only when not under valgrind passed every gate, since PETSc's counts and
-malloc_dump see only PetscMalloc. The shim forwards every allocation to glibc and keeps the
blocks whose caller lies in the program's executable; at exit it writes what is still held into a
file the driver created and holds (one per rank). The driver resolves each call site to a source
line with addr2line (the program is built with -g).

Built once per campaign with the C compiler (`cc`, else PETSc's CC with --as-needed, so it
links no MPI); a site without one records why and runs without it (the instrument is then
unconfirmed for the reference too, and not required: evaluators/instrumentation.py)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from hpcbench.jobs.records import RawMalloc
from hpcbench.petsc_env import PetscInstall, petsc_variable

SOURCE = Path(__file__).with_name("malloc_shim.c")
LIBRARY = "libhbmalloc.so"
REPORT = "raw_malloc"  # <logs>/raw_malloc.<rank>
MAX_BYTES = 8192  # the shim writes at most 4 KiB
MAX_CALLERS = 16
EXE_ENV, REPORT_ENV = "HPCBENCH_MALLOC_EXE", "HPCBENCH_MALLOC_REPORT"
_FLAGS = ["-shared", "-fPIC", "-pthread", "-O2", "-fno-builtin", f"-Wl,-soname,{LIBRARY}"]


def compiler(petsc: PetscInstall | None = None) -> list[str] | None:
    """The compiler command for the shim: a plain C compiler, else PETSc's (an MPI wrapper) with
    --as-needed so that the library links no MPI into mpiexec and the launching shell."""
    for cc in ("cc", "gcc", "clang"):
        if path := shutil.which(cc):
            return [path]
    petsc_cc = petsc_variable(petsc, "CC") if petsc is not None else ""
    return [petsc_cc, "-Wl,--as-needed"] if petsc_cc else None


def build_recorder(dest: Path, petsc: PetscInstall | None = None) -> tuple[Path | None, str]:
    """(the shim, "") or (None, why not), built under `dest` (replaced atomically: jobs that share
    the folder may race; any finished copy is the same library)."""
    # one folder per source and flags: a campaign resumed after an upgrade builds the new recorder
    dest = dest / hashlib.sha256(SOURCE.read_bytes() + " ".join(_FLAGS).encode()).hexdigest()[:12]
    final = dest / LIBRARY
    if final.is_file():
        return final, ""
    cc = compiler(petsc)
    if cc is None:
        return None, "no C compiler found for the malloc recorder"
    dest.mkdir(parents=True, exist_ok=True)
    tmp = dest / f".{LIBRARY}.{os.getpid()}"
    try:
        got = subprocess.run([*cc, *_FLAGS, "-o", str(tmp), str(SOURCE)], capture_output=True, text=True,
                             timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"the malloc recorder did not build ({type(e).__name__}: {e})"
    if got.returncode != 0:
        tmp.unlink(missing_ok=True)
        return None, f"the malloc recorder did not build: {(got.stderr or got.stdout).strip()[:300]}"
    tmp.chmod(0o555)
    os.replace(tmp, final)
    return final, ""


def recorder_env(shim: Path, binary: Path, logs_inside: Path) -> dict[str, str]:
    """The variables of every run it records: the same in each (the folders inside the sandbox
    are at the same paths in every run), so they tell no run from another."""
    return {"LD_PRELOAD": str(shim), EXE_ENV: os.path.realpath(binary), REPORT_ENV: str(logs_inside / REPORT)}


_HEAD = re.compile(r"hpcbench-malloc 1\nheld (\d+) (\d+)\ntracked (\d+)\noverflow ([01])\n")
_CALLER = re.compile(r"caller 0x([0-9a-f]+) (\d+) (\d+)")


def parse_record(data: bytes, name: str) -> RawMalloc:
    """One rank's record; a malformed one is a parse error naming the file."""
    text = data.decode("ascii", "replace")
    head = _HEAD.match(text)
    if head is None or not text.endswith("end\n"):
        return RawMalloc(parse_error=f"{name} is not the malloc recorder's record (written over, or cut)")
    callers = []  # each site's offset (its blocks and bytes are in the totals)
    for line in text[head.end():-len("end\n")].splitlines():
        m = _CALLER.fullmatch(line)
        if m is None:
            return RawMalloc(parse_error=f"{name}: unexpected line {line[:80]!r}")
        callers.append(f"0x{int(m.group(1), 16):x}")
    held, held_bytes, tracked, overflow = (int(g) for g in head.groups())
    return RawMalloc(held_blocks=held, held_bytes=held_bytes, tracked=tracked, overflow=bool(overflow),
                     callers=callers[:MAX_CALLERS])


def merge_records(per_rank: list[RawMalloc]) -> RawMalloc:
    """The ranks' records as one: blocks and bytes summed, call sites in order without repeats."""
    callers: list[str] = []
    for r in per_rank:
        callers += [c for c in r.callers if c not in callers]
    return RawMalloc(held_blocks=sum(r.held_blocks for r in per_rank), held_bytes=sum(r.held_bytes for r in per_rank),
                     tracked=sum(r.tracked for r in per_rank), overflow=any(r.overflow for r in per_rank),
                     callers=callers[:MAX_CALLERS],
                     parse_error="; ".join(r.parse_error for r in per_rank if r.parse_error))


def source_lines(binary: Path, offsets: list[str]) -> list[str]:
    """Each call site as `file:line (function)` where addr2line knows it, else its offset."""
    if not offsets or shutil.which("addr2line") is None:
        return offsets
    try:
        got = subprocess.run(["addr2line", "-f", "-e", str(binary), *offsets], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return offsets
    lines = got.stdout.splitlines()
    if got.returncode != 0 or len(lines) != 2 * len(offsets):
        return offsets
    out = []
    for off, func, where in zip(offsets, lines[::2], lines[1::2]):
        where = where.split(" (discriminator")[0]
        out.append(off if where.startswith("??") else f"{os.path.basename(where)} ({func})")
    return out
