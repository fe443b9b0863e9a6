"""C source as a token sequence for similarity: parsed by tree-sitter-c (the parser the
evaluators already use, evaluators/csource.py), comments and whitespace gone, every string
literal one token `S`, every number `N`, and every identifier that is not a library name
(PETSc's or C's) one token `ID`. Renaming a program's variables, rewording its messages or
changing its constants leaves the sequence as it was; changing its PETSc calls does not."""

from __future__ import annotations

import tree_sitter_c
from tree_sitter import Language, Parser

LANGUAGE = Language(tree_sitter_c.language())

_IDENTIFIERS = {"identifier", "type_identifier", "field_identifier", "statement_identifier"}
_WHOLE = {"string_literal": "S", "concatenated_string": "S", "char_literal": "C", "number_literal": "N",
          "system_lib_string": None, "comment": "",
          "preproc_arg": "P"}  # a macro's body: raw text, names and all

# C's own library names an independent program shares with any other: kept like PETSc's.
C_NAMES = frozenset("""
    printf fprintf sprintf snprintf puts stderr stdout malloc calloc realloc free memcpy memset strcmp
    strlen strcpy strncpy sqrt exp log log10 pow sin cos tan atan atan2 asin acos sinh cosh tanh fabs
    floor ceil fmax fmin fmod abs round erf exit size_t int64_t int32_t uint64_t NULL M_PI
    """.split())


def tokens(source: str, library: frozenset[str]) -> list[str]:
    """The normalised token sequence of one C source (see the module docstring)."""
    tree = Parser(LANGUAGE).parse(source.encode("utf-8", errors="replace"))
    out: list[str] = []
    cursor = tree.walk()
    while True:
        node = cursor.node
        kind = node.type if node is not None else ""
        whole = kind in _WHOLE
        if node is not None and (whole or node.child_count == 0):
            text = node.text.decode("utf-8", errors="replace") if node.text else ""
            if whole:
                sub = _WHOLE[kind]
                if sub is None:
                    out.append(text)
                elif sub:
                    out.append(sub)
            elif kind in _IDENTIFIERS:
                out.append(text if text in library or text in C_NAMES or text.startswith("MPI_") else "ID")
            elif text.strip():
                out.append(text.strip())
        if not whole and cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return out


def library_names(header_sources: list[str]) -> frozenset[str]:
    """Identifiers the public headers declare or use that look like an API name (an
    upper-case letter in them: VecNorm, PETSC_COMM_WORLD, DM): the names a program shares
    with every other PETSc program. Names inside prototypes' argument lists (Vec X) and
    lower-case ones are left out, so a program's own `X` or `user` is never taken for PETSc's."""
    names: set[str] = set()
    for src in header_sources:
        tree = Parser(LANGUAGE).parse(src.encode("utf-8", errors="replace"))
        cursor = tree.walk()
        while True:
            node = cursor.node
            if node is not None and node.type in _IDENTIFIERS and node.text:
                text = node.text.decode("utf-8", errors="replace")
                if any(c.isupper() for c in text):
                    names.add(text)
            # prototypes' argument names (Vec X, PetscReal *norm) are not API names
            if node is not None and node.type != "parameter_list" and cursor.goto_first_child():
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    break
            else:
                continue
            break
    return frozenset(names)
