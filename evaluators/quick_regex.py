"""Regular expressions compiled to reject most start positions at once, for the prompt-injection scan
(evaluators/injection_scan.py, evaluators/injection_lexicon.py): its rules are long alternations of
words tried at every position of every form of every segment, and most of their cost is positions
where no word starts. `compiled(rx)` puts a look-ahead for the characters a match of `rx` can start
with in front of it, where they can be known from the parsed pattern; a match of the result is a
match of `rx` (tests/test_injection_scan.py compares them)."""

from __future__ import annotations

import re
from typing import Any

try:  # the parser `re` compiles with: re._parser since Python 3.11, sre_parse (deprecated since) before
    from re import _constants as sre  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover (Python 3.10)
    import sre_constants as sre
    import sre_parse

_ZERO_WIDTH = (sre.AT, sre.ASSERT, sre.ASSERT_NOT)


def _in(av: list[tuple[Any, Any]]) -> set[str] | None:
    """The characters of a [...] set, or None where it holds a category, a negation or a wide range."""
    out: set[str] = set()
    for op, arg in av:
        if op is sre.LITERAL:
            out.add(chr(arg))
        elif op is sre.RANGE and arg[1] - arg[0] < 512:
            out.update(chr(c) for c in range(arg[0], arg[1] + 1))
        else:
            return None
    return out


def _one(op: Any, av: Any) -> tuple[set[str] | None, bool]:
    """(first characters, can be empty) of one parsed item."""
    if op is sre.LITERAL:
        return {chr(av)}, False
    if op is sre.IN:
        return _in(av), False
    if op is sre.BRANCH:
        firsts = [_first_chars(alt) for alt in av[1]]
        if any(chars is None for chars, _ in firsts):
            return None, False
        return set().union(*(chars or set() for chars, _ in firsts)), any(empty for _, empty in firsts)
    if op is sre.SUBPATTERN:
        return _first_chars(av[3])
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        chars, empty = _first_chars(av[2])
        return chars, empty or av[0] == 0
    return None, False


def _first_chars(items: Any) -> tuple[set[str] | None, bool]:
    """(the characters a match of parsed `items` can start with or None for any, whether it can be empty)."""
    acc: set[str] = set()
    for op, av in items:
        if op in _ZERO_WIDTH:
            continue
        chars, empty = _one(op, av)
        if chars is None:
            return None, False
        acc |= chars
        if not empty:
            return acc, False
    return acc, True


def compiled(rx: str) -> re.Pattern[str]:
    chars, empty = _first_chars(list(sre_parse.parse(rx)))
    if chars is None or empty or not chars:
        return re.compile(rx)
    cls = "".join("\\" + c if c in "\\]^-[" else c for c in sorted(chars))
    return re.compile(f"(?=[{cls}])(?:{rx})")
