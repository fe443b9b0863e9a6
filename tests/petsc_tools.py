"""Build and run a PETSc program folder directly, for tests that check reference
solutions against independent sources without going through a campaign."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hpcbench.jobs import build_cache
from hpcbench.jobs.launch import mpi_env
from hpcbench.petsc_env import find_petsc, parse_version
from tests.conftest import SESSION, cores


def build(src: Path, dest: Path, entry: str = "main.c") -> Path:
    """Copy `src` into `dest` and build it with PETSc's makefiles; return the binary."""
    petsc = find_petsc()
    problem_json = Path(src).parent / "problem.json"
    if problem_json.is_file():
        need = json.loads(problem_json.read_text())["min_petsc_version"]
        if parse_version(petsc.version) < parse_version(need):
            pytest.skip(f"{problem_json.parent.name} needs PETSc >= {need}, this is {petsc.version}")
    shutil.copytree(src, dest, dirs_exist_ok=True)
    sources = sorted(p.name for p in dest.iterdir() if p.suffix in (".c", ".cu", ".cxx"))
    # through the session's build cache (tests/conftest.py): each reference is built once a session
    res = build_cache.build(str(SESSION / "cache" / "builds"), dest, sources, entry, petsc, timeout_s=300)
    assert res.exit_code == 0, f"build failed:\n{res.stdout}\n{res.stderr}"
    return dest / "app"


def run(binary: Path, args: list[str], ranks: int = 1, timeout: float = 120) -> str:
    """Run with mpiexec and return stdout; fails the test on a non-zero exit."""
    cmd = ["mpiexec", "-n", str(ranks), "--oversubscribe", str(binary), *args]
    with cores(ranks):  # the session's core slots: never on cores another worker's runs hold
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=binary.parent,
                              env={**os.environ, **mpi_env()})
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def quantities(stdout: str) -> dict[str, list[float]]:
    """Parse the output contract: lines `name: v1 v2 ...`."""
    from hpcbench.evaluators.output_contract import parse_quantities

    return parse_quantities(stdout)
