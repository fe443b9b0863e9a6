"""PETSc's own tutorials, submitted unchanged for the problem of their module (with that
problem's cases), pass every gate: expert code is not zeroed by a gate.

The tutorials come from the petsc sdist of the installed version (the one
scripts/setup.sh built from). They do not print the problem's quantities, so their
accuracy is not the point; the gates are: compilation, execution, memory safety and API
usage. Among them ts/tutorials/ex9.c includes petsc/private/kernels/blockinvert.h (a
finding of the public_api evaluator, library category, not a gate's zero) and declares
functions PETSC_UNUSED (which the parser once could not read). The DMPlex/PetscFE
tutorials (snes ex12, ex13 with PLEXFE_QFUNCTION, ex27 with PetscFECreateLagrangeByCell)
need a simplex mesh generator this PETSc lacks (no Triangle): their parse and module check
are tested without running them (tests/test_quality_deterministic.py, tests/test_units.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from hpcbench.petsc_env import find_petsc
from tests.conftest import hpcbench, profile_file

pytestmark = [pytest.mark.petsc, pytest.mark.slow]
AGENT = "petsc-tutorials"

# problem -> tutorials (src/<path>), each runnable at the problem's cases and rank counts
TUTORIALS: dict[str, list[str]] = {
    "rosenbrock": ["tao/unconstrained/tutorials/rosenbrock1.c", "tao/unconstrained/tutorials/rosenbrock3.c",
                   "tao/unconstrained/tutorials/eptorsion1.c", "tao/unconstrained/tutorials/eptorsion2.c",
                   "tao/unconstrained/tutorials/minsurf1.c", "tao/unconstrained/tutorials/minsurf2.c",
                   "tao/bound/tutorials/plate2.c", "tao/leastsquares/tutorials/cs1.c",
                   "tao/complementarity/tutorials/minsurf1.c", "tao/constrained/tutorials/ex1.c"],
    # TS tutorials go to robertson (TS, one rank): ex9 (finite volumes on a DMDA) among them
    "robertson": ["ts/tutorials/ex1.c", "ts/tutorials/ex2.c", "ts/tutorials/ex8.c", "ts/tutorials/ex9.c",
                  "ts/tutorials/ex16.c", "ts/tutorials/ex20.c", "ts/tutorials/ex22.c", "ts/tutorials/ex25.c",
                  "ts/tutorials/ex31.c", "ts/tutorials/ex41.c", "ts/tutorials/ex44.c"],
    "vec-scatter": ["vec/vec/tutorials/ex44.c", "dm/tutorials/ex6.c", "dm/tutorials/ex22.c",
                    "vec/vec/utils/tagger/tutorials/ex1.c"],
}
GATES = ("generation", "compilation", "execution", "memory_safety", "api_usage")



def _attempt(path: str) -> str:
    return path.replace("/tutorials/", "-").replace("/", "-").removesuffix(".c").lower()


def _sdist() -> Path:
    """The petsc sdist of the installed version, as tests/test_quality_deterministic.py finds it
    (cached under the venv, downloaded with pip once when missing)."""
    version = find_petsc().version
    cache = Path(sys.prefix) / "hpcbench-cache"
    sdist = cache / f"petsc-{version}.tar.gz"
    if not sdist.is_file():
        cache.mkdir(exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
                        f"petsc=={version}", "-d", str(cache)], check=True, timeout=900)
    return sdist


def _with_local_headers(tar: tarfile.TarFile, member: str, folder: Path) -> list[str]:
    """The tutorial and the headers of its own folder it includes (`#include "x.h"`), as its
    makefile would find them: rosenbrock1.c comes with rosenbrock1.h."""
    names = [member]
    got = tar.extractfile(member)
    assert got is not None, member
    text = got.read()
    for inc in re.findall(rb'^\s*#\s*include\s+"([^"/]+)"', text, re.M):
        header = f"{member.rsplit('/', 1)[0]}/{inc.decode()}"
        if header in tar.getnames():
            names.append(header)
    for name in names:
        data = tar.extractfile(name)
        assert data is not None, name
        (folder / Path(name).name).write_bytes(data.read())
    return [Path(n).name for n in names]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("tutorials")
    tree = tmp / "tree"
    with tarfile.open(_sdist()) as tar:
        prefix = tar.getnames()[0].split("/")[0]
        for pid, paths in TUTORIALS.items():
            for path in paths:
                folder = tree / AGENT / pid / _attempt(path)
                folder.mkdir(parents=True)
                files = _with_local_headers(tar, f"{prefix}/src/{path}", folder)
                (folder / "submission.json").write_text(json.dumps(
                    {"problem": pid, "agent": AGENT, "attempt": _attempt(path), "entry": Path(path).name,
                     "files": files}))
    out = tmp / "c"
    # each tutorial at its problem's cheapest case, no held-out draw: what is asserted is that it
    # builds, runs, leaks nothing and parses (the tutorials ignore the problems' arguments)
    one_case = profile_file("one-case", cases="cheapest", held_out=False)
    hpcbench("run", "--profile", str(one_case), "--submissions", str(tree), "--problems", ",".join(TUTORIALS),
             "--out", str(out), check=False)  # exit 1 when accuracy fails: the tutorials print other things
    return out


@pytest.fixture(scope="module")
def rows(campaign) -> dict:
    got = json.loads(hpcbench("report", str(campaign), "--format", "json").stdout)["submissions"]
    return {(r["problem"], r["attempt"]): r for r in got if r["agent"] == AGENT}


def test_at_least_twenty_tutorials_run_for_the_problems_of_their_modules(rows):
    assert sum(len(v) for v in TUTORIALS.values()) >= 20
    assert set(rows) == {(pid, _attempt(p)) for pid, paths in TUTORIALS.items() for p in paths}


@pytest.mark.parametrize("key", [(pid, _attempt(p)) for pid, paths in TUTORIALS.items() for p in paths])
def test_every_tutorial_passes_every_gate(rows, key):
    row = rows[key]
    assert row["gates_passed"], f"{key}: gate {row['failed_gate']}: {row['why']}"
    for gate in GATES:
        ev = row["evaluators"][gate]
        assert ev["status"] == "scored" and ev["score"] == 1.0, (gate, ev["rationale"])
    # every tutorial parses in full: PETSc's attribute macros and libCEED point functions included
    assert row["evaluators"]["api_usage"]["confidence"] == 1.0, row["evaluators"]["api_usage"]["rationale"]


def test_a_private_header_is_a_library_finding_not_a_zero(rows):
    row = rows[("robertson", "ts-ex9")]
    assert row["gates_passed"] and "private headers included" in row["evaluators"]["api_usage"]["rationale"]
    pub = row["evaluators"]["public_api"]
    assert pub["score"] == 0.5 and "petsc/private/kernels/blockinvert.h" in pub["rationale"]
    assert pub["category"] == "library"
    # the other tutorials keep to the public headers
    assert [k for k, r in rows.items() if r["evaluators"]["public_api"]["score"] != 1.0] == [("robertson", "ts-ex9")]
