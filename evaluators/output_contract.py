"""The output contract every problem states publicly: rank 0 prints one line
`name: v1 v2 ...` per quantity. Parsing is shared by the checks and the tests."""

from __future__ import annotations

import re

_LINE = re.compile(r"^\s*([a-z][a-z0-9_]*)\s*:\s*(.+?)\s*$")
_NUM = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$|^[-+]?(inf|nan)$", re.I)


def parse_quantities(stdout: str) -> dict[str, list[float]]:
    """Every `name: numbers` line; the last occurrence of a name wins, so a program
    may print progress before its final answer."""
    found: dict[str, list[float]] = {}
    for line in stdout.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        tokens = m.group(2).replace(",", " ").split()
        if tokens and all(_NUM.match(t) for t in tokens):
            found[m.group(1)] = [float(t) for t in tokens]
    return found
