"""Parse PETSc's -log_view text summary (its default ascii format): the counts of a run.

Every run that has -log_view names two viewers (jobs/instruments.py LogViewProbe): the nested
XML timer tree, which the timings and the judges read, and this text summary, the only one of
PETSc 3.26's -log_view formats that lists objects by class (src/sys/logging/handler/impls/
default/logdefault.c, PetscLogHandlerView_Default_Info: "Object Type  Creations
Destructions", rank 0's figures) beside every event's call count (its "Count Max" column: the
most calls any rank made). The XML has only the total of objects and hides events under 1% of
the time, so it cannot say what a run created, destroyed and called.

What the counts are for: every run of a program at one case and rank count should create,
destroy and call what the others do; evaluators/watched_runs.py compares them.

The text comes from a file the program could write into, held by the driver and capped at
SUMMARY_MAX_BYTES; event and stage names are the program's to choose (PetscLogEventRegister),
so each line is matched whole and at most MAX_NAMES names are kept."""

from __future__ import annotations

import re

from hpcbench.jobs.records import LogCounts

SUMMARY_MAX_BYTES = 4 << 20
MAX_NAMES = 2000  # classes and events together; PETSc registers a few hundred events
OBJECTS_HEADER = "Object Type          Creations   Destructions. Reports information only for process 0."
EVENTS_HEADER = re.compile(r"^Event\s+Count\s+Time \(sec\)\s+Flop\b")
RULE_LINE = re.compile(r"^(=+|-+)$")
STAGE = re.compile(r"^--- Event Stage \d+: ")
# name, then "Count Max" (%7d), its ratio (%3.1f) and the time's max (%5.4e): more columns follow
EVENT = re.compile(r"^(\S.*?)\s+(\d+)\s+(\d+\.\d+)\s+(\d+\.\d+e[+-]\d+)\s")
# "%20s %5d          %5d": a class name may hold spaces ("Krylov Solver", "Index Set")
CLASS = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+(\d+)$")
FLOPS = re.compile(r"^Flops:\s+\S+\s+\S+\s+\S+\s+(\S+)$")  # Max, Max/Min, Avg, Total


def parse_log_summary(data: bytes, name: str = "log_view.txt") -> LogCounts:
    """Objects created and destroyed by class (rank 0) and calls by event (the most of any
    rank), each summed over the stages; the total flop count over the ranks."""
    text = data.decode("utf-8", "replace")
    counts = LogCounts()
    section = ""  # events | objects | "" (anything else)
    whole = False  # the object table, PETSc's last, was closed by its rule of '='
    for raw in text.splitlines():
        line = raw.rstrip()
        if line == OBJECTS_HEADER:
            section = "objects"
            continue
        if EVENTS_HEADER.match(line):
            section = "events"
            continue
        if section == "objects" and line.startswith("=") and RULE_LINE.match(line):
            section, whole = "", True
        if not line or RULE_LINE.match(line) or STAGE.match(line):
            continue
        if section == "" and (m := FLOPS.match(line)):
            counts.flops = _number(m.group(1))
        elif section == "events" and (m := EVENT.match(line)):
            _add(counts.events, m.group(1), int(m.group(2)), counts)
        elif section == "objects" and (m := CLASS.match(line)):
            _add(counts.created, m.group(1), int(m.group(2)), counts)
            _add(counts.destroyed, m.group(1), int(m.group(3)), counts)
    if not whole:  # a program that called no event has an empty event table: that is no error
        counts.parse_error = f"{name}: no whole object table (not PETSc's -log_view text summary, or cut short)"
    return counts


def _add(into: dict[str, int], key: str, n: int, counts: LogCounts) -> None:
    if key not in into and len(counts.created) + len(counts.events) >= MAX_NAMES:
        counts.parse_error = counts.parse_error or f"more than {MAX_NAMES} classes and events: the rest not kept"
        return
    into[key] = into.get(key, 0) + n


def _number(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None
