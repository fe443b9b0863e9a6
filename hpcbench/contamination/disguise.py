"""A tutorial disguised the way a copier would: every name of its own renamed, every
number and message changed, comments dropped, and optionally a share of its lines deleted.
What such a copy reaches is one side of the flagging threshold (bench/contamination_threshold.py)
and what the tests check the measure still sees through."""

from __future__ import annotations

import random

from tree_sitter import Parser

from hpcbench.contamination.tokens import C_NAMES, LANGUAGE

_RENAMED = {"identifier", "type_identifier", "field_identifier", "statement_identifier"}


def _edits(source: bytes, library: frozenset[str]) -> list[tuple[int, int, bytes]]:
    names: dict[bytes, bytes] = {}
    out = []
    stack = [Parser(LANGUAGE).parse(source).root_node]
    while stack:
        node = stack.pop()
        text = source[node.start_byte:node.end_byte]
        if node.type in _RENAMED and text.decode(errors="replace") not in library | C_NAMES \
                and not text.startswith(b"MPI_") and text != b"main":
            out.append((node.start_byte, node.end_byte, names.setdefault(text, b"q%dz" % len(names))))
        elif node.type == "number_literal":
            out.append((node.start_byte, node.end_byte, text + b"1" if text[-1:].isdigit() else text))
        elif node.type == "string_literal":
            out.append((node.start_byte, node.end_byte, b'"reworded message %d\\n"' % len(out)))
        elif node.type == "comment":
            out.append((node.start_byte, node.end_byte, b""))
        else:
            stack.extend(node.children)
    return sorted(out)


def disguise(source: str, library: frozenset[str], drop: float = 0.0, seed: int = 0) -> str:
    """`source` with its own names renamed, numbers and messages changed, comments gone,
    and a share `drop` of its non-blank lines deleted (chosen by `seed`)."""
    data = source.encode()
    pieces, at = [], 0
    for start, end, new in _edits(data, library):
        if start < at:
            continue  # inside a piece already replaced
        pieces += [data[at:start], new]
        at = end
    text = b"".join([*pieces, data[at:]]).decode(errors="replace")
    rng = random.Random(seed)
    lines = [ln for ln in text.splitlines() if ln.strip() and not (drop and rng.random() < drop)]
    return "\n".join(lines) + "\n"
