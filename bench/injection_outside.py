"""Recall of the injection scan on the outside red team's set (tests/injection_outside.py), per
class, and its false positives on that set's hard negatives.

Each item goes through the scan's public entry points as the prompt_injection evaluator calls
them: every source file through injections_in_source, a run's stdout and stderr and -log_view's
names through injections_in_text (kinds output and log_view), a submission.json field as
metadata. An evasion counts as caught when any of its parts has a finding.

    .venv/bin/python bench/injection_outside.py [--list]

`--list` also names every missed evasion and every flagged negative, with the finding."""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="name the misses and the false positives")
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


if __name__ == "__main__":
    main()
