"""A process-count limit that holds for root too: one pids cgroup per run.

RLIMIT_NPROC does not apply to root (CI and many containers run as root), so
a fork bomb there was only stopped by the process-group kill at the end of
the run, after it had filled the machine's process table. Where this process
may create cgroups (root with the cgroup v1 `pids` hierarchy, or a writable
cgroup v2 tree with the pids controller), each run gets its own cgroup with
`pids.max`; the run enters it before exec, so everything it forks is counted
and, at the end, killed (also what escaped the process group with setsid).
Where it may not, nothing is created and the rlimit is all there is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

V1 = Path("/sys/fs/cgroup/pids")
V2 = Path("/sys/fs/cgroup")


def _base() -> Path | None:
    if (V1 / "cgroup.procs").is_file():
        return V1 / "hpcbench"
    controllers = V2 / "cgroup.controllers"
    if controllers.is_file() and "pids" in controllers.read_text().split():
        return V2 / "hpcbench"
    return None


class PidsCgroup:
    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, max_pids: int) -> PidsCgroup | None:
        base = _base()
        if base is None:
            return None
        path = base / uuid.uuid4().hex[:12]
        try:
            if base.parent == V2 and not base.exists():
                base.mkdir()
                (V2 / "cgroup.subtree_control").write_text("+pids")
                (base / "cgroup.subtree_control").write_text("+pids")
            base.mkdir(exist_ok=True)
            path.mkdir()
            (path / "pids.max").write_text(str(max_pids))
        except OSError:
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return cls(path)

    def enter(self) -> None:
        """In the child, before exec: it and all it forks belong to this cgroup."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def refused_forks(self) -> int:
        """How many forks the limit refused (pids.events `max N`)."""
        try:
            for line in (self.path / "pids.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "max":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def kill_all(self) -> None:
        for _ in range(50):  # a fork bomb forks while we kill: repeat until empty
            try:
                pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            except OSError:
                return
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        self.kill_all()
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.01)  # killed processes take a moment to leave
