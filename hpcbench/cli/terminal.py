"""Nothing a command prints can drive the operator's terminal.

Every verb prints text an agent controls somewhere: run's summary and `report` the
programs' errors, `explain` their output and evidence, `status` and `collect` the job
and record names, `lint` the statements of a file, error messages the values they
quote. Rather than trusting each of those paths to remember, the command group runs
every command with sys.stdout and sys.stderr behind `SafeStream`, which shows control
and format characters as escapes (hpcbench.safetext.visible): an ESC or OSC sequence
reaches the terminal as the text `\\x1b]0;...`, never as a command. The progress
display alone writes to the real stream (`raw`): its escape codes are hpcbench's own
and its text is counts."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TextIO

from hpcbench.safetext import visible


class SafeStream:
    """A text stream that writes `visible(s)` to the stream it wraps.

    It has no `buffer` attribute on purpose: click writes text through it instead of
    reaching past it for the bytes underneath."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, s: str) -> int:
        self.raw.write(visible(s))
        return len(s)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    def writable(self) -> bool:
        return True

    @property
    def closed(self) -> bool:
        return self.raw.closed

    @property
    def encoding(self) -> str:
        return getattr(self.raw, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self.raw, "errors", None) or "strict"


def raw(stream: TextIO) -> TextIO:
    """The stream under a SafeStream (the progress display's own escape codes go there)."""
    return stream.raw if isinstance(stream, SafeStream) else stream


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """sys.stdout and sys.stderr behind SafeStream for the duration."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(raw(out)), SafeStream(raw(err))
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = out, err


@contextlib.contextmanager
def raw_stdout() -> Iterator[None]:
    """sys.stdout as the stream under the guard for the duration: for a protocol channel written as
    bytes (MCP's JSON-RPC over stdio), not text for a terminal. JSON escapes every control
    character, so nothing a program printed reaches a terminal raw through it."""
    guarded_out = sys.stdout
    sys.stdout = raw(guarded_out)
    try:
        yield
    finally:
        sys.stdout = guarded_out
