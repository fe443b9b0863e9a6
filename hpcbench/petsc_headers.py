"""What a PETSc installation's public headers say about its API, for the
deterministic convention checks: which functions return PetscErrorCode (so
their result must be checked), and which functions and macros are deprecated.

Read once at collect time from $PETSC_DIR/include/*.h of the PETSc the campaign
used and stored in campaign.h5 (/petsc), so scoring needs only that file and is
exact for that PETSc version. `hpcbench lint` reads the installed PETSc directly.

The scan is textual on purpose (comments stripped, continuation lines joined):
the headers are macro-heavy and need configure-time defines to preprocess, but
their declarations follow a few fixed shapes:
    PETSC_EXTERN PetscErrorCode VecNorm(Vec, NormType, PetscReal *);
    PETSC_EXTERN PETSC_DEPRECATED_FUNCTION(3, 12, 0, "X()", ) PetscErrorCode Y(...);
    static inline PetscErrorCode VecSetValue(Vec v, ...)
    #define PetscMalloc1(m1, r1) PetscMallocA(...)          (a macro forwarding to one)
    #define PetscFree(a) ((PetscErrorCode)(...))            (a macro cast to one)
    #define SETERRQ1(...) PETSC_DEPRECATED_MACRO(3, 17, 0, "SETERRQ", ) SETERRQ(__VA_ARGS__)
and manual pages in comments mark deprecated macros with `Level: deprecated`
(CHKERRQ, CHKERRMPI ...)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_DECL = re.compile(r"\bPetscErrorCode\s+([A-Za-z_]\w*)\s*\(")
_DEPRECATED = re.compile(r'PETSC_DEPRECATED_(?:FUNCTION|MACRO)\s*\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*"([^"]*)"')
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^)]*\))?[ \t]*(.*)$", re.M)
_MANPAGE = re.compile(r"/\*[@MCE]+\s*\n?\s*([A-Za-z_]\w*)\s+-(.*?)\*/", re.S)
_FORWARD = re.compile(r"^[\s(]*(?:\(\s*PetscErrorCode\s*\))?[\s(]*([A-Za-z_]\w*)\s*\(")


@dataclass
class PetscApi:
    """The API facts the checks need; `source` says where they came from."""

    version: str = ""
    source: str = ""
    errorcode_functions: set[str] = field(default_factory=set)
    deprecated: dict[str, str] = field(default_factory=dict)  # name -> "since 3.17: use SETERRQ"

    def to_json(self) -> dict:
        return {"version": self.version, "source": self.source,
                "errorcode_functions": sorted(self.errorcode_functions), "deprecated": dict(sorted(
                    self.deprecated.items()))}

    @classmethod
    def from_json(cls, d: dict) -> PetscApi:
        return cls(d.get("version", ""), d.get("source", ""), set(d.get("errorcode_functions", [])),
                   dict(d.get("deprecated", {})))


def _statement_prefix(text: str, pos: int) -> str:
    """Text of the declaration before `pos`: back to the previous ; { } or line
    starting a preprocessor directive."""
    start = max(text.rfind(";", 0, pos), text.rfind("{", 0, pos), text.rfind("}", 0, pos))
    lines = text[start + 1:pos].split("\n")
    directives = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("#")]
    return "\n".join(lines[directives[-1] + 1:] if directives else lines)


def _deprecation(prefix: str) -> str | None:
    m = _DEPRECATED.search(prefix)
    if not m:
        return None
    repl = m.group(4).strip()
    return f"deprecated since {m.group(1)}.{m.group(2)}" + (f": use {repl}" if repl else "")


def scan_text(text: str, api: PetscApi, macros: dict[str, str]) -> None:
    """Add the facts of one header's text to `api`; function-like macros are
    collected into `macros` (name -> body) and resolved once all headers are read."""
    for m in _MANPAGE.finditer(text):
        body = m.group(2)
        lv = re.search(r"Level:\s*deprecated", body)
        if lv:
            note = re.search(r"[Dd]eprecated (?:in favor of|since)?\s*([^\n]*)", body[lv.end():] + body)
            hint = note.group(1).split(". ")[0].strip().rstrip(".") if note else ""
            api.deprecated.setdefault(m.group(1), "deprecated (manual page)" + (f": {hint}" if hint else ""))
    flat = _COMMENT.sub(" ", text).replace("\\\n", " ")
    for m in _DECL.finditer(flat):
        prefix = _statement_prefix(flat, m.start())
        # Only real declarations: the bare stubs under CLANG_STATIC_ANALYZER
        # (PetscOptionsBegin, PetscCall ...) describe macros, not functions.
        if "typedef" in prefix or not re.search(r"\b(PETSC_EXTERN|PETSC_INTERN|inline)\b", prefix):
            continue
        name = m.group(1)
        api.errorcode_functions.add(name)
        dep = _deprecation(prefix)
        if dep:
            api.deprecated[name] = dep
    for m in _DEFINE.finditer(flat):
        name, params, body = m.group(1), m.group(2), m.group(3)
        dep = _deprecation(body)
        if dep:
            api.deprecated[name] = dep
        if params is not None:
            macros[name] = body


def resolve_macros(api: PetscApi, macros: dict[str, str]) -> None:
    """A function-like macro whose expansion is a call of an error-code function
    (or is cast to PetscErrorCode) returns one too; iterate to a fixed point
    because macros forward to macros (PetscNew -> PetscCalloc1 -> PetscMallocA)."""
    # A macro that is a statement (`do { ... } while (0)`, such as
    # PetscOptionsHeadBegin) or forwards to MPI hides the function of that name.
    hidden = {name for name, body in macros.items()
              if body.strip().startswith("do") or re.match(r"^\(*\s*P?MPI_\w+\s*\(", body.strip())}
    api.errorcode_functions -= hidden
    changed = True
    while changed:
        changed = False
        for name, body in macros.items():
            if name in api.errorcode_functions or name in hidden:
                continue
            body = _DEPRECATED.sub(" ", body).strip()
            body = re.sub(r"^PETSC_DEPRECATED_\w+\s*\([^)]*\)\s*", "", body)
            if re.match(r"^\(*\s*\(\s*PetscErrorCode\s*\)", body):
                api.errorcode_functions.add(name)
                changed = True
                continue
            f = _FORWARD.match(body)
            if f and f.group(1) in api.errorcode_functions:
                api.errorcode_functions.add(name)
                changed = True


def scan_include_dirs(include_dirs: list[Path], version: str = "") -> PetscApi:
    """Scan every top-level public header (`<dir>/*.h`) of a PETSc installation.
    The private headers under include/petsc/private are not the user's API."""
    api = PetscApi(version=version, source=", ".join(str(d) for d in include_dirs))
    macros: dict[str, str] = {}
    found = False
    for d in include_dirs:
        for h in sorted(Path(d).glob("*.h")):
            found = True
            scan_text(h.read_text(errors="replace"), api, macros)
    if not found:
        raise FileNotFoundError(f"no PETSc headers (*.h) in {', '.join(map(str, include_dirs))}")
    resolve_macros(api, macros)
    return api


def scan_install(petsc_dir: str | Path | None = None, petsc_arch: str | None = None) -> PetscApi:
    """The API of a PETSc found as hpcbench.petsc_env.find_petsc finds it."""
    from hpcbench.petsc_env import find_petsc

    inst = find_petsc(petsc_dir, petsc_arch)
    return scan_include_dirs([d for d in inst.include_dirs if d.is_dir()], inst.version)
