"""Run under valgrind memcheck, read its XML reports and attribute what they hold.

Where the reports go: one file per rank, named by the rank the launcher gives each process
(`valgrind.<rank>.xml`), created and held open by the driver before the run (jobs/
untrusted_files.HeldFile), so what is read afterwards is what valgrind wrote, whatever the
program did to the names. The rank comes from the launcher's own variable through a `sh -c`
wrapper that `exec`s valgrind (valgrind's `%q{VAR}` aborts when VAR is unset, and each
launcher names it differently); the program's argv is the same as in the timing runs.

Attribution: MPI start-up alone leaves tens of kilobytes "definitely lost" inside libmpi and
friends even with suppressions. An error counts against the submission when the innermost
frame of its stack that lies in the submission's own binary (valgrind's <obj>, not the
source file name, which `#line` can set to anything) has no frame of the MPI runtime inside
it: a leak in a callback that MPI calls (an MPI_Op) counts, a leak inside MPI_Init that
main() reached through PetscInitialize does not. The rest is kept as evidence."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from hpcbench.jobs.affinity import first_set
from hpcbench.jobs.records import VALGRIND_LEAK_KINDS, ValgrindError, ValgrindSummary

INVALID_KINDS = {
    "InvalidRead", "InvalidWrite", "InvalidFree", "MismatchedFree", "UninitCondition",
    "UninitValue", "SyscallParam", "Overlap", "InvalidJump", "FishyValue",
}
KEPT_ERRORS = 100  # errors stored in full per run; the rest are counted only


def valgrind_path() -> str | None:
    return shutil.which("valgrind")


# The interpreter's own records under PYTHONMALLOC=malloc (a petsc4py program's valgrind runs:
# docs/python.md); copied into each run's log folder, which the sandbox shows, before valgrind starts
PYTHON_SUPPRESSIONS = Path(__file__).with_name("python-interpreter.supp")


def suppression_files(petsc_dir: Path) -> list[Path]:
    candidates = [
        petsc_dir / "share" / "petsc" / "suppressions" / "valgrind",
        Path("/usr/share/openmpi/openmpi-valgrind.supp"),
    ]
    return [p for p in candidates if p.is_file()]


def report_name(rank: int) -> str:
    return f"valgrind.{rank}.xml"


def valgrind_prefix(log_dir: Path, petsc_dir: Path, rank_vars: tuple[str, ...],
                    more_suppressions: tuple[Path, ...] = ()) -> list[str]:
    """The argv in front of the program: valgrind with its XML report in `log_dir`, one file
    per rank, named by the first of `rank_vars` set (its launcher's: jobs/launchers.rank_variables).
    Without any (an unknown launcher) valgrind's %p names the file, which the driver did not
    create: that run then has no report it can confirm. `more_suppressions`: files beside
    PETSc's and Open MPI's (a Python program's: PYTHON_SUPPRESSIONS, as the run sees it)."""
    vg = valgrind_path()
    if vg is None:
        raise FileNotFoundError("valgrind not found")
    rank = first_set(rank_vars, "%p")
    script = f'exec "$0" "--xml-file={log_dir}/valgrind.{rank}.xml" "$@"'
    cmd = ["/bin/sh", "-c", script, vg, "--tool=memcheck", "--leak-check=full",
           "--show-leak-kinds=definite,indirect,possible", "--errors-for-leak-kinds=definite,indirect,possible",
           "--num-callers=30",
           "--xml=yes", "--child-silent-after-fork=yes"]
    cmd += [f"--suppressions={s}" for s in [*suppression_files(petsc_dir), *more_suppressions]]
    return cmd


# Objects of the MPI runtime: a stack through one of them is MPI's own start-up
# or progress machinery, even when main() (calling PetscInitialize) is below it.
MPI_RUNTIME = ("libmpi", "libopen-pal", "libopen-rte", "libpmix", "libhwloc", "libevent", "libucp",
               "libucs", "libuct", "libfabric", "mca_", "libmpich", "libpsm", "libibverbs", "ld-linux")


def _frame(frame: ET.Element) -> tuple[str, str]:
    """(text for the record, the object's path) of one <frame>."""
    fn = frame.findtext("fn") or "?"
    file, line, obj = frame.findtext("file"), frame.findtext("line"), frame.findtext("obj") or ""
    return (f"{fn} {file}:{line}" if file else f"{fn} ({Path(obj).name})"), obj


def in_submission(objects: list[str], own_objects: set[str]) -> bool:
    """Whether a stack (innermost frame first, each frame's object) is the submission's doing:
    some frame lies in its own binary and no MPI runtime frame, nor a frame of code no longer
    mapped, lies inside the innermost such. valgrind names no object for code unloaded before
    exit: Open MPI's components, dlclosed by MPI_Finalize. Measured (hpcbench run, 2026-12-08):
    the petsc4py poisson3d-mg reference lost 47 bytes in strdup and asprintf called from ten such
    frames under petsc4py's finalize, and failed its memory gate as its own leak."""
    for obj in objects:
        if obj in own_objects:
            return True
        if not obj or Path(obj).name.startswith(MPI_RUNTIME):
            return False
    return False


class Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


@dataclass
class ReportCheck:
    """What one valgrind XML report held, and whether it looks like valgrind finished it."""

    tool: str = ""
    finished: bool = False
    problem: str = ""
    errors: list[ValgrindError] = field(default_factory=list)
    counted: int = 0


def _error(err: ET.Element, own_objects: set[str]) -> ValgrindError:
    kind = err.findtext("kind") or "?"
    stack = err.find("stack")
    frames = [_frame(fr) for fr in (stack.iter("frame") if stack is not None else [])]
    xw = err.find("xwhat")
    what = (xw.findtext("text") if xw is not None else err.findtext("what")) or ""
    nbytes = int(xw.findtext("leakedbytes") or 0) if xw is not None else 0
    blocks = int(xw.findtext("leakedblocks") or 0) if xw is not None else 0
    return ValgrindError(kind=kind, bytes=nbytes, blocks=blocks, what=what[:500],
                         frames=[t for t, _ in frames[:30]],
                         in_submission=in_submission([o for _, o in frames], own_objects))


def read_report(stream: Readable, own_objects: set[str], summary: ValgrindSummary) -> ReportCheck:
    """Stream one report (iterparse: memory stays bounded by one error, whatever the file's
    size), adding its errors into `summary`; only the first KEPT_ERRORS are kept in full."""
    check = ReportCheck()
    depth, root = 0, None
    try:
        for event, el in ET.iterparse(stream, events=("start", "end")):
            if event == "start":
                depth += 1
                root = el if root is None else root
                continue
            depth -= 1
            if depth == 1 and el.tag == "protocoltool":
                check.tool = (el.text or "").strip()
            elif depth == 2 and el.tag == "state" and (el.text or "").strip() == "FINISHED":
                check.finished = True
            elif depth == 1 and el.tag == "error":
                _count(_error(el, own_objects), summary)
                check.counted += 1
            if depth == 1 and root is not None:
                root.clear()  # what is read is counted: keep nothing of it
    except ET.ParseError as e:
        check.problem = f"not well-formed XML ({e})"
    return check


def _count(e: ValgrindError, summary: ValgrindSummary) -> None:
    if len(summary.errors) < KEPT_ERRORS:
        summary.errors.append(e)
    if e.kind == "Leak_DefinitelyLost":
        summary.definitely_lost_bytes += e.bytes
    if e.in_submission and e.kind in VALGRIND_LEAK_KINDS:
        summary.submission_lost_bytes += e.bytes
    if e.in_submission and e.kind in INVALID_KINDS:
        summary.submission_invalid_accesses += 1
