"""Families of PETSc names one of which the API accepts where another stands: the
members of each enum (`typedef enum { NORM_1, NORM_2, ... } NormType;`) and the
type names of each object kind (`typedef const char *TSType;` followed by
`#define TSEULER "euler"` ...), read from the headers of the installed PETSc, plus
MPI's predefined reduction operations (MPI 4.0, section 6.9.2: MPI_MAX, MPI_MIN,
MPI_SUM, MPI_PROD, ...) and PETSc's MPIU_ equivalents (petscsys.h).

The "changed enum or type name" mutation operator swaps a name for another of its
family: a mistake the compiler cannot see (every member has the same C type)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_ENUM = re.compile(r"typedef\s+enum\s*(?:\w+\s*)?\{([^{}]*)\}\s*(\w+)\s*;", re.S)
_MEMBER = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:=[^,]*)?$")
_TYPE = re.compile(r"typedef\s+const\s+char\s*\*\s*(\w+Type)\s*;")
_TYPE_NAME = re.compile(r'^\s*#\s*define\s+([A-Z][A-Z0-9_]*)\s+"[^"]*"\s*$')

MPI_OPS = ("MPI_SUM", "MPI_MAX", "MPI_MIN", "MPI_PROD")
MPIU_OPS = ("MPIU_SUM", "MPIU_MAX", "MPIU_MIN")


def parse_header(text: str) -> dict[str, tuple[str, ...]]:
    """{family: members} of one header's enums and type-name lists."""
    text = _COMMENT.sub(" ", text)
    out: dict[str, tuple[str, ...]] = {}
    for body, name in _ENUM.findall(text):
        members = tuple(m.group(1) for part in body.split(",") if (m := _MEMBER.match(part.strip())))
        if len(members) > 1:
            out[name] = members
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _TYPE.search(line)
        if not m:
            continue
        names = []
        # The type names follow their typedef, one #define each, until the first other line
        # (conditionals around optional packages' types and deprecated aliases are stepped over).
        for nxt in lines[i + 1:]:
            if (d := _TYPE_NAME.match(nxt)) is not None:
                names.append(d.group(1))
            elif nxt.strip() and not nxt.lstrip().startswith(("#if", "#endif", "#else", "#elif", "#define")):
                break
        if len(names) > 1:
            out[m.group(1)] = tuple(names)
    return out


@lru_cache(maxsize=4)
def families(include_dirs: tuple[Path, ...]) -> dict[str, tuple[str, ...]]:
    """{family: members} over every public header of these folders, MPI's operations added."""
    out: dict[str, tuple[str, ...]] = {"MPI_Op": MPI_OPS, "MPIU_Op": MPIU_OPS}
    for d in include_dirs:
        for h in sorted(d.glob("*.h")):
            out.update(parse_header(h.read_text(errors="replace")))
    return out


def installed_families() -> dict[str, tuple[str, ...]]:
    """The families of the PETSc hpcbench finds (only MPI's where none is found)."""
    from hpcbench.petsc_env import find_petsc

    try:
        inst = find_petsc(None, None)
    except Exception:  # no PETSc here: the operator still has MPI's reductions
        return {"MPI_Op": MPI_OPS, "MPIU_Op": MPIU_OPS}
    return families(tuple(d for d in inst.include_dirs if d.is_dir()))


def member_index(fams: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """{name: (family, members)}; a name in two families (an alias) is left out: which one
    a call wants cannot be told from the name."""
    seen: dict[str, list[str]] = {}
    for fam, members in fams.items():
        for m in members:
            seen.setdefault(m, []).append(fam)
    return {m: (f[0], fams[f[0]]) for m, f in seen.items() if len(f) == 1}
