"""Limits for a whole step (a build, or a run with all its ranks): one cgroup each.

Rlimits bind one process at a time (four ranks of 2 GB pass a 4 GB RLIMIT_AS) and
RLIMIT_NPROC does not bind root at all. Where this process may create cgroups
(root with cgroup v1 `memory`/`pids` hierarchies, or a writable cgroup v2 tree with
those controllers), each step gets its own cgroup, nested under the one we run in,
with `memory.limit_in_bytes` (v1) or `memory.max` (v2) and `pids.max`; the step
enters it before exec, so everything it forks is counted, charged and, at the end,
killed (also what left the process group with setsid). What the kernel refused
(forks) or killed (out of memory) is read back, so the reason is recorded in
words. Where no cgroup can be had, nothing is created and the rlimits are all there
is (capture.py then sets RLIMIT_AS for memory).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids")
# v1 only (v2 keeps cpu.stat in every cgroup): the CPU time of all a step's processes, which times
# a run by the work it did when the machine is loaded from outside (evaluators/performance_case.py)
ACCOUNTING = ("cpuacct",)


def _own_paths() -> dict[str, str]:
    """Our own cgroup per v1 controller ("" key: the v2 unified one)."""
    own: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrls, path = line.split(":", 2)
            for c in ctrls.split(",") if ctrls else [""]:
                own[c] = path
    return own


def _bases() -> dict[str, Path]:
    """Where to create step cgroups, per controller: `hpcbench` under our own cgroup."""
    own = _own_paths()
    v1 = {c: ROOT / c / own.get(c, "/").lstrip("/") / "hpcbench" for c in CONTROLLERS + ACCOUNTING
          if (ROOT / c / "cgroup.procs").is_file()}
    if v1:
        return v1
    controllers = ROOT / "cgroup.controllers"
    if controllers.is_file():
        have = set(controllers.read_text().split())
        base = ROOT / own.get("", "/").lstrip("/") / "hpcbench"
        return {c: base for c in CONTROLLERS if c in have}
    return {}


def _prepare_v2(base: Path, controllers: list[str]) -> None:
    """cgroup v2 lets a controller into a child only where its parent delegates it,
    and puts no processes in a cgroup with children: `hpcbench` holds only steps."""
    if not base.exists():
        base.mkdir()
    enable = " ".join(f"+{c}" for c in controllers)
    (base.parent / "cgroup.subtree_control").write_text(enable)
    (base / "cgroup.subtree_control").write_text(enable)


class StepCgroup:
    def __init__(self, paths: dict[str, Path], memory_mb: int, processes: int):
        self.paths = paths  # controller -> its folder (one shared folder on v2)
        self.memory_mb, self.processes = memory_mb, processes

    @classmethod
    def create(cls, processes: int, memory_mb: int) -> StepCgroup | None:
        bases = _bases()
        if not bases:
            return None
        name = uuid.uuid4().hex[:12]
        paths: dict[str, Path] = {}
        v2 = (ROOT / "cgroup.controllers").is_file() and not (ROOT / "pids" / "cgroup.procs").is_file()
        try:
            if v2:
                _prepare_v2(next(iter(bases.values())), list(bases))
            for ctrl, base in bases.items():
                base.mkdir(exist_ok=True)
                path = base / name
                if not path.exists():
                    path.mkdir()
                paths[ctrl] = path
            cg = cls(paths, memory_mb, processes)
            cg._set_limits(v2)
        except OSError:
            for path in set(paths.values()):
                with contextlib.suppress(OSError):
                    path.rmdir()
            return None
        return cg

    def _set_limits(self, v2: bool) -> None:
        if "pids" in self.paths:
            (self.paths["pids"] / "pids.max").write_text(str(self.processes))
        if "memory" in self.paths:
            mem = self.paths["memory"]
            limit = str(self.memory_mb * 1024 * 1024)
            if v2:
                (mem / "memory.max").write_text(limit)
                with contextlib.suppress(OSError):  # no swap accounting: nothing to close
                    (mem / "memory.swap.max").write_text("0")
            else:
                (mem / "memory.limit_in_bytes").write_text(limit)
                with contextlib.suppress(OSError):
                    (mem / "memory.memsw.limit_in_bytes").write_text(limit)

    @property
    def limits_memory(self) -> bool:
        return "memory" in self.paths

    def enter(self) -> None:
        """In the child, before exec: it and all it forks belong to this cgroup."""
        pid = str(os.getpid())
        for path in dict.fromkeys(self.paths.values()):
            (path / "cgroup.procs").write_text(pid)

    def _counter(self, ctrl: str, files: tuple[str, ...], key: str) -> int:
        path = self.paths.get(ctrl)
        if path is None:
            return 0
        for name in files:
            with contextlib.suppress(OSError, ValueError):
                for line in (path / name).read_text().splitlines():
                    k, _, value = line.partition(" ")
                    if k == key:
                        return int(value)
        return 0

    def refused_forks(self) -> int:
        """How many forks the limit refused (pids.events `max N`)."""
        return self._counter("pids", ("pids.events",), "max")

    def oom_kills(self) -> int:
        """Processes the kernel killed at the memory limit (v2 memory.events, v1 memory.oom_control)."""
        return self._counter("memory", ("memory.events", "memory.oom_control"), "oom_kill")

    def memory_peak(self) -> int | None:
        """The step's memory high-water mark in bytes: v2 `memory.peak` (Linux 5.19+), v1
        `memory.max_usage_in_bytes`; None where neither is kept."""
        path = self.paths.get("memory")
        if path is None:
            return None
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            with contextlib.suppress(OSError, ValueError):
                return int((path / name).read_text().split()[0])
        return None

    def cpu_seconds(self) -> float | None:
        """CPU time of every process the step ran (user + system): v1 `cpuacct.usage` (ns), v2
        `cpu.stat` usage_usec; None where neither is kept."""
        v1 = self.paths.get("cpuacct")
        if v1 is not None:
            with contextlib.suppress(OSError, ValueError):
                return int((v1 / "cpuacct.usage").read_text().split()[0]) / 1e9
            return None
        usec = self._counter("memory", ("cpu.stat",), "usage_usec") if "memory" in self.paths else 0
        return usec / 1e6 if usec else None

    def pids(self) -> list[int]:
        found: set[int] = set()
        for path in dict.fromkeys(self.paths.values()):
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in (path / "cgroup.procs").read_text().split())
        return sorted(found)

    def kill_all(self) -> None:
        for _ in range(50):  # a fork bomb forks while we kill: repeat until empty
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        self.kill_all()
        for path in dict.fromkeys(self.paths.values()):
            for _ in range(100):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)  # killed processes take a moment to leave
