"""C source facts from a real parser (tree-sitter-c), shared by the evaluators
that reason about PETSc calls: calls with their lines and enclosing function,
includes, function definitions. Macro invocations such as PetscCall(f(x))
parse as calls, so the call inside is found too."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_c
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

LANGUAGE = Language(tree_sitter_c.language())

# PETSc's attribute and linkage macros, which the C grammar cannot read where a declaration
# starts (`PETSC_UNUSED static inline ...`, `PETSC_EXTERN PetscErrorCode F(...)`): defined in
# petscmacros.h, petscconf.h (PETSC_UNUSED, PETSC_ATTRIBUTEALIGNED) and petscdevice_cuda.h /
# petscdevice_hip.h (the *_DECL family) of PETSc 3.26, each expanding to an attribute, a
# storage class or nothing. Blanked before parsing, as the preprocessor would remove them.
ATTRIBUTE_MACROS = ("PETSC_UNUSED", "PETSC_EXTERN", "PETSC_INTERN", "PETSC_EXTERN_TYPEDEF",
                    "PETSC_VISIBILITY_PUBLIC", "PETSC_VISIBILITY_INTERNAL", "PETSC_SINGLE_LIBRARY_INTERN",
                    "PETSC_NODISCARD", "PETSC_CONSTEXPR_14", "PETSC_ATTRIBUTE_COLD", "PETSC_RESTRICT",
                    "PETSC_FORCEINLINE", "PETSC_HOSTDEVICE_INLINE_DECL", "PETSC_HOSTDEVICE_DECL",
                    "PETSC_DEVICE_DECL", "PETSC_HOST_DECL", "PETSC_KERNEL_DECL")
# Function-like ones, blanked with their arguments; PLEXFE_QFUNCTION (petscfe.h) defines a
# libCEED QFunction and expands to nothing without libCEED.
ATTRIBUTE_CALLS = ("PETSC_ATTRIBUTE_FORMAT", "PETSC_ATTRIBUTE_MPI_TYPE_TAG",
                   "PETSC_ATTRIBUTE_MPI_POINTER_WITH_TYPE", "PETSC_ATTRIBUTE_MPI_TYPE_TAG_LAYOUT_COMPATIBLE",
                   "PETSC_ATTRIBUTEALIGNED", "PETSC_DEPRECATED_FUNCTION", "PETSC_DEPRECATED_TYPEDEF",
                   "PETSC_DEPRECATED_ENUM", "PLEXFE_QFUNCTION")
_ATTR = re.compile(r"\b(?:" + "|".join(ATTRIBUTE_MACROS) + r")\b")
_ATTR_CALL = re.compile(r"\b(?:" + "|".join(ATTRIBUTE_CALLS) + r")\s*\(")
_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b.*$", re.M)


def _blank(text: str, start: int, end: int) -> str:
    """Spaces over [start, end), newlines kept: every byte offset and line stays where it was."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def without_attribute_macros(source: str) -> str:
    out = _ATTR.sub(lambda m: " " * len(m.group(0)), source)
    for m in reversed(list(_ATTR_CALL.finditer(out))):
        depth, i = 0, m.end() - 1
        while i < len(out):
            depth += {"(": 1, ")": -1}.get(out[i], 0)
            if depth == 0:
                break
            i += 1
        out = _blank(out, m.start(), min(i + 1, len(out)))
    return out


def first_branches(source: str) -> str:
    """Each #if chain reduced to its first branch, its directives and its #elif/#else parts
    blanked: one configuration, as a preprocessor would give, for code whose branches split
    a statement (`} else if (x) {` under #if), which the grammar cannot read otherwise."""
    spans: list[tuple[int, int]] = []
    stack: list[int | None] = []  # per open #if: where its blanked part begins (None: first branch)
    for m in _CONDITIONAL.finditer(source):
        kind = m.group(1)
        spans.append((m.start(), m.end()))
        if kind in ("if", "ifdef", "ifndef"):
            stack.append(None)
        elif kind in ("elif", "else") and stack and stack[-1] is None:
            stack[-1] = m.start()
        elif kind == "endif" and stack:
            began = stack.pop()
            if began is not None:
                spans.append((began, m.start()))
    out = source
    for a, b in spans:
        out = _blank(out, a, b)
    return out


@lru_cache(maxsize=64)
def syntax_tree(source: str) -> Tree:
    """The tree-sitter tree of one source, parsed once and shared by every evaluator of a
    submission (trees are never modified). PETSc's attribute macros are blanked first; a
    source that still does not parse is read with each #if chain at its first branch, when
    that parses better. Byte offsets and lines are those of the source as written."""
    parser = Parser(LANGUAGE)
    text = without_attribute_macros(source)
    tree = parser.parse(text.encode("utf-8"))
    if tree.root_node.has_error:
        alt = parser.parse(first_branches(text).encode("utf-8"))
        if _errors(alt.root_node) < _errors(tree.root_node):
            return alt
    return tree


def _errors(node: Node) -> int:
    if node.type == "ERROR" or node.is_missing:
        return 1
    return sum(_errors(c) for c in node.children) if node.has_error else 0


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
def analyse_source(file: str, source: str) -> SourceFacts:
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
