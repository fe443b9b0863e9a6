"""Parse PETSc's `-log_view :file:ascii_xml` output and `-options_left` lines.

The XML comes from a file the program could have written into (jobs/instruments.py reads
it through the descriptor the driver holds, capped at MAX_BYTES); the tree it describes is
kept to MAX_EVENTS nodes (PETSc's own trees have a few hundred)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from hpcbench.jobs.records import LogEvent, LogView


def _stat(node: ET.Element | None) -> tuple[float, float]:
    """(average, max/min ratio) of a <time>-like node; PETSc writes <value> when
    ranks agree and avg/min/max otherwise."""
    if node is None:
        return 0.0, 1.0
    if node.find("value") is not None:
        return float(node.findtext("value") or 0), 1.0
    avg = float(node.findtext("avgvalue") or 0)
    lo, hi = float(node.findtext("minvalue") or 0), float(node.findtext("maxvalue") or 0)
    return avg, (hi / lo if lo > 0 else 1.0)


MAX_BYTES = 8 << 20
MAX_EVENTS = 2000
MAX_DEPTH = 64  # PETSc nests events a handful deep


def _walk(events: ET.Element, path: str, total: float, out: list[LogEvent]) -> None:
    for ev in events.findall("event"):
        if len(out) >= MAX_EVENTS:
            return
        name = ev.findtext("name") or "?"
        pct, ratio = _stat(ev.find("time"))
        out.append(LogEvent(
            path=path, name=name, time_pct=pct, time_s=pct / 100.0 * total, time_max_ratio=ratio,
            calls_per_parent=_stat(ev.find("ncalls"))[0] if ev.find("ncalls") is not None else 1.0,
            mflops=_stat(ev.find("mflops"))[0], mbps=_stat(ev.find("mbps"))[0],
            reductions_per_s=_stat(ev.find("nreductsps"))[0],
        ))
        sub = ev.find("events")
        if sub is not None and path.count(";") < MAX_DEPTH:
            _walk(sub, f"{path};{name}" if path else name, total, out)


def parse_log_view(data: bytes, name: str = "log_view.xml") -> LogView:
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        return LogView(parse_error=f"{name}: {e}")
    pr = root.find("petscroot")
    if pr is None:
        return LogView(parse_error=f"{name}: no <petscroot> element")
    try:
        gp = pr.find("globalperformance")
        t = gp.findtext("time/max") if gp is not None else None
        total = float(t) if t else None
        mem = gp.findtext("memory/max") if gp is not None else None
        view = LogView(total_time_s=total, max_memory_bytes=float(mem) * 1024 * 1024 if mem else None)
        tree = pr.find("timertree")
        if tree is not None and total:
            _walk(tree, "", total, view.events)
    except ValueError as e:  # a number PETSc would never write
        return LogView(parse_error=f"{name}: {e}")
    return view


_LEFT = re.compile(r"^Option left: name:(\S+)(.*)$")
_VALUE = re.compile(r"\bvalue:\s*(.*?)(?:\s+source:.*)?$")


def parse_options_left(stdout: str) -> list[str]:
    """Options given but never used: '-foo 3' for each 'Option left:' line."""
    out = []
    for line in stdout.splitlines():
        m = _LEFT.match(line.strip())
        if m:
            v = _VALUE.search(m.group(2))
            out.append(m.group(1) + (f" {v.group(1)}" if v and v.group(1) else ""))
    return out
