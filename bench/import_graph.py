"""The import graph's figures, read the way tests/test_shape.py reads it: modules, module
edges and circles; units (packages and top-level modules), unit edges, package circles and
imports against ARCHITECTURE.md's layer table.

    python bench/import_graph.py [TREE]     (default: this checkout)

Run it on two trees (e.g. `git archive main | tar -x -C /tmp/before`) to compare them."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    tree = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent).resolve()
    os.chdir(tree)
    sys.path.insert(0, str(tree))
    from tests import test_shape as shape

    edges = shape.graph()
    unit_edges = shape.unit_graph(edges)
    by_unit: dict[str, set[str]] = {}
    for a, b in unit_edges:
        by_unit.setdefault(a, set()).add(b)
    units = {shape.unit(m) for m in edges} | {b for _, b in unit_edges}
    print(f"{tree}")
    print(f"modules {len(edges)}  module edges {sum(len(v) for v in edges.values())}  "
          f"module circles {len(shape.cycles(edges))}")
    print(f"units {len(units)}  unit edges {len(unit_edges)}  package circles {len(shape.cycles(by_unit))}  "
          f"imports against the layer table {len(shape.against_layers(unit_edges, shape.layers()))}")


if __name__ == "__main__":
    main()
