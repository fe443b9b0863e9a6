"""Build a Python (petsc4py) submission: every file byte-compiled and its imports checked inside
the sandbox, then a launcher in the binary's place, so that every run, the null program's
comparison and the performance case start it as they start a C program (docs/python.md).

What a Python program may import is the standard library, its own files and the packages
hpcbench binds into its sandbox (ALLOWED_PACKAGES: petsc4py, numpy and mpi4py where installed),
nothing else of any site-packages: the interpreter runs with `-sS` (no user site, no `site`), and
the launcher puts the bound packages' folder on sys.path. ctypes cannot be loaded at all: its
extension module is hidden in the sandbox (python_hidden), so no spelling of the import reaches
C memory or PETSc's functions outside the interface petsc4py gives."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import sysconfig
import time
from pathlib import Path

from hpcbench.jobs.capture import Confinement, run_captured
from hpcbench.jobs.cores import cpu_list
from hpcbench.jobs.records import BuildResult, Isolation, Limits
from hpcbench.jobs.sandbox import Step, step_env
from hpcbench.petsc_env import PetscInstall

BINARY_NAME = "app"  # what every run starts, whatever the language (jobs/build.py builds C into it)
ALLOWED_PACKAGES = ("petsc4py", "numpy", "mpi4py")
# Modules a program may not import however it is spelled: C memory and symbols (ctypes is also
# unloadable in the sandbox, python_hidden), or a second interpreter outside the harness's view.
REFUSED_MODULES = frozenset({"ctypes", "_ctypes", "cffi", "_cffi_backend"})

# Run inside the sandbox by the interpreter the program will run on: compile each file (syntax
# errors as file:line:col, as a compiler reports them) and resolve each import it names.
CHECK = r"""
import ast, importlib.util, json, sys
files, own, allowed, refused, path = json.loads(sys.argv[1])
sys.path[:0] = [path]
errors, seen = [], set()
for name in files:
    src = open(name, encoding="utf-8").read()
    try:
        tree = compile(src, name, "exec", ast.PyCF_ONLY_AST)
        compile(tree, name, "exec")
    except SyntaxError as e:
        errors.append(f"{name}:{e.lineno or 0}:{e.offset or 0}: error: {e.msg}")
        continue
    for node in ast.walk(tree):
        mods = []
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods = [node.module]
        for m in mods:
            top = m.split(".")[0]
            where = f"{name}:{node.lineno}:{node.col_offset + 1}"
            if top in refused:
                errors.append(f"{where}: error: import of {m!r} is not allowed (C memory and PETSc's "
                              "functions are reached through petsc4py only)")
            elif top in own or (top, m) in seen:
                continue
            elif top not in sys.stdlib_module_names and top not in allowed:
                errors.append(f"{where}: error: no module {m!r} here: a program may import the standard "
                              f"library, its own files and {', '.join(allowed)}")
            elif importlib.util.find_spec(top) is None:
                errors.append(f"{where}: error: no module {m!r} here (not installed beside PETSc)")
            seen.add((top, m))
print("\n".join(errors), file=sys.stderr)
sys.exit(1 if errors else 0)
"""


def interpreter() -> str:
    """The interpreter a program runs on: this one's real executable (the virtual environment's
    python is a link to it): under /usr, or in its own installation, which package_dirs binds."""
    return os.path.realpath(sys.executable)


def interpreter_objects() -> set[str]:
    """The interpreter's executable and shared library as valgrind names their frames: a petsc4py
    program's code runs in them, so they stand for its binary in valgrind's attribution
    (jobs/valgrind.in_submission); their own records are the run's suppressions' (docs/python.md)."""
    objects = {interpreter()}
    lib = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY")
    libdir = sysconfig.get_config_var("LIBDIR")
    if lib and libdir and (Path(libdir) / lib).is_file():
        objects.add(os.path.realpath(Path(libdir) / lib))
    return objects


def package_dirs() -> list[Path]:
    """What a Python program's sandbox shows read-only at its own path: the interpreter's
    installation where it is not under /usr (pyenv, a module's Python; its site-packages stay off
    sys.path: `-S`), and the folders of the allowed packages installed here (and numpy's bundled
    libraries), nothing else of the virtual environment."""
    base = Path(sys.base_prefix)
    return ([] if base.is_relative_to("/usr") else [base]) + _package_folders()


def _package_folders() -> list[Path]:
    out: list[Path] = []
    for name in ALLOWED_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        pkg = Path(next(iter(spec.submodule_search_locations)))
        out.append(pkg)
        libs = pkg.parent / f"{name}.libs"  # auditwheel's vendored libraries (numpy.libs)
        if libs.is_dir():
            out.append(libs)
    return out


def packages_path() -> str:
    """The folder that holds the allowed packages (their common parent): on the program's sys.path."""
    dirs = _package_folders()
    return str(dirs[0].parent) if dirs else ""


def python_hidden() -> list[Path]:
    """Files a Python program's sandbox shows empty: ctypes' extension module and the ctypes
    package's __init__, so no spelling of the import (exec, importlib, __import__) gives CDLL or
    memory access (an interpreter with _ctypes built in keeps `_ctypes` itself: docs/python.md)."""
    out = []
    for name in ("_ctypes", "ctypes"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin and Path(spec.origin).is_file():
            out.append(Path(spec.origin))
    return out


# An uncaught exception (or a non-zero sys.exit) on one rank of a Python program does not end the
# others as a crashing C rank does: the interpreter's exit runs petsc4py's PetscFinalize, a
# collective the other ranks never join, and every rank waited for the run's time limit (a 3-rank
# program seen doing so, issue 38). The launcher aborts the job there (MPI_Abort through mpi4py:
# petsc4py's Comm has no abort), as PETSc's error handler does for C, after the traceback is out.
_ABORT = (
    "except BaseException as e:\n"
    "    if isinstance(e, SystemExit) and e.code in (None, 0):\n"
    "        raise\n"
    "    import traceback\n"
    "    traceback.print_exc()\n"
    "    sys.stdout.flush(); sys.stderr.flush()\n"
    "    petsc = sys.modules.get('petsc4py.PETSc')\n"
    "    if petsc is not None or 'mpi4py.MPI' in sys.modules:\n"
    "        from mpi4py import MPI\n"
    "        MPI.COMM_WORLD.Abort(1)\n"
    "    raise\n"
)


def render_launcher(entry: str) -> str:
    """The `app` a run starts: the interpreter without user or site packages, the allowed
    packages' folder after the program's own, and the entry run as __main__ under its own name;
    a rank that fails aborts the whole job (_ABORT)."""
    return (
        f"#!{interpreter()} -sS\n"
        "# generated by hpcbench: start a petsc4py submission as a run starts a binary\n"
        "import os, runpy, sys\n"
        "here = os.path.dirname(os.path.realpath(__file__))\n"
        f"sys.path[:1] = [here, {packages_path()!r}]\n"
        f"sys.argv[0] = os.path.join(here, {entry!r})\n"
        "try:\n"
        "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
        + _ABORT
    )


def build_python(folder: Path, sources: list[str], entry: str, petsc: PetscInstall, timeout_s: float = 300.0,
                 output_cap: int = 256 * 1024, extra_env: dict[str, str] | None = None,
                 isolation: Isolation | None = None, confinement: Confinement | None = None) -> BuildResult:
    """Check `sources` (byte-compile, imports resolved) inside the sandbox and write the launcher."""
    folder = Path(folder)
    given = confinement or Confinement()
    if entry not in sources:
        sources = [entry, *sources]
    own = sorted({Path(s).with_suffix("").parts[0] for s in sources})
    payload = json.dumps([sources, own, list(ALLOWED_PACKAGES), sorted(REFUSED_MODULES), packages_path()])
    cmd = [interpreter(), "-sS", "-B", "-c", CHECK, payload]
    env = step_env({**petsc.env(), **(extra_env or {})})
    iso = (isolation or Isolation()).model_copy(update={"per_rank": False})
    step = Step(iso, petsc, cwd=folder, writable=[folder], readonly=package_dirs(), hidden=python_hidden())
    t0 = time.perf_counter()
    out = run_captured(cmd, cwd=folder, env=env, timeout_s=timeout_s, output_cap=output_cap,
                       step=step, confinement=Confinement(given.limits or Limits(), given.cpus, given.launch))
    wall = time.perf_counter() - t0
    ok = out.exit_code == 0 and not out.timed_out
    launcher = render_launcher(entry) if ok else ""
    if ok:
        app = folder / BINARY_NAME
        app.write_text(launcher)
        app.chmod(0o755)
    return BuildResult(
        command=" ".join([*given.launch, interpreter(), "-sS", "-B", "-c",
                          f"<check: byte-compile {len(sources)} files, resolve imports>"]),
        exit_code=out.exit_code if out.exit_code != 0 or ok else 1, timed_out=out.timed_out, wall_s=wall,
        stdout=out.stdout, stderr=out.stderr, stdout_truncated=out.stdout_truncated,
        stderr_truncated=out.stderr_truncated, makefile=launcher,
        stopped_reason=out.stopped_reason, isolation=iso.level, disk_limit=out.disk_limit,
        cpus=cpu_list(given.cpus or []),
    )
