"""The one progress display of every long command (run, submit --wait, wait,
generate, validate-checks, calibrate, and scoring's judge calls).

Stages report counts by state (a `collections.Counter`: pending, running, done,
failed, ...) through a plain callback; they know nothing of terminals. This module
shows them: when the display's stream (stderr) is a terminal, a live rich bar
(finished over all, the counts in words, elapsed time, estimated time left);
elsewhere (CI, logs, pipes) one plain line each time the words change."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

import click

JOB_STATES = ("pending", "running", "retrying", "unknown", "done", "timeout", "failed", "cancelled")
ACTIVE = ("pending", "running", "retrying", "unknown")


@dataclass(frozen=True)
class Kind:
    """What one display counts: its line in words, and which counts are not separate
    items (generate's `failed` are also `done`)."""

    line: Callable[[Counter], str]
    subcounts: tuple[str, ...] = ()


OUTCOMES = ("ran", "build failed", "run failed", "error")  # of finished jobs, from their records


def _jobs_line(c: Counter) -> str:
    text = f"jobs: {c['pending']} queued, {c['running']} running, {c['done']} done"
    seen = [f"{c[k]} {k}" for k in OUTCOMES if c.get(k)]
    return text + (f" ({', '.join(seen)})" if seen else "")


JOBS = Kind(_jobs_line, subcounts=OUTCOMES)
# wait/submit --wait on a batch scheduler: every state the scheduler can report
JOB_STATES_KIND = Kind(lambda c: "jobs: " + ", ".join(f"{c[k]} {k}" for k in JOB_STATES if c.get(k)))
PROBE_JOBS = Kind(lambda c: f"probe jobs: {c['pending']} queued, {c['running']} running, {c['done']} done")
GENERATE = Kind(lambda c: f"generate: {c['pending']} queued, {c['running']} running, {c['done']} done "
                          f"({c['failed']} failed)", subcounts=("failed",))
JUDGE = Kind(lambda c: f"judge calls: {c['pending']} pending, {c['done']} answered")
EVALUATE = Kind(lambda c: f"evaluators: {c['done']} of {c['done'] + c['pending']} submissions")


class Display:
    """A callback for a stage's `progress=`; `close()` when the command's work ends."""

    def __init__(self, kind: Kind = JOBS, stream: TextIO | None = None, live: bool | None = None):
        self.kind = kind
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self._last = ""
        self._bar: Any = None  # rich.progress.Progress once started (rich is imported lazily)
        self._task = None

    def __call__(self, counts: Counter) -> None:
        counts = Counter(counts)  # a missing state reads 0
        text = self.kind.line(counts)
        if text == self._last:
            return
        self._last = text
        if self.live:
            self._draw(text, counts)
        else:
            click.echo(text, file=self.stream)

    def _draw(self, text: str, counts: Counter) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        total = sum(v for k, v in counts.items() if k not in self.kind.subcounts)
        finished = total - sum(counts[k] for k in ACTIVE)
        if self._bar is None:
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                                 console=Console(file=self.stream))
            self._bar.start()
            self._task = self._bar.add_task(text, total=total)
        self._bar.update(self._task, description=text, completed=finished, total=total)

    def close(self) -> None:
        """Stop the live display (its last state stays on screen)."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> Display:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def judge_calls(display: Display) -> Callable[[int, int], None]:
    """The judge runner reports (answered, total): as counts for a Display."""
    return lambda done, total: display(Counter(pending=total - done, done=done))


def evaluated(display: Display) -> Callable[[int, int], None]:
    """Scoring reports (submissions evaluated, total); the display closes at the end, before
    the judge calls' display starts (one live display at a time)."""
    def show(done: int, total: int) -> None:
        display(Counter(pending=max(total - done, 0), done=done))
        if done >= total:
            display.close()
    return show


def record_outcome(text: str) -> str:
    """What a finished job's record says, in the words of OUTCOMES (no scoring needed):
    every run exited 0, the build failed, a run failed, or the job itself had an error."""
    import json

    try:
        rec = json.loads(text)
    except ValueError:
        return "error"
    if rec.get("status") not in ("done", "", None):
        return "error"
    if (rec.get("build") or {}).get("exit_code", 0) != 0:
        return "build failed"
    runs = rec.get("runs") or []
    return "ran" if runs and all(r.get("exit_code") == 0 and not r.get("timed_out") for r in runs) else "run failed"


class JobOutcomes:
    """Wraps a job progress callback: each time jobs finish, their records are read once
    and the display says how they ended, as they end (not only at the end of the run)."""

    def __init__(self, records_dir: Any, progress: Callable[[Counter], None]) -> None:
        from pathlib import Path

        self.dir, self.progress = Path(records_dir), progress
        self.seen = {p.name for p in self.dir.glob("*.json")} if self.dir.is_dir() else set()
        self.tally: Counter = Counter()
        self.done = -1

    def __call__(self, counts: Counter) -> None:
        if counts.get("done", 0) != self.done:
            self.done = counts.get("done", 0)
            for p in sorted(self.dir.glob("*.json")) if self.dir.is_dir() else []:
                if p.name not in self.seen:
                    self.seen.add(p.name)
                    try:
                        self.tally[record_outcome(p.read_text(errors="replace"))] += 1
                    except OSError:
                        self.tally["error"] += 1
        self.progress(Counter(counts) + self.tally)
