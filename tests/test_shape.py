"""The shape of the code, measured from its source (ast), not by eye: no import
cycle among hpcbench's modules, packages importing only down ARCHITECTURE.md's layer
table, no module reaching into another's private names, no function over 60 lines
outside report rendering."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Where each package's source lives (pyproject's package-dir: jobs/ and evaluators/ sit at the top).
SOURCES = {"hpcbench": ROOT / "hpcbench", "hpcbench.jobs": ROOT / "jobs", "hpcbench.evaluators": ROOT / "evaluators"}
MAX_LINES = 60
# Report rendering: one long function lays out one page, top to bottom, as it reads.
LONG_ALLOWED = {("hpcbench/report/html.py", "to_html"), ("hpcbench/report/markdown.py", "markdown")}


def modules() -> dict[str, Path]:
    found = {}
    for pkg, folder in SOURCES.items():
        for f in sorted(folder.rglob("*.py")):
            parts = list(f.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([pkg, *parts])] = f
    return found


MODULES = modules()
TREES = {name: ast.parse(path.read_text(), str(path)) for name, path in MODULES.items()}


def owner(dotted: str) -> str | None:
    """The module that `dotted` names, or the module holding it (a.b.name -> a.b)."""
    while dotted and dotted not in MODULES:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def imported(name: str, tree: ast.Module) -> list[tuple[str, str | None, int]]:
    """(module imported, name taken from it or None, line) for every hpcbench import,
    at module level or inside a function: both tie the two modules together."""
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names if a.name.startswith("hpcbench")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            if base.startswith("hpcbench"):
                out += [(base, a.name, node.lineno) for a in node.names]
    return out


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for name, tree in TREES.items():
        targets = set()
        for base, taken, _ in imported(name, tree):
            target = f"{base}.{taken}" if taken and f"{base}.{taken}" in MODULES else owner(base)
            if target and target != name:
                targets.add(target)
        edges[name] = targets
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        u = stack.pop()
                        on_stack.discard(u)
                        comp.append(u)
                        if u == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                on_stack.add(w)
                work.append((w, iter(sorted(edges.get(w, ())))))
            elif w in on_stack:
                low[v] = min(low[v], index[w])
    return found


def private(attr: str) -> bool:
    return attr.startswith("_") and not attr.startswith("__")


def defined_names(tree: ast.Module) -> set[str]:
    """Every name a module defines or assigns anywhere: its own private names are its own business."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def private_reach_ins() -> list[str]:
    """`from hpcbench.x import _name`, and `obj._name` where `_name` is not this module's own
    (a private method of a class defined elsewhere, a module's private function)."""
    bad = []
    for name, tree in TREES.items():
        rel = MODULES[name].relative_to(ROOT)
        for base, taken, line in imported(name, tree):
            if taken and private(taken) and f"{base}.{taken}" not in MODULES:
                bad.append(f"{rel}:{line}: imports {taken} from {base}")
        own = defined_names(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and private(node.attr) and node.attr not in own
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                bad.append(f"{rel}:{node.lineno}: uses {ast.unparse(node)}")
    return bad


def long_functions() -> list[str]:
    bad = []
    for name, tree in TREES.items():
        rel = MODULES[name].relative_to(ROOT).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_LINES and (rel, node.name) not in LONG_ALLOWED:
                    bad.append(f"{rel}:{node.lineno}: {node.name} is {n} lines")
    return bad


def unit(module: str) -> str:
    """The package (hpcbench.report) or top-level module (hpcbench.site) that `module` belongs to."""
    return ".".join(module.split(".")[:2])


def unit_graph(edges: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(unit, unit it imports) -> the module imports that make the edge."""
    out: dict[tuple[str, str], list[str]] = {}
    for a, targets in edges.items():
        for b in targets:
            if unit(a) != unit(b):
                out.setdefault((unit(a), unit(b)), []).append(f"{a} -> {b}")
    return out


def layers() -> dict[str, int]:
    """ARCHITECTURE.md's layer table: unit (without `hpcbench.`) -> layer, 0 at the bottom."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    block = re.search(r"<!-- layers:.*?-->\s*```\n(.*?)```\s*<!-- end layers -->", text, re.S)
    assert block, "ARCHITECTURE.md has no layer table between <!-- layers: ... --> and <!-- end layers -->"
    table = {}
    for line in block.group(1).splitlines():
        level, *names = line.split()
        for name in names:
            assert name not in table, f"{name} is in two layers of ARCHITECTURE.md"
            table[name] = int(level)
    return table


def against_layers(edges: dict[tuple[str, str], list[str]], table: dict[str, int]) -> list[str]:
    def short(u: str) -> str:
        return u.partition(".")[2] or u
    bad = []
    for (a, b), why in sorted(edges.items()):
        la, lb = table.get(short(a)), table.get(short(b))
        if la is not None and lb is not None and lb >= la:
            bad.append(f"{short(a)} (layer {la}) imports {short(b)} (layer {lb}): {', '.join(sorted(why)[:3])}")
    return bad


def test_the_scan_sees_the_package():
    """Guards the other tests against passing on an empty or misread tree."""
    assert {"hpcbench.cli", "hpcbench.jobs.job", "hpcbench.evaluators.base", "hpcbench.plan.campaign",
            "hpcbench.score.scoring", "hpcbench.store.collect"} <= set(MODULES)
    edges = graph()
    assert "hpcbench.plan.campaign" in edges["hpcbench.store.collect"]
    assert "hpcbench.jobs.records" in edges["hpcbench.plan.campaign"]
    # the detector finds a planted circle, and a planted reach-in
    assert cycles({**edges, "hpcbench.jobs.records": edges["hpcbench.jobs.records"] | {"hpcbench.plan.campaign"}})
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_unit_has_a_layer():
    table = layers()
    units = {unit(m).partition(".")[2] or "hpcbench" for m in MODULES}
    assert not units - set(table), f"units missing from ARCHITECTURE.md's layer table: {sorted(units - set(table))}"
    assert not set(table) - units, f"ARCHITECTURE.md's layer table names no such unit: {sorted(set(table) - units)}"


def test_packages_import_only_down_the_layer_table():
    edges = graph()
    table = layers()
    # the check sees an upward import: jobs (low) planted to import report (high)
    planted = {**edges, "hpcbench.jobs.records": edges["hpcbench.jobs.records"] | {"hpcbench.report.html"}}
    assert any(b.startswith("jobs (layer") for b in against_layers(unit_graph(planted), table))
    bad = against_layers(unit_graph(edges), table)
    assert not bad, "imports against ARCHITECTURE.md's layer table:\n" + "\n".join(bad)


def test_no_package_cycle():
    units: dict[str, set[str]] = {}
    for a, b in unit_graph(graph()):
        units.setdefault(a, set()).add(b)
        units.setdefault(b, set())
    found = cycles(units)
    assert not found, "package circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_no_import_cycle():
    found = cycles(graph())
    assert not found, "import cycles (function-level imports count too):\n" + "\n".join(" -> ".join(c) for c in found)


def test_no_module_uses_another_modules_private_names():
    bad = private_reach_ins()
    assert not bad, "private names used across modules:\n" + "\n".join(bad)


def test_no_function_over_60_lines_outside_report_rendering():
    bad = long_functions()
    assert not bad, f"functions over {MAX_LINES} lines:\n" + "\n".join(bad)
