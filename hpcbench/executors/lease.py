"""A local job's lease: `work/<job>/lease.json` says which process runs the job (pid, its
start time, host) and when the driver last saw it alive (heartbeat).

A driver killed with SIGKILL leaves its jobs running (each is its own session). The
next driver reads the leases before starting anything: a job whose process is still
the one that was started (same pid *and* start time, so a reused pid does not count)
is adopted and waited for, never started a second time in the same folder; a lease
whose process is gone is stale and the job is rerun."""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from hpcbench.jobs.records import write_atomic

NAME = "lease.json"


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class Lease:
    pid: int
    create_time: float  # psutil's process start time: tells a reused pid apart
    host: str
    started: str
    heartbeat: str
    driver_pid: int

    @classmethod
    def for_process(cls, pid: int) -> Lease:
        return cls(pid=pid, create_time=psutil.Process(pid).create_time(), host=socket.gethostname(),
                   started=_now(), heartbeat=_now(), driver_pid=os.getpid())

    def write(self, work_dir: Path) -> None:
        write_atomic(Path(work_dir) / NAME, json.dumps(asdict(self)))

    def beat(self, work_dir: Path) -> None:
        self.heartbeat = _now()
        self.write(work_dir)

    def process(self) -> psutil.Process | None:
        """The leased process if it still runs on this host, else None."""
        if self.host != socket.gethostname():
            return None
        try:
            p = psutil.Process(self.pid)
            if abs(p.create_time() - self.create_time) > 0.05 or p.status() == psutil.STATUS_ZOMBIE:
                return None
            return p
        except psutil.Error:
            return None


def read_lease(work_dir: Path) -> Lease | None:
    try:
        return Lease(**json.loads((Path(work_dir) / NAME).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def release(work_dir: Path) -> None:
    (Path(work_dir) / NAME).unlink(missing_ok=True)
