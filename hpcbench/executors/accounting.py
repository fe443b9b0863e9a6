"""What the scheduler charged: each finished allocation's nodes, elapsed time, node-hours and
peak memory, from its accounting (Slurm `sacct`, PBS Pro `qstat -xf -F json`), written to
<campaign>/scheduler/accounting.json by `hpcbench collect` and stored in campaign.h5's
/accounting group (store/accounting.py); the report shows node-hours per campaign and agent.

An allocation's node-hours are split among the jobs it ran in proportion to each job's
recorded wall time times its cores (a packed allocation runs many jobs side by side); an
array task ran one job and is charged to it whole."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hpcbench.jobs.records import JobSpec, write_atomic

FILE = "accounting.json"
ACTIVE = {"PENDING", "RUNNING", "REQUEUED", "SUSPENDED", "COMPLETING", "CONFIGURING", "Q", "R", "H", "W", "E",
          "B", "T", "S", "U", "M"}


@dataclass
class Usage:
    sched_id: str
    state: str = ""
    nodes: int = 0
    elapsed_s: float = 0.0
    max_rss_bytes: float = 0.0  # the largest of its steps' (Slurm MaxRSS) or the job's (PBS resources_used.mem)
    start: str = ""
    end: str = ""
    source: str = ""  # the command that said so
    jobs: dict[str, float] = field(default_factory=dict)  # job id -> its share of the node-hours

    @property
    def node_hours(self) -> float:
        return self.nodes * self.elapsed_s / 3600


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size_bytes(text: str) -> float:
    """Slurm's MaxRSS ("12345K", "1.5G") or PBS's mem ("123456kb") in bytes; 0 when empty."""
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]?)(?:B|b)?\s*", text.upper().replace("KB", "K").replace("MB", "M")
                     .replace("GB", "G").replace("TB", "T"))
    return float(m.group(1)) * _UNITS[m.group(2)] if m else 0.0


def seconds(hms: str) -> float:
    """PBS durations ("HH:MM:SS", possibly days "D-HH:MM:SS") in seconds."""
    days, _, rest = hms.rpartition("-")
    total = 0.0
    for part in rest.split(":"):
        total = total * 60 + float(part or 0)
    return total + (float(days) * 86400 if days else 0.0)


def parse_sacct_usage(text: str) -> dict[str, Usage]:
    """`sacct -n -P -o JobID,State,ElapsedRaw,NNodes,MaxRSS,Start,End` lines -> per allocation
    (the job's own line gives elapsed time and nodes, its steps' lines the peak memory)."""
    out: dict[str, Usage] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 7 or not parts[0]:
            continue
        jid, state, elapsed, nnodes, maxrss, start, end = parts[:7]
        root = jid.split(".")[0]
        u = out.setdefault(root, Usage(root, source="sacct"))
        if "." not in jid:
            u.state = state.split()[0] if state else ""
            u.elapsed_s = float(elapsed or 0)
            u.nodes = int(nnodes or 0)
            u.start, u.end = start, end
        u.max_rss_bytes = max(u.max_rss_bytes, size_bytes(maxrss))
    return out


def parse_qstat_usage(text: str) -> dict[str, Usage]:
    """`qstat -xf -F json` -> per job: walltime and mem used, node count, start and end."""
    try:
        jobs = (json.loads(text) if text.strip() else {}).get("Jobs") or {}
    except ValueError:
        return {}
    out = {}
    for jid, job in jobs.items():
        used = job.get("resources_used") or {}
        res = job.get("Resource_List") or {}
        select = str(res.get("select", ""))
        nodes = res.get("nodect") or (sum(int(c.split(":")[0]) for c in select.split("+") if c.split(":")[0].isdigit())
                                      if select else 0)
        out[jid] = Usage(jid, state=str(job.get("job_state", "")), nodes=int(nodes or 0),
                         elapsed_s=seconds(str(used.get("walltime", "0"))),
                         max_rss_bytes=size_bytes(str(used.get("mem", ""))),
                         start=str(job.get("stime", "")), end=str(job.get("obittime", job.get("mtime", ""))),
                         source="qstat -xf")
    return out


def _weight(job: JobSpec) -> float:
    """A job's share of its allocation: its recorded wall time times its cores."""
    try:
        wall = float(json.loads(Path(job.record_path).read_text()).get("wall_s") or 0.0)
    except (OSError, ValueError):
        wall = 0.0
    return max(wall, 1e-9) * max(1, job.cores)


def split_node_hours(usages: dict[str, Usage], members: dict[str, list[JobSpec]]) -> list[Usage]:
    """Each finished allocation with its node-hours shared among its jobs."""
    out = []
    for sid, jobs in members.items():
        u = usages.get(sid)
        if u is None or u.state in ACTIVE or not u.nodes:
            continue
        total = sum(_weight(j) for j in jobs)
        u.jobs = {j.job_id: u.node_hours * _weight(j) / total for j in jobs}
        out.append(u)
    return out


def write_usages(folder: Path, usages: list[Usage]) -> Path:
    path = folder / FILE
    rows = [{**asdict(u), "node_hours": u.node_hours} for u in usages]
    write_atomic(path, json.dumps({"allocations": rows}, indent=1))
    return path
