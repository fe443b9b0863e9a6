"""Find a PETSc installation and describe it: version, configure options, features.

Lean on purpose (stdlib only): compute nodes import it from hpcbench.jobs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class PetscInstall:
    petsc_dir: Path
    petsc_arch: str = ""
    version: str = ""
    configure_options: str = ""
    features: frozenset[str] = field(default_factory=frozenset)

    @property
    def conf_dir(self) -> Path:
        """Folder holding petscvariables (prefix installs: lib/petsc/conf)."""
        if self.petsc_arch:
            return self.petsc_dir / self.petsc_arch / "lib" / "petsc" / "conf"
        return self.petsc_dir / "lib" / "petsc" / "conf"

    @property
    def include_dirs(self) -> list[Path]:
        dirs = [self.petsc_dir / "include"]
        if self.petsc_arch:
            dirs.insert(0, self.petsc_dir / self.petsc_arch / "include")
        return dirs

    def version_tuple(self) -> tuple[int, ...]:
        return parse_version(self.version)

    def env(self) -> dict[str, str]:
        return {"PETSC_DIR": str(self.petsc_dir), "PETSC_ARCH": self.petsc_arch}


def parse_version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def _pypi_petsc_dir() -> Path | None:
    """PETSc built into this Python environment from PyPI's `petsc` sdist."""
    candidate = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidate = candidate / "site-packages" / "petsc"
    if (candidate / "include" / "petscversion.h").is_file():
        return candidate
    return None


def find_petsc(petsc_dir: str | os.PathLike | None = None, petsc_arch: str | None = None) -> PetscInstall:
    """PETSc from the arguments, else PETSC_DIR/PETSC_ARCH, else the one in this venv."""
    pd = petsc_dir or os.environ.get("PETSC_DIR") or _pypi_petsc_dir()
    if not pd:
        raise FileNotFoundError(
            "no PETSc found: set PETSC_DIR (and PETSC_ARCH), or run scripts/setup.sh to build PETSc 3.26.1"
        )
    pa = petsc_arch if petsc_arch is not None else os.environ.get("PETSC_ARCH", "")
    pd = Path(pd)
    if pa and not (pd / pa).is_dir():
        pa = ""  # prefix install given with a stale PETSC_ARCH in the environment
    base = PetscInstall(Path(pd), pa)
    if not (base.conf_dir / "petscvariables").is_file():
        raise FileNotFoundError(f"PETSC_DIR={pd} PETSC_ARCH={pa!r}: no {base.conf_dir / 'petscvariables'}")
    version = _read_version(base)
    conf = _read_configure_options(base)
    return PetscInstall(Path(pd), pa, version, conf, frozenset(_features(base)))


def find_variant(petsc_dir: str, petsc_arch: str | None) -> PetscInstall:
    """A site variant's PETSc: `auto` is found as find_petsc finds one (PETSC_DIR/ARCH, else the venv's)."""
    return find_petsc() if petsc_dir == "auto" else find_petsc(petsc_dir, petsc_arch)


def _read_version(p: PetscInstall) -> str:
    for inc in p.include_dirs:
        f = inc / "petscversion.h"
        if f.is_file():
            text = f.read_text()
            parts = [re.search(rf"#define\s+PETSC_VERSION_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "SUBMINOR")]
            if all(parts):
                return ".".join(m.group(1) for m in parts)  # type: ignore[union-attr]
    return ""


def _petscconf(p: PetscInstall) -> str:
    for inc in p.include_dirs:
        f = inc / "petscconf.h"
        if f.is_file():
            return f.read_text()
    return ""


def _read_configure_options(p: PetscInstall) -> str:
    m = re.search(r'#define\s+PETSC_CONFIGURE_OPTIONS\s+"(.*)"', _petscconf(p))
    if m:
        return m.group(1)
    pv = p.conf_dir / "petscvariables"
    m = re.search(r"^CONFIGURE_OPTIONS\s*=\s*(.*)$", pv.read_text(), re.M) if pv.is_file() else None
    return m.group(1).strip() if m else ""


def _features(p: PetscInstall) -> set[str]:
    """Capabilities a problem's `requires` is matched against."""
    conf = _petscconf(p)
    feats = {"tao", "ts", "dmplex", "dmstag", "petscfe"}  # in every PETSc >= 3.18
    for name, macro in {
        "cuda": "PETSC_HAVE_CUDA",
        "kokkos": "PETSC_HAVE_KOKKOS",
        "hip": "PETSC_HAVE_HIP",
        "sycl": "PETSC_HAVE_SYCL",
    }.items():
        if re.search(rf"#define\s+{macro}\s+1", conf):
            feats.add(name)
    return feats


def petsc_variable(p: PetscInstall, name: str) -> str:
    """Value of a make variable (e.g. CC, MPIEXEC) as PETSc's makefiles define it."""
    mk = f"include {p.conf_dir}/variables\nshow:\n\t@echo $({name})\n"
    out = subprocess.run(
        ["make", "-s", "--no-print-directory", "-f", "-", "show"],
        input=mk, capture_output=True, text=True, env={**os.environ, **p.env()}, timeout=60,
    )
    return out.stdout.strip()
