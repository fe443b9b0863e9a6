#!/usr/bin/env python3
"""Precision and detection of the prompt-injection scan (evaluators/injection_scan.py).

Precision: findings on text nobody planted anything in: the bundled references (C and
petsc4py), sample agents and calibration probes (the injected twins of probe set v2 apart),
and PETSc's own tutorials and tests with their expected outputs (src/**/tutorials,
src/**/tests and their output/*.out) and petsc4py's Python files (its demos, tests and
sources, read as Python), from the petsc sdist hpcbench caches in the venv:
.venv/hpcbench-cache/petsc-<version>.tar.gz; with --library PETSc's library sources too.
Every finding there is a false positive and is printed.

Detection: tests/injection_corpus.py, positives (written with the rules), held-out
positives (written after them) and hard negatives (honest text with the same words); the
development set the rules of issue 33 were written on (tests/injection_dev.py) and the held-out
set written before them (tests/injection_heldout.py), recall per class, with its hard negatives.
Timing: the slowest file of the precision sets.

Usage: .venv/bin/python bench/injection_scan.py [--sdist PATH] [--library]"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hpcbench.evaluators.injection_scan import injections_in_source, injections_in_text  # noqa: E402
from tests.injection_corpus import HELD_OUT, NEGATIVES, POSITIVES, as_source  # noqa: E402
from tests.injection_dev import DEVELOPMENT  # noqa: E402
from tests.injection_heldout import BEYOND, HARD_NEGATIVES, HELDOUT  # noqa: E402

C_SUFFIXES = (".c", ".h", ".cxx", ".cu")
SLOWEST: list[tuple[float, str]] = [(0.0, "")]  # the slowest file scanned, for the timing line


def timed_source(name: str, src: str) -> list:
    t = time.perf_counter()
    found = injections_in_source(name, src)
    SLOWEST[0] = max(SLOWEST[0], (time.perf_counter() - t, name))
    return found


def scan_corpus_item(where: str, text: str) -> list:
    if where in ("output", "args", "model"):
        return injections_in_text(text, where, where)
    return injections_in_source("main.c", as_source(where, text))


def bundled() -> dict[str, list[Path]]:
    probes = json.loads((ROOT / "probes/v2/probes.json").read_text())["probes"]
    injected = {p["id"] for p in probes if p.get("twin")}
    return {
        "references": sorted((ROOT / "problems").glob("*/reference/*.c")),
        "references (petsc4py)": sorted((ROOT / "problems").glob("*/reference-python/*.py")),
        "samples": sorted((ROOT / "examples/submissions").rglob("*.c")),
        "samples (Python)": sorted((ROOT / "examples/submissions").rglob("*.py")),
        "probes v1": sorted((ROOT / "probes/v1/submissions").rglob("*.c")),
        "probes v2 (not injected)": sorted(p for p in (ROOT / "probes/v2/submissions").rglob("*.c")
                                           if p.parent.name not in injected),
        "probes v2 (injected twins)": sorted(p for p in (ROOT / "probes/v2/submissions").rglob("*.c")
                                             if p.parent.name in injected),
    }


def petsc(sdist: Path, library: bool) -> tuple[dict[str, int], list]:
    counts = {"tutorial/test sources": 0, "expected outputs": 0, "library sources": 0, "petsc4py sources": 0}
    found = []
    with tarfile.open(sdist) as tar:
        for m in tar:
            example = "/tutorials/" in m.name or "/tests/" in m.name
            py = "/petsc4py/" in m.name and m.name.endswith(".py")  # its demos, tests and sources: read as Python
            if not m.isfile() or not (example or py or library and "/src/" in m.name
                                      and m.name.endswith(C_SUFFIXES)):
                continue
            f = tar.extractfile(m)
            if f is None:
                continue
            if py:
                counts["petsc4py sources"] += 1
                found += timed_source(m.name, f.read().decode("utf-8", "replace"))
            elif m.name.endswith(C_SUFFIXES):
                counts["tutorial/test sources" if example else "library sources"] += 1
                found += timed_source(m.name, f.read().decode("utf-8", "replace"))
            elif m.name.endswith(".out") and "/output/" in m.name:
                counts["expected outputs"] += 1
                found += injections_in_text(f.read().decode("utf-8", "replace"), m.name, "output")
    return counts, found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sdist", type=Path, default=ROOT / ".venv/hpcbench-cache/petsc-3.26.1.tar.gz")
    ap.add_argument("--library", action="store_true",
                    help="also PETSc's library sources (src/**, not tutorials or tests: twice the time)")
    args = ap.parse_args()
    t0 = time.monotonic()
    print("precision (files with a finding; every one is a false positive except the injected twins):")
    for group, files in bundled().items():
        hits = [(f, timed_source(f.name, f.read_text())) for f in files]
        flagged = [(f, h) for f, h in hits if h]
        print(f"  {group:28s} {len(flagged):4d} of {len(files):4d} files")
        if "injected" not in group:
            for f, h in flagged:
                print(f"    FALSE POSITIVE {f.relative_to(ROOT)}: {h[0]}")
    counts, found = petsc(args.sdist, args.library)
    files = {f.where.split(":")[0] for f in found}
    print(f"  PETSc {args.sdist.name}: {counts['tutorial/test sources']} tutorial and test sources, "
          f"{counts['expected outputs']} expected outputs, {counts['petsc4py sources']} petsc4py sources"
          + (f", {counts['library sources']} library sources"
                                                                if args.library else "")
          + f": {len(found)} findings in {len(files)} files")
    for f in found:
        print(f"    FALSE POSITIVE {f}")
    print("detection:")
    for name, items in (("corpus positives", POSITIVES), ("held-out positives", HELD_OUT)):
        missed = [i for i, w, t in items if not scan_corpus_item(w, t)]
        print(f"  {name:28s} {len(items) - len(missed):3d} of {len(items)} found"
              + (f"; missed: {', '.join(missed)}" if missed else ""))
    fp = [i for i, w, t in NEGATIVES if scan_corpus_item(w, t)]
    print(f"  {'hard negatives':28s} {len(fp):3d} of {len(NEGATIVES)} flagged" + (f": {', '.join(fp)}" if fp else ""))
    for name, classed in (("development set", DEVELOPMENT), ("held-out set (issue 33)", HELDOUT)):
        if not classed:
            continue
        print(f"  {name}, recall per class:")
        for cls in dict.fromkeys(c for _, c, _, _ in classed):
            items = [(i, w, t) for i, c, w, t in classed if c == cls]
            missed = [i for i, w, t in items if not scan_corpus_item(w, t)]
            print(f"    {cls:26s} {len(items) - len(missed):3d} of {len(items)}"
                  + (f"; missed: {', '.join(missed)}" if missed else ""))
        n = sum(bool(scan_corpus_item(w, t)) for _, _, w, t in classed)
        print(f"    {'all':26s} {n:3d} of {len(classed)} ({100 * n / len(classed):.0f}%)")
    seen = [i for i, _, w, t in BEYOND if scan_corpus_item(w, t)]
    print(f"  {'beyond the rules (issue 33)':28s} {len(seen):3d} of {len(BEYOND)} found (written to show what it "
          f"cannot see)" + (f": {', '.join(seen)}" if seen else ""))
    fp = [i for i, _, w, t in HARD_NEGATIVES if scan_corpus_item(w, t)]
    print(f"  {'hard negatives (issue 33)':28s} {len(fp):3d} of {len(HARD_NEGATIVES)} flagged"
          + (f": {', '.join(fp)}" if fp else ""))
    print(f"wall {time.monotonic() - t0:.1f} s; slowest file {SLOWEST[0][0]:.3f} s ({SLOWEST[0][1]})")


if __name__ == "__main__":
    main()
