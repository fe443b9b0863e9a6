"""Parse PETSc's `-malloc_dump` report of blocks still allocated at PetscFinalize.

PETSc prints, per rank, lines such as
    [ 0]32 bytes VecCreate() at /path/src/vec/vec/interface/veccreate.c:34
    [0]PETSC ERROR: ... (older versions print under a banner)
Nothing in stderr mentions "leak": grepping for that word passes every leak."""

from __future__ import annotations

import re

from hpcbench.jobs.records import Leak

_LINE = re.compile(r"^\s*\[\s*(\d+)\s*\]\s*(\d+)\s+bytes\s+(\S+?)\(\)\s+(?:at|line)\s+(.+?):(\d+)\s*$")
# PETSc 3.18-3.2x older form: "[ 0]16 bytes PetscStrallocpy() line 97 in /path/str.c"
_LINE_OLD = re.compile(r"^\s*\[\s*(\d+)\s*\]\s*(\d+)\s+bytes\s+(\S+?)\(\)\s+line\s+(\d+)\s+in\s+(.+?)\s*$")


MAX_LEAKS = 500  # blocks kept per run: enough to show a leak, bounded for a loop that leaks a million


def parse_malloc_dump(stderr: str, stdout: str = "") -> list[Leak]:
    leaks: list[Leak] = []
    for line in (stdout + "\n" + stderr).splitlines():
        if len(leaks) >= MAX_LEAKS:
            break
        m = _LINE.match(line)
        if m:
            rank, nbytes, func, path, lineno = m.groups()
            leaks.append(Leak(rank=int(rank), bytes=int(nbytes), function=func, file=path, line=int(lineno)))
            continue
        m = _LINE_OLD.match(line)
        if m:
            rank, nbytes, func, lineno, path = m.groups()
            leaks.append(Leak(rank=int(rank), bytes=int(nbytes), function=func, file=path, line=int(lineno)))
    return leaks
