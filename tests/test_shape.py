"""The shape of the code, measured from its source (ast), not by eye: no import
cycle among hpcbench's modules, packages importing only down ARCHITECTURE.md's layer
table, no module reaching into another's private names, no function over 60 lines
outside report rendering, none taking ten or more parameters, and no public name
defined in two modules (click commands, named by their verb, excepted from both)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Where each package's source lives (pyproject's package-dir: jobs/ and evaluators/ sit at the top).
SOURCES = {"hpcbench": ROOT / "hpcbench", "hpcbench.jobs": ROOT / "jobs", "hpcbench.evaluators": ROOT / "evaluators"}
MAX_LINES = 60
# Report rendering: one long function lays out one page, top to bottom, as it reads.
LONG_ALLOWED = {("hpcbench/report/html.py", "to_html"), ("hpcbench/report/markdown.py", "report_markdown")}
# Past this many a function's options belong in a typed object (jobs/capture.Confinement); click
# commands take one parameter per option of their verb.
MAX_PARAMETERS = 9


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


def is_click_command(fn: ast.AST) -> bool:
    """@click.command(...), @click.group(...) or @<group>.command(...): named by its verb, and
    taking one parameter per option of it."""
    for d in getattr(fn, "decorator_list", []):
        f = d.func if isinstance(d, ast.Call) else d
        if isinstance(f, ast.Attribute) and f.attr in ("command", "group"):
            return True
    return False


def wide_functions(tree: ast.Module) -> list[tuple[int, str, int]]:
    """(line, name, parameters) of every function past MAX_PARAMETERS; a method's self or cls
    does not count, *args and **kwargs do."""
    methods = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not is_click_command(node):
            a = node.args
            named = a.posonlyargs + a.args + a.kwonlyargs
            n = len(named) + (a.vararg is not None) + (a.kwarg is not None)
            if id(node) in methods and named and named[0].arg in ("self", "cls"):
                n -= 1
            if n > MAX_PARAMETERS:
                out.append((node.lineno, node.name, n))
    return out


def runs_as_program(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) and "__name__" in ast.unparse(n.test)
               for n in tree.body)


def by_convention(name: str, module: str, tree: ast.Module) -> bool:
    """A name other code looks up in every module that has one, so the same in each: `main`, the
    entry point of a module run as a program (python -m, submitit), and `register`, the hook
    hpcbench/cli/__init__.py calls to hang each command module's verbs on the group."""
    if name == "main":
        return runs_as_program(tree)
    return name == "register" and module.startswith("hpcbench.cli.")


def names_defined_twice(trees: dict[str, ast.Module]) -> dict[str, list[str]]:
    """Public module-level function and class names -> the modules that define each, where
    more than one does: `from x import load` then says nothing of which load."""
    where: dict[str, list[str]] = {}
    for module, tree in trees.items():
        for node in tree.body:
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and not node.name.startswith("_") and not is_click_command(node)
                    and not by_convention(node.name, module, tree)):
                where.setdefault(node.name, []).append(module)
    return {name: sorted(modules) for name, modules in sorted(where.items())
            if len(modules) > 1}


PLANTED_WIDE = """
import click

def ten(a, b, c, d, e, f, g, h, i, j): ...

def nine_and_kwargs(a, b, c, d, e, f, g, h, i, **rest): ...

class Holder:
    def method(self, a, b, c, d, e, f, g, h, i): ...

@click.command()
def verb(a, b, c, d, e, f, g, h, i, j, k): ...
"""


def test_no_function_takes_ten_or_more_parameters_outside_click_commands():
    # the check sees a planted function of ten parameters (and of nine and **kwargs), and lets
    # a method of self and nine, and a click command, through
    assert [name for _, name, _ in wide_functions(ast.parse(PLANTED_WIDE))] == ["ten", "nine_and_kwargs"]
    bad = [f"{MODULES[m].relative_to(ROOT)}:{line}: {name} takes {n} parameters"
           for m, tree in TREES.items() for line, name, n in wide_functions(tree)]
    assert not bad, f"functions of more than {MAX_PARAMETERS} parameters (group them in a typed object):\n" + \
        "\n".join(bad)


PLANTED_TWICE = """
import click

def load_report(): ...

def _load(): ...

def main(): ...

@click.command()
def report(): ...
"""


def test_no_public_name_is_defined_in_two_modules():
    # the check sees a planted second load_report, and two mains in modules that are no programs
    # (the programs' own mains aside); a private name and a click command named like a module's
    # function are not flagged
    planted = names_defined_twice({**TREES, "hpcbench.jobs.planted": ast.parse(PLANTED_TWICE),
                                   "hpcbench.jobs.planted_too": ast.parse("def main(): ...\n")})
    assert planted.keys() - names_defined_twice(TREES).keys() == {"load_report", "main"}
    assert planted["load_report"] == ["hpcbench.jobs.planted", "hpcbench.report.data"]
    assert planted["main"] == ["hpcbench.jobs.planted", "hpcbench.jobs.planted_too"]
    twice = names_defined_twice(TREES)
    assert not twice, "public names defined in more than one module (give each a specific name, or import " \
        "the one definition):\n" + "\n".join(f"{name}: {', '.join(ms)}" for name, ms in twice.items())
