"""Benchmark: where the contamination measure's flagging threshold comes from.

Two populations, measured with hpcbench.contamination against PETSc's tutorials and tests
of the installed version:
- copies: the PETSc tutorials nearest to the bundled problems, disguised (every name of
  their own renamed, numbers and messages changed, comments dropped) and with 0%, 20% and
  40% of their lines deleted; each is compared with the whole corpus, its own original in it;
- independent: every bundled reference and sample submission (written without copying a
  tutorial), each against its nearest file.

Prints each program's nearest file and similarity, the range of each population and the
threshold in use (hpcbench.contamination.THRESHOLD), and exits 1 when the threshold does
not separate the two (a copy with up to 20% deleted below it, or an independent program
above it).

Usage: python bench/contamination_threshold.py [--petsc-src TREE_OR_TARBALL]"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hpcbench.contamination import THRESHOLD, Index, default_source, folder_sources, load_corpus, program_match
from hpcbench.contamination.disguise import disguise
from hpcbench.petsc_env import find_petsc

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = ["src/snes/tutorials/ex5.c", "src/snes/tutorials/ex19.c", "src/snes/tutorials/ex9.c",
             "src/snes/tutorials/ex15.c", "src/ksp/ksp/tutorials/ex45.c", "src/ksp/ksp/tutorials/ex56.c",
             "src/ts/tutorials/advection-diffusion-reaction/ex5.c", "src/snes/tutorials/ex69.c",
             "src/dm/impls/stag/tutorials/ex2.c", "src/tao/unconstrained/tutorials/rosenbrock1.c",
             "src/ts/tutorials/ex8.c", "src/vec/vec/tutorials/ex6.c"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--petsc-src", help="PETSc source tree or release tarball (default: as `hpcbench problems "
                                        "--contamination` finds it)")
    args = ap.parse_args()
    petsc = find_petsc()
    t0 = time.perf_counter()
    corpus = load_corpus(Path(args.petsc_src) if args.petsc_src else default_source(petsc.petsc_dir, petsc.version),
                         petsc.version)
    index = Index.build(corpus)
    print(f"corpus: {len(corpus.files)} files of PETSc {petsc.version} ({time.perf_counter() - t0:.1f} s)")
    copies = []
    print("\ncopies (disguised tutorial, share of lines deleted -> nearest, similarity)")
    for rel in TUTORIALS:
        if rel not in corpus.files:
            print(f"  {rel}: not in this PETSc's source, skipped")
            continue
        text = _original(corpus.source, rel)
        for drop in (0.0, 0.2, 0.4):
            m = program_match(index, {"main.c": disguise(text, corpus.library, drop=drop, seed=1)})
            copies.append((drop, m.similarity))
            print(f"  {rel:55s} {drop:4.0%} -> {m.file} {m.similarity:.3f}" + ("" if m.file == rel else "  (other!)"))
    print("\nindependent (bundled references and samples -> nearest, similarity)")
    independent = []
    folders = sorted(ROOT.glob("problems/*/reference")) + sorted(ROOT.glob("examples/submissions/*/*/*"))
    for folder in folders:
        sources = folder_sources(folder)
        if sources:
            m = program_match(index, sources)
            independent.append(m.similarity)
            print(f"  {folder.relative_to(ROOT)!s:55s} -> {m.file} {m.similarity:.3f}")
    lo_copy = min(s for d, s in copies if d <= 0.2)
    hi_ind = max(independent)
    print(f"\ncopies with <= 20% deleted: {lo_copy:.3f} .. {max(s for _, s in copies):.3f}; with 40% deleted: "
          f"{min(s for d, s in copies if d == 0.4):.3f} and up")
    print(f"independent programs: {min(independent):.3f} .. {hi_ind:.3f}")
    print(f"threshold in use: {THRESHOLD}")
    return 0 if hi_ind < THRESHOLD <= lo_copy else 1


def _original(source: str, rel: str) -> str:
    import tarfile

    path = Path(source)
    if path.is_dir():
        return (path / rel).read_text(errors="replace")
    with tarfile.open(path) as tar:
        for m in tar:
            if m.isfile() and m.name.split("/", 1)[-1] == rel:
                f = tar.extractfile(m)
                return f.read().decode(errors="replace") if f else ""
    raise FileNotFoundError(rel)


if __name__ == "__main__":
    sys.exit(main())
