"""Agent-controlled text made safe to show: on a terminal and in markdown.

A program's output, its compiler's diagnostics, its source and its submission.json
are written by the agent under test. Shown raw, they act on whoever reads them: an
ESC or OSC sequence (`ESC ] 0 ; title BEL`, `ESC [ 2 J`) rewrites the operator's
terminal (title, clipboard through OSC 52, a cleared screen, text hidden by a
carriage return); in report.md, `<img onerror=...>` runs when the markdown is
rendered as CommonMark, `[x](javascript:...)` becomes a link and `*text*` an element.

- `visible(text)`: every control and format character (Unicode categories Cc, Cf,
  Zl, Zp: C0 and C1 controls, DEL, the bidirectional overrides of "Trojan Source",
  zero-width characters) is replaced by its escape, `\\x1b`, `\\u202e`; newlines and
  tabs stay. Nothing is dropped, so what a program tried to print stays readable.
- `md_code(text)`: an inline code span for one table cell or line. Code spans carry
  no HTML, links, emphasis or entities in CommonMark; the fence is longer than any
  run of backticks inside, `|` is escaped for GFM tables, newlines become spaces.
- `md_block(text)`: a fenced code block (a fence longer than any inside it)."""

from __future__ import annotations

import re
import unicodedata

# ASCII controls but newline and tab, DEL and everything outside ASCII (checked by category).
_CANDIDATE = re.compile(r"[^\x20-\x7e\n\t]")
_UNSAFE = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
_NO_BREAKS = str.maketrans({"\n": " ", "\t": " "})


def _escape(ch: str) -> str:
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def _one(m: re.Match[str]) -> str:
    ch = m.group(0)
    return _escape(ch) if ch < " " or ch == "\x7f" or unicodedata.category(ch) in _UNSAFE else ch


def visible(text: str) -> str:
    """`text` with every control and format character shown as its escape (newline and tab kept)."""
    return _CANDIDATE.sub(_one, text.replace("\r\n", "\n"))


def one_line(text: str) -> str:
    """visible(), newlines and tabs as spaces: for a table cell or a log line."""
    return visible(text).translate(_NO_BREAKS)


def md_code(text: str, limit: int | None = None) -> str:
    """`text` as a CommonMark/GFM inline code span for a table cell ("" stays "")."""
    body = one_line(text)
    if limit is not None and len(body) > limit:
        body = body[:limit] + "..."
    if not body.strip():
        return ""
    body = body.replace("|", "\\|")  # GFM splits table cells on a pipe even inside a code span
    ticks = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (ticks + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def md_block(text: str, info: str = "text") -> list[str]:
    """`text` as the lines of a fenced code block whose fence no line inside can close."""
    body = visible(text).rstrip("\n")
    runs = [len(r) for r in re.findall(r"`{3,}", body)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return [f"{fence}{info}", *body.split("\n"), fence]
