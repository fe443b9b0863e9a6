"""C source facts from a real parser (tree-sitter-c), shared by the evaluators
that reason about PETSc calls: calls with their lines and enclosing function,
includes, function definitions. Macro invocations such as PetscCall(f(x))
parse as calls, so the call inside is found too."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_c
from tree_sitter import Language, Node, Parser

_LANG = Language(tree_sitter_c.language())


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


@lru_cache(maxsize=256)
def analyse(file: str, source: str) -> SourceFacts:
    tree = Parser(_LANG).parse(source.encode("utf-8"))
    calls: list[Call] = []
    includes: list[str] = []
    functions: list[str] = []

    def walk(node: Node, func: str, parent_call: str, stmt: str) -> None:
        t = node.type
        if t == "function_definition":
            func = _func_name(node)
            functions.append(func)
        elif t in ("expression_statement", "declaration", "return_statement"):
            stmt = _text(node)[:200]
        elif t == "preproc_include":
            path = node.child_by_field_name("path")
            if path is not None:
                includes.append(_text(path).strip('<>"'))
        if t == "call_expression":
            fn = node.child_by_field_name("function")
            name = _text(fn) if fn is not None and fn.type == "identifier" else ""
            if name:
                arglist = node.child_by_field_name("arguments")
                args = tuple(_text(a) for a in arglist.named_children) if arglist is not None else ()
                calls.append(Call(name, node.start_point[0] + 1, node.start_byte, func, parent_call, stmt, args))
            for ch in node.children:
                walk(ch, func, name or parent_call, stmt)
            return
        for ch in node.children:
            walk(ch, func, parent_call, stmt)

    walk(tree.root_node, "", "", "")
    return SourceFacts(file, tuple(calls), tuple(includes), tuple(functions), tree.root_node.has_error)


PETSC_PREFIXES = ("Petsc", "Vec", "Mat", "KSP", "PC", "SNES", "TS", "Tao", "DM", "IS", "PetscFE", "PetscDS",
                  "PetscSection", "PetscViewer", "PetscOptions")


def is_petsc_call(name: str) -> bool:
    return name.startswith(PETSC_PREFIXES) and not name.startswith(("PetscCall", "PetscFunction"))
