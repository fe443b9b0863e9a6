"""The contamination measure (hpcbench/contamination): a PETSc tutorial copied with its
names renamed is found and flagged, independent programs are not, and the normalisation
ignores exactly what a copier changes. Against the real tutorials of the installed PETSc
(its release tarball, as scripts/setup.sh keeps it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hpcbench.contamination import THRESHOLD, Index, folder_sources, load_corpus, program_match, tokens
from hpcbench.contamination.disguise import disguise
from hpcbench.petsc_env import find_petsc
from hpcbench.problem import load_problems

ROOT = Path(__file__).resolve().parent.parent
LIB = frozenset({"PetscCall", "VecNorm", "Vec", "PetscReal", "NORM_2", "VecSum"})


@pytest.fixture(scope="module")
def index() -> Index:
    version = find_petsc().version
    cache = Path(sys.prefix) / "hpcbench-cache"
    sdist = cache / f"petsc-{version}.tar.gz"
    if not sdist.is_file():
        cache.mkdir(exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
                        f"petsc=={version}", "-d", str(cache)], check=True, timeout=900)
    return Index.build(load_corpus(sdist, version))


def _original(index: Index, rel: str) -> str:
    import tarfile

    with tarfile.open(index.source) as tar:
        m = next(m for m in tar if m.name.split("/", 1)[-1] == rel)
        f = tar.extractfile(m)
        assert f is not None
        return f.read().decode()


def test_tokens_ignore_names_numbers_strings_comments_but_not_petsc_calls():
    a = ('static double norm(Vec x) { PetscReal r; /* c */ PetscCall(VecNorm(x, NORM_2, &r)); puts("a"); '
         'return 2.0 * r; }')
    b = ('static double size2(Vec vv) {\n PetscReal out; // other\n PetscCall(VecNorm(vv, NORM_2, &out)); '
         'puts("zz"); return 3 * out; }')
    c = 'static double norm(Vec x) { PetscReal r; PetscCall(VecSum(x, &r)); puts("a"); return 2.0 * r; }'
    assert tokens(a, LIB) == tokens(b, LIB)
    assert tokens(a, LIB) != tokens(c, LIB)
    assert "VecNorm" in tokens(a, LIB) and "norm" not in tokens(a, LIB) and "x" not in tokens(a, LIB)


@pytest.mark.parametrize("rel", ["src/snes/tutorials/ex5.c", "src/ksp/ksp/tutorials/ex56.c",
                                 "src/ts/tutorials/advection-diffusion-reaction/ex5.c"])
def test_a_tutorial_copied_with_renamed_variables_is_found_and_flagged(index, rel):
    text = _original(index, rel)
    copy = disguise(text, index.library)
    assert "PetscCall" in copy and copy != text
    for drop, least in ((0.0, 0.99), (0.2, THRESHOLD), (0.4, THRESHOLD)):
        m = program_match(index, {"main.c": disguise(text, index.library, drop=drop, seed=3)})
        assert m.file == rel, (drop, m)
        assert m.similarity >= least and m.flagged, (drop, m)
    # the same copy in a header of a suffix the scans once skipped, main.c only including it
    hidden = program_match(index, {"main.c": '#include "solver.hpp"\n', "solver.hpp": copy})
    assert hidden.file == rel and hidden.flagged, hidden


def test_every_suffix_a_submission_accepts_is_read(tmp_path):
    """Every C-family suffix a submission accepts is read. A petsc4py program is not measured (the
    corpus is PETSc's C examples, docs/python.md): it has no sources here, so planning records no
    similarity for it, never a clean one."""
    from hpcbench.contamination import PROGRAM_SUFFIXES
    from hpcbench.submission import C_SUFFIXES, SOURCE_SUFFIXES

    assert set(C_SUFFIXES) <= set(PROGRAM_SUFFIXES)
    assert set(SOURCE_SUFFIXES) - set(PROGRAM_SUFFIXES) == {".py"}
    (tmp_path / "main.py").write_text("from petsc4py import PETSc\n")
    assert folder_sources(tmp_path) == {}


def test_bundled_references_are_below_the_threshold_and_name_their_nearest_file(index):
    seen = 0
    for pid, b in load_problems().items():
        sources = folder_sources(b.reference_dir) if b.reference_dir.is_dir() else {}
        if not sources:
            continue
        m = program_match(index, sources)
        assert m.file.startswith("src/") and ("/tutorials/" in m.file or "/tests/" in m.file), (pid, m)
        assert 0.0 < m.similarity < THRESHOLD and not m.flagged, (pid, m)
        seen += 1
    assert seen >= 6


def test_cli_lists_each_problem_with_its_nearest_example(index, tmp_path):
    exe = Path(sys.executable).parent / "hpcbench"
    proc = subprocess.run([str(exe), "problems", "--contamination", "--petsc-src", index.source],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "nearest PETSc example: src/" in proc.stdout and "similarity 0." in proc.stdout
    bad = tmp_path / "not-petsc"
    bad.mkdir()
    proc = subprocess.run([str(exe), "problems", "--contamination", "--petsc-src", str(bad)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "not a PETSc source tree" in proc.stderr and "Traceback" not in proc.stderr


def test_planning_measures_every_program_and_the_report_flags_the_copy(index, tmp_path):
    """A campaign planned with a disguised copy of snes ex5.c beside the references: the
    snapshot holds every planned program's nearest example, the copy is a near-copy and the
    reference is not; collect keeps it in campaign.h5 and the report names the copy."""
    import json

    from hpcbench.pipeline import plan_campaign
    from hpcbench.plan.options import RunOptions
    from hpcbench.report.data import load_report, near_copies
    from hpcbench.site import load_site
    from hpcbench.store import collect

    tree = tmp_path / "tree" / "copier" / "bratu-fold" / "1"
    tree.mkdir(parents=True)
    (tree / "main.c").write_text(disguise(_original(index, "src/snes/tutorials/ex5.c"), index.library))
    (tree / "submission.json").write_text(json.dumps({"problem": "bratu-fold", "agent": "copier", "attempt": "1",
                                                      "entry": "main.c", "files": ["main.c"]}))
    out = tmp_path / "c"
    opts = RunOptions(agents=["reference"], submissions=str(tmp_path / "tree"), problems="bratu-fold")
    planned = plan_campaign(out, load_site("local"), opts)
    assert planned.plan.jobs
    snap = json.loads((out / "snapshot" / "contamination.json").read_text())
    progs = snap["programs"]
    assert progs["copier/bratu-fold/1"]["file"] == "src/snes/tutorials/ex5.c"
    assert progs["copier/bratu-fold/1"]["near_copy"] and progs["copier/bratu-fold/1"]["similarity"] > 0.95
    assert not progs["reference/bratu-fold/1"]["near_copy"]
    assert snap["threshold"] == THRESHOLD and snap["corpus"]["files"] > 1000

    from hpcbench.plan.campaign import Campaign

    collect(Campaign(out))
    exe = str(Path(sys.executable).parent / "hpcbench")
    subprocess.run([exe, "score", str(out)], capture_output=True, text=True, timeout=600)
    rep = load_report(out / "campaign.h5")
    assert [(r["agent"], r["contamination"]["file"]) for r in near_copies(rep)] == \
        [("copier", "src/snes/tutorials/ex5.c")]
    md = subprocess.run([exe, "report", str(out), "--format", "md"], capture_output=True, text=True, timeout=600)
    assert "## Closeness to PETSc's examples" in md.stdout and "snes/tutorials/ex5.c 1.00 NEAR-COPY" in md.stdout
