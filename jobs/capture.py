"""Run an untrusted command: its own session, resource limits, capped output,
a wall-clock limit, and the whole process group killed when it must stop."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from hpcbench.jobs.pids_cgroup import PidsCgroup
from hpcbench.jobs.records import Limits


@dataclass
class Captured:
    exit_code: int | None
    signal: int | None
    timed_out: bool
    stopped_reason: str
    wall_s: float
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    stdout_bytes: int
    stderr_bytes: int


class _Reader(threading.Thread):
    """Keeps the first `cap` bytes of a stream and counts the rest."""

    def __init__(self, stream, cap: int, flood: int, on_flood):
        super().__init__(daemon=True)
        self.stream, self.cap, self.flood, self.on_flood = stream, cap, flood, on_flood
        self.kept = bytearray()
        self.total = 0

    def run(self) -> None:
        while True:
            chunk = self.stream.read1(65536) if hasattr(self.stream, "read1") else self.stream.read(65536)
            if not chunk:
                break
            self.total += len(chunk)
            room = self.cap - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
            if self.total > self.flood:
                self.on_flood()
                break
        try:
            self.stream.close()
        except OSError:
            pass

    def text(self) -> str:
        return self.kept.decode("utf-8", errors="replace")


def _limit_preexec(limits: Limits | None, cgroup: PidsCgroup | None = None):
    def apply() -> None:
        os.setsid()  # own process group: a timeout kills every rank and helper
        if cgroup is not None:
            cgroup.enter()
        if limits is None:
            return
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_mb * mb, limits.file_size_mb * mb))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # Counts every process of this user; root is exempt, which is why the run
        # also gets a pids cgroup where possible and its process group is killed at the end.
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))

    return apply


def kill_group(pgid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        if sig == signal.SIGTERM:
            time.sleep(0.5)


def run_captured(
    cmd: list[str],
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    output_cap: int = 1 << 20,
    limits: Limits | None = None,
    stdin_data: bytes | None = None,
) -> Captured:
    flood_at = limits.flood_bytes if limits else 1 << 30
    cgroup = PidsCgroup.create(limits.processes) if limits else None
    try:
        return _run(cmd, cwd, env, timeout_s, output_cap, limits, flood_at, cgroup)
    finally:
        if cgroup is not None:
            cgroup.remove()


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout_s: float, output_cap: int,
         limits: Limits | None, flood_at: int, cgroup: PidsCgroup | None) -> Captured:
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, preexec_fn=_limit_preexec(limits, cgroup),
        )
    except OSError as e:
        return Captured(127, None, False, f"could not start: {e}", 0.0, "", str(e), False, False, 0, 0)
    flooded = threading.Event()

    def on_flood() -> None:
        flooded.set()
        kill_group(proc.pid)

    out = _Reader(proc.stdout, output_cap, flood_at, on_flood)
    err = _Reader(proc.stderr, output_cap, flood_at, on_flood)
    out.start()
    err.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc.pid)
        proc.wait()
    except BaseException:
        # The job itself is being stopped (walltime signal, cancel): the run dies with it.
        kill_group(proc.pid)
        raise
    wall = time.perf_counter() - t0
    # Orphans that left the launcher behind (a fork bomb, a daemonised child) die too.
    kill_group(proc.pid)
    refused = 0
    if cgroup is not None:  # and what left the group with setsid, before it can hold our pipes open
        refused = cgroup.refused_forks()
        cgroup.kill_all()
    out.join(5)
    err.join(5)
    rc = proc.returncode
    sig = -rc if rc is not None and rc < 0 else None
    reason = ""
    if timed_out:
        reason = f"timeout after {timeout_s:g} s"
    elif flooded.is_set():
        reason = f"output flood: more than {flood_at} bytes"
    elif sig == signal.SIGXCPU:
        reason = "cpu time limit"
    elif sig == signal.SIGXFSZ:
        reason = "file size limit"
    elif sig is not None:
        reason = f"killed by signal {signal.Signals(sig).name}"
    if refused:
        limit = f"process limit ({limits.processes if limits else '?'}): {refused} forks refused"
        reason = f"{reason}; {limit}" if reason else limit
    return Captured(
        exit_code=rc if sig is None else None,
        signal=sig,
        timed_out=timed_out,
        stopped_reason=reason,
        wall_s=wall,
        stdout=out.text(),
        stderr=err.text(),
        stdout_truncated=out.total > len(out.kept),
        stderr_truncated=err.total > len(err.kept),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
    )
