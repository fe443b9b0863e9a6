"""Functions a built program would take over from its libraries.

The dynamic linker binds a call to the first definition it finds, and the executable comes
first: a program that defines a function PETSc exports (PetscMallocDump, PetscLogView,
PetscMallocView, ...) replaces it for PETSc's own calls too, so `-malloc_dump` or `-log_view`
would report what the program chooses. The same holds for MPI's and the C library's functions
(MPI_Wtime, clock_gettime, malloc_usable_size). PETSc's makefiles compile with
-fvisibility=hidden and link with -export-dynamic, so what a program exports is what PETSc's
headers declare PETSC_EXTERN or what it marks visible itself; an honest program exports nothing
but `main`. The check reads the ELF files only (readelf, nm): nothing of the binary runs, and its
own program interpreter is never asked to list its libraries.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

# nm's types of a defined function: text, weak, indirect (GNU ifunc)
_FUNCTION_TYPES = {"T", "W", "i"}
# What every executable exports, and the entry points the C runtime calls by name.
_EXECUTABLE_OWN = {"_start", "main", "_init", "_fini"}
_NEEDED = re.compile(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]")
_RUNPATH = re.compile(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]")
_SYSTEM_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")


class SymbolCheckError(RuntimeError):
    """The binary's symbols could not be read (a tool missing, an unreadable file)."""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SymbolCheckError(f"{name} (binutils) is not on PATH: the binary's symbols cannot be checked")
    return path


def _run(args: list[str]) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise SymbolCheckError(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return proc.stdout


@lru_cache(maxsize=256)
def _functions(path: str, mtime_ns: int) -> frozenset[str]:
    names = set()
    for line in _run([_tool("nm"), "-D", "--defined-only", "-P", path]).splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1] in _FUNCTION_TYPES:
            names.add(parts[0].split("@")[0])
    return frozenset(names)


def exported_functions(path: Path) -> frozenset[str]:
    """The functions an ELF file exports in its dynamic symbol table."""
    return _functions(str(path), path.stat().st_mtime_ns)


@lru_cache(maxsize=1)
def _ld_cache() -> dict[str, str]:
    found: dict[str, str] = {}
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    try:
        out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        return found
    for line in out.splitlines()[1:]:
        name, _, path = line.strip().partition(" => ")
        found.setdefault(name.split(" (")[0], path)
    return found


def _dynamic(path: Path) -> tuple[list[str], list[str]]:
    text = _run([_tool("readelf"), "-d", "-W", str(path)])
    dirs = [d.replace("$ORIGIN", str(path.parent)).replace("${ORIGIN}", str(path.parent))
            for m in _RUNPATH.finditer(text) for d in m.group(1).split(":") if d]
    return _NEEDED.findall(text), dirs


def _resolve(name: str, dirs: Iterable[str]) -> Path | None:
    for d in dirs:
        candidate = Path(d) / name
        if candidate.is_file():
            return candidate.resolve()
    cached = _ld_cache().get(name)
    return Path(cached).resolve() if cached and Path(cached).is_file() else None


def libraries(binary: Path, env: Mapping[str, str]) -> list[Path]:
    """The shared libraries `binary` loads, found as the dynamic linker would (its run paths,
    LD_LIBRARY_PATH, the loader's cache, the system folders), without running it."""
    env_dirs = [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
    seen: dict[str, Path] = {}
    queue = [binary]
    while queue:
        obj = queue.pop()
        needed, run_dirs = _dynamic(obj)
        for name in needed:
            if name in seen:
                continue
            lib = _resolve(name, [*env_dirs, *run_dirs, *_SYSTEM_DIRS])
            if lib is not None:
                seen[name] = lib
                queue.append(lib)
    return list(seen.values())


def replaced_functions(binary: Path, env: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """Library file name -> the functions `binary` defines and exports that the library exports
    too (so the program's definition would replace the library's, for the library's own calls)."""
    own = exported_functions(binary) - _EXECUTABLE_OWN
    if not own:
        return {}
    out: dict[str, list[str]] = {}
    for lib in libraries(binary, env if env is not None else os.environ):
        clash = sorted(own & exported_functions(lib))
        if clash:
            out[lib.name] = clash
    return out


def refusal(replaced: Mapping[str, list[str]]) -> str:
    names = sorted({n for ns in replaced.values() for n in ns})
    where = ", ".join(f"{lib}: {', '.join(ns[:6])}{' ...' if len(ns) > 6 else ''}" for lib, ns in replaced.items())
    return (f"hpcbench: refused to run: the program defines {len(names)} function(s) that its libraries export, "
            f"which would replace the libraries' own ({where}); make them static or rename them")
