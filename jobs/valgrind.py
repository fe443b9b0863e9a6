"""Run under valgrind memcheck and attribute what it finds.

MPI start-up alone leaves tens of kilobytes "definitely lost" inside libmpi and
friends even with suppressions, so an error counts against a submission only if
one of its stack frames lies in the submission's own source files. The rest is
kept as evidence."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

from hpcbench.jobs.records import ValgrindError, ValgrindSummary

LEAK_KINDS = {"Leak_DefinitelyLost", "Leak_IndirectlyLost"}
INVALID_KINDS = {
    "InvalidRead", "InvalidWrite", "InvalidFree", "MismatchedFree", "UninitCondition",
    "UninitValue", "SyscallParam", "Overlap", "InvalidJump", "FishyValue",
}


def valgrind_path() -> str | None:
    return shutil.which("valgrind")


def suppression_files(petsc_dir: Path) -> list[Path]:
    candidates = [
        petsc_dir / "share" / "petsc" / "suppressions" / "valgrind",
        Path("/usr/share/openmpi/openmpi-valgrind.supp"),
    ]
    return [p for p in candidates if p.is_file()]


def valgrind_prefix(xml_file_pattern: str, petsc_dir: Path) -> list[str]:
    vg = valgrind_path()
    if vg is None:
        raise FileNotFoundError("valgrind not found")
    cmd = [vg, "--tool=memcheck", "--leak-check=full", "--show-leak-kinds=definite,indirect",
           "--errors-for-leak-kinds=definite", "--num-callers=30", "--xml=yes",
           f"--xml-file={xml_file_pattern}", "--child-silent-after-fork=yes"]
    cmd += [f"--suppressions={s}" for s in suppression_files(petsc_dir)]
    return cmd


# Objects of the MPI runtime: a stack through one of them is MPI's own start-up
# or progress machinery, even when main() (calling PetscInitialize) is below it.
MPI_RUNTIME = ("libmpi", "libopen-pal", "libopen-rte", "libpmix", "libhwloc", "libevent", "libucp",
               "libucs", "libuct", "libfabric", "mca_", "libmpich", "libpsm", "libibverbs", "ld-linux")


def _frame_text(frame: ET.Element) -> tuple[str, str | None, str]:
    fn = frame.findtext("fn") or "?"
    file = frame.findtext("file")
    line = frame.findtext("line")
    obj = Path(frame.findtext("obj") or "").name
    if file:
        return f"{fn} {file}:{line}", file, obj
    return f"{fn} ({obj})", None, obj


def parse_valgrind_xml(paths: list[Path], own_sources: set[str]) -> ValgrindSummary:
    summary = ValgrindSummary(ran=True)
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (ET.ParseError, OSError) as e:
            summary.parse_error += f"{path.name}: {e}; "
            continue
        for err in root.iter("error"):
            kind = err.findtext("kind") or "?"
            frames, own, mpi = [], False, False
            stack = err.find("stack")
            for fr in stack.iter("frame") if stack is not None else []:
                text, file, obj = _frame_text(fr)
                frames.append(text)
                own |= file is not None and Path(file).name in own_sources
                mpi |= obj.startswith(MPI_RUNTIME)
            own = own and not mpi
            xw = err.find("xwhat")
            what = (xw.findtext("text") if xw is not None else err.findtext("what")) or ""
            nbytes = int(xw.findtext("leakedbytes") or 0) if xw is not None else 0
            blocks = int(xw.findtext("leakedblocks") or 0) if xw is not None else 0
            summary.errors.append(ValgrindError(kind=kind, bytes=nbytes, blocks=blocks, what=what,
                                                frames=frames[:30], in_submission=own))
            if kind == "Leak_DefinitelyLost":
                summary.definitely_lost_bytes += nbytes
            if own and kind in LEAK_KINDS:
                summary.submission_lost_bytes += nbytes
            if own and kind in INVALID_KINDS:
                summary.submission_invalid_accesses += 1
    return summary
