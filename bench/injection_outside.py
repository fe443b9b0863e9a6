"""Recall of the injection scan on the outside red team's set (tests/injection_outside.py), per
class, and its false positives on that set's hard negatives.

Each item goes through the scan's public entry points as the prompt_injection evaluator calls
them: every source file through injections_in_source, a run's stdout and stderr and -log_view's
names through injections_in_text (kinds output and log_view), a submission.json field as
metadata. An evasion counts as caught when any of its parts has a finding.

    .venv/bin/python bench/injection_outside.py [--list] [--cost OLD_TREE]

`--list` also names every missed evasion and every flagged negative, with the finding. `--cost OLD_TREE`
also times this scan against the one of another checkout (say `git worktree add /tmp/old <commit>`) on
PETSc's tutorial and test sources (from the sdist hpcbench caches in the venv), the two interleaved file
by file so that a shared machine's load falls on both alike; each scan's result cache is cleared before
every file."""

from __future__ import annotations

import argparse
import collections
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hpcbench.evaluators.injection_scan import (  # noqa: E402
    InjectionFinding,
    injections_in_source,
    injections_in_text,
)
from tests.injection_outside import EVASIONS, NEGATIVES, Item  # noqa: E402


def findings(item: Item) -> list[InjectionFinding]:
    """What the scan reports on everything of the item a judge would be shown."""
    found: list[InjectionFinding] = []
    for name, text in item.files:
        found += injections_in_source(name, text)
    if item.output:
        found += injections_in_text(item.output, "stdout of case 0 at 1 rank(s)", "output")
    if item.stderr:
        found += injections_in_text(item.stderr, "stderr of case 0 at 1 rank(s)", "output")
    if item.log_view:
        found += injections_in_text(item.log_view, "-log_view of case 0 at 1 rank(s)", "log_view")
    if item.metadata:
        found += injections_in_text(item.metadata, "submission.json args", "metadata")
    return found


def table(items: tuple[Item, ...]) -> dict[str, tuple[int, int]]:
    """Per class: (items, items with a finding)."""
    counts: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for it in items:
        counts[it.cls][0] += 1
        counts[it.cls][1] += bool(findings(it))
    return {k: (v[0], v[1]) for k, v in sorted(counts.items())}


def _scanner(tree: Path) -> ModuleType:
    """The injection scan of another checkout, loaded beside this one under its own module names."""
    mods: dict[str, ModuleType] = {}
    saved = {k: sys.modules.get(k) for k in _SCAN_MODULES}
    try:
        for mod in _SCAN_MODULES:
            spec = importlib.util.spec_from_file_location(mod, tree / "evaluators" / f"{mod.rsplit('.', 1)[1]}.py")
            assert spec and spec.loader, tree
            m = importlib.util.module_from_spec(spec)
            sys.modules[mod] = m  # the scan imports its siblings by these names
            spec.loader.exec_module(m)
            mods[mod] = m
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return mods[_SCAN_MODULES[-1]]


_SCAN_MODULES = ("hpcbench.evaluators.quick_regex", "hpcbench.evaluators.injection_disguises",
                 "hpcbench.evaluators.injection_lexicon", "hpcbench.evaluators.injection_scan")


def cost(old_tree: Path, sdist: Path) -> None:
    import tarfile
    import time

    import hpcbench.evaluators.injection_scan as new

    old = _scanner(old_tree)
    times: dict[str, list[float]] = {"old": [], "new": []}
    flagged = {"old": 0, "new": 0}
    with tarfile.open(sdist) as tar:
        for m in tar:
            if not (m.isfile() and ("/tutorials/" in m.name or "/tests/" in m.name)
                    and m.name.endswith((".c", ".h", ".cxx", ".cu"))):
                continue
            f = tar.extractfile(m)
            src = f.read().decode("utf-8", "replace") if f else ""
            for tag, scan in (("old", old), ("new", new)):
                scan._first.cache_clear()
                t = time.perf_counter()
                flagged[tag] += bool(scan.injections_in_source(m.name, src))
                times[tag].append(time.perf_counter() - t)
    for tag in ("old", "new"):
        ts = sorted(times[tag])
        print(f"{tag}: {len(ts)} files, {sum(ts):.1f} s in all, mean {1000 * sum(ts) / len(ts):.1f} ms, "
              f"p99 {1000 * ts[int(len(ts) * 0.99)]:.0f} ms, slowest {ts[-1]:.2f} s, {flagged[tag]} flagged")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="name the misses and the false positives")
    ap.add_argument("--cost", type=Path, metavar="OLD_TREE", help="time this scan against OLD_TREE's")
    ap.add_argument("--sdist", type=Path, default=Path(__file__).resolve().parent.parent
                    / ".venv/hpcbench-cache/petsc-3.26.1.tar.gz")
    args = ap.parse_args(argv)
    ev = table(EVASIONS)
    print("| class | evasions | caught | recall |\n|---|---|---|---|")
    for cls, (n, k) in ev.items():
        print(f"| {cls} | {n} | {k} | {k / n:.0%} |")
    n, k = sum(v[0] for v in ev.values()), sum(v[1] for v in ev.values())
    print(f"| **all** | {n} | {k} | {k / n:.0%} |\n")
    neg = table(NEGATIVES)
    print("| negatives | items | flagged |\n|---|---|---|")
    for cls, (n, k) in neg.items():
        print(f"| {cls} | {n} | {k} |")
    print(f"| **all** | {sum(v[0] for v in neg.values())} | {sum(v[1] for v in neg.values())} |")
    if args.list:
        print("\nmissed:")
        for it in EVASIONS:
            if not findings(it):
                print(f"  {it.id} ({it.cls}): {it.note}")
        print("\nfalse positives:")
        for it in NEGATIVES:
            for f in findings(it):
                print(f"  {it.id}: {f}")
    if args.cost:
        cost(args.cost, args.sdist)


if __name__ == "__main__":
    main()
