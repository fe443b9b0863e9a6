"""C source facts from a real parser (tree-sitter-c), shared by the evaluators
that reason about PETSc calls: calls with their lines and enclosing function,
includes, function definitions. Macro invocations such as PetscCall(f(x))
parse as calls, so the call inside is found too."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_c
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

LANGUAGE = Language(tree_sitter_c.language())


@lru_cache(maxsize=64)
def syntax_tree(source: str) -> Tree:
    """The tree-sitter tree of one source, parsed once and shared by every
    evaluator of a submission (trees are never modified)."""
    return Parser(LANGUAGE).parse(source.encode("utf-8"))


@dataclass(frozen=True)
class Call:
    name: str
    line: int  # 1-based
    byte: int
    function: str  # enclosing function definition, "" at file scope
    parent_call: str  # name of the call this one is an argument of ("" if none)
    statement: str  # text of the enclosing statement, for messages
    args: tuple[str, ...] = ()  # argument texts, e.g. ("dm", "DMPLEX") for DMSetType(dm, DMPLEX)


@dataclass(frozen=True)
class SourceFacts:
    file: str
    calls: tuple[Call, ...]
    includes: tuple[str, ...]
    functions: tuple[str, ...]
    has_errors: bool


def _text(node: Node) -> str:
    return node.text.decode("utf-8", errors="replace") if node.text else ""


def _func_name(defn: Node) -> str:
    d = defn.child_by_field_name("declarator")
    while d is not None and d.type not in ("identifier",):
        d = d.child_by_field_name("declarator") or (d.named_children[0] if d.named_children else None)
    return _text(d) if d is not None else ""


_STATEMENTS = ("expression_statement", "declaration", "return_statement")
# One query (the matching runs in C) instead of a Python walk over every node,
# which was the largest cost left in `hpcbench score` (docs/store.md).
_FACTS = Query(LANGUAGE, "(function_definition) @function (preproc_include) @include (call_expression) @call "
               + " ".join(f"({t}) @statement" for t in _STATEMENTS))
_RANK = {"function": 0, "include": 1, "statement": 2, "call": 3}  # on a tie of spans, the enclosing kind first


@lru_cache(maxsize=256)
def analyse(file: str, source: str) -> SourceFacts:
    tree = syntax_tree(source)
    found = QueryCursor(_FACTS).captures(tree.root_node)
    # pre-order: by start, the enclosing node (ending later) first
    nodes = sorted(((n, kind) for kind, ns in found.items() for n in ns),
                   key=lambda x: (x[0].start_byte, -x[0].end_byte, _RANK[x[1]]))
    calls: list[Call] = []
    includes: list[str] = []
    functions: list[str] = []
    open_: dict[str, list[tuple[int, str]]] = {"function": [], "statement": [], "call": []}  # (end, name or text)
    for node, kind in nodes:
        for stack in open_.values():
            while stack and stack[-1][0] <= node.start_byte:
                stack.pop()
        if kind == "include":
            path = node.child_by_field_name("path")
            if path is not None:
                includes.append(_text(path).strip('<>"'))
        elif kind == "function":
            functions.append(_func_name(node))
            open_["function"].append((node.end_byte, functions[-1]))
        elif kind == "statement":
            open_["statement"].append((node.end_byte, _text(node)[:200]))
        else:
            _call(node, open_, calls)
    return SourceFacts(file, tuple(calls), tuple(includes), tuple(functions), tree.root_node.has_error)


def _call(node: Node, open_: dict[str, list[tuple[int, str]]], calls: list[Call]) -> None:
    fn = node.child_by_field_name("function")
    name = _text(fn) if fn is not None and fn.type == "identifier" else ""
    if name:
        arglist = node.child_by_field_name("arguments")
        args = tuple(_text(a) for a in arglist.named_children) if arglist is not None else ()
        top = {k: (v[-1][1] if v else "") for k, v in open_.items()}
        calls.append(Call(name, node.start_point[0] + 1, node.start_byte, top["function"], top["call"],
                          top["statement"], args))
        open_["call"].append((node.end_byte, name))


PETSC_PREFIXES = ("Petsc", "Vec", "Mat", "KSP", "PC", "SNES", "TS", "Tao", "DM", "IS", "PetscFE", "PetscDS",
                  "PetscSection", "PetscViewer", "PetscOptions")


def is_petsc_call(name: str) -> bool:
    return name.startswith(PETSC_PREFIXES) and not name.startswith(("PetscCall", "PetscFunction"))
