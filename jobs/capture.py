"""Run an untrusted command: in its sandbox (jobs/sandbox.py), its own session,
limits for the whole step (jobs/cgroup.py; rlimits where no cgroup can be had),
a cap on what it creates in its folders (bytes and inodes), capped output, a wall-clock limit, and
the whole process group killed when it must stop. Why it stopped is recorded in
words ("memory limit 4096 MB", "disk limit 512 MB", "inode limit 20000")."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from hpcbench.jobs.cgroup import StepCgroup
from hpcbench.jobs.records import Limits
from hpcbench.jobs.sandbox import Step, apptainer_env


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
    memory_peak_bytes: int | None = None  # the step cgroup's high-water mark (None: no memory cgroup)
    cpu_s: float | None = None  # CPU time of all the step's processes (None: no accounting cgroup)
    observed: object = None  # what `observe` returned when stopped (jobs/affinity.Watcher.stop)


@dataclass(frozen=True)
class Confinement:
    """The limits a step runs under (None: no cgroup, no rlimits, no disk watch), the cores
    it starts on (None: wherever the caller runs), and the launch that starts it elsewhere (a
    build: Slurm's `srun --exact ...` step, or under PBS one rank of the site's launcher on the
    job's own node; jobs/placement.build_confinement; empty: a child of ours): the sandbox goes
    inside that launch, and its processes are the scheduler's, so the limits reach them as
    rlimits (the launcher passes them on), not through our cgroup."""
    limits: Limits | None = None
    cpus: list[int] | None = None
    launch: tuple[str, ...] = ()


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


def _limit_preexec(limits: Limits | None, cgroup: StepCgroup | None = None, per_rank: bool = False,
                   cpus: list[int] | None = None):
    # Ranks a batch launcher starts are its daemon's children, not ours: our cgroup does not
    # hold them, but srun passes its rlimits on (PropagateResourceLimits), so they keep RLIMIT_AS.
    memory_rlimit = cgroup is None or not cgroup.limits_memory or per_rank

    def apply() -> None:
        os.setsid()  # own process group: a timeout kills every rank and helper
        if cgroup is not None:
            cgroup.enter()
        if cpus:  # the launcher and its helpers on the run's own cores (jobs/binding.py)
            os.sched_setaffinity(0, cpus)
        if limits is None:
            return
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
        if memory_rlimit:
            # Per process only; a step cgroup limits all of them together instead, and an
            # address-space limit would fail an allocation before the cgroup could say why.
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_mb * mb, limits.file_size_mb * mb))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # Counts every process of this user; root is exempt, which is why the run
        # also gets a pids cgroup where possible and its process group is killed at the end.
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))

    return apply


TERM_GRACE_S = 0.5


def kill_group(pgid: int) -> None:
    """SIGTERM the group, SIGKILL what is left after TERM_GRACE_S. The grace is waited out
    only while something of the group lives: srun leaves a helper that exits a moment after
    srun itself, and a fixed sleep here held the run's core slots idle for 0.5 s per run
    (a third of a packed Slurm allocation's wall time)."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + TERM_GRACE_S
    while time.monotonic() < deadline:
        time.sleep(0.01)
        if not group_alive(pgid):
            return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs. A zombie does not count: srun's helper is
    reparented to PID 1 when srun exits, and where PID 1 is slow to reap (a container's init)
    it stays a zombie for seconds; signalling the group still succeeds on it."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        state, _ppid, group = stat.rsplit(")", 1)[1].split()[:3]
        if int(group) == pgid and state != "Z":
            return True
    return False


def folder_usage(folders: list[Path], max_entries: int | None = None) -> tuple[int, int]:
    """(bytes, entries) under `folders`: the allocated blocks of every file, folder and
    symbolic link (sparse files count as written; 150,000 empty folders are 600 MB on ext4),
    and how many there are (inodes). The walk stops after `max_entries`: past a limit the
    exact count no longer matters, and walking a million entries every period would not end."""
    total = entries = 0
    stack = [str(f) for f in folders]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += st.st_blocks * 512
                    entries += 1
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    if max_entries is not None and entries > max_entries:
                        return total, entries
        except OSError:
            continue
    return total, entries


def file_at_size(folders: list[Path], size: int, max_entries: int) -> str:
    """The name of a file under `folders` of at least `size` bytes ("" where none)."""
    stack, seen = [str(f) for f in folders], 0
    while stack and seen <= max_entries:
        try:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    seen += 1
                    with contextlib.suppress(OSError):
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                        elif e.is_file(follow_symlinks=False) and e.stat(follow_symlinks=False).st_size >= size:
                            return e.name
        except OSError:
            continue
    return ""


def free_folders(folders: list[Path]) -> None:
    """Remove everything under `folders` (kept themselves), whatever modes the program set."""
    stack = [str(f) for f in folders]
    while stack:  # folders opened up first: one the program made unreadable is still removed
        d = stack.pop()
        with contextlib.suppress(OSError):
            os.chmod(d, 0o700)
            with os.scandir(d) as it:
                stack += [e.path for e in it if e.is_dir(follow_symlinks=False)]
    for folder in folders:
        with contextlib.suppress(OSError), os.scandir(folder) as it:
            for e in list(it):
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(e.path)


class _DiskWatch(threading.Thread):
    """Stops a step whose folders grow past the disk limit (bytes) or the inode limit
    (files, folders and links created). A quota-checked folder: the files must outlive
    the sandbox (logs, the binary), so they are on the job's file system, not a tmpfs;
    RLIMIT_FSIZE bounds each file between two checks."""

    PERIOD_S = 0.2

    def __init__(self, folders: list[Path], limits: Limits, on_full):
        super().__init__(daemon=True)
        self.folders, self.limits, self.on_full = folders, limits, on_full
        self.start_bytes, self.start_inodes = folder_usage(folders)
        self.full = threading.Event()
        self.reason = ""
        self.done = threading.Event()

    def over(self) -> str:
        """The limit the step is past, in words ("" while under both)."""
        used, inodes = folder_usage(self.folders, self.start_inodes + self.limits.inodes)
        if inodes - self.start_inodes > self.limits.inodes:
            return f"inode limit {self.limits.inodes}"
        if used - self.start_bytes > self.limits.disk_mb * 1024 * 1024:
            return f"disk limit {self.limits.disk_mb} MB"
        return ""

    def run(self) -> None:
        while not self.done.wait(self.PERIOD_S):
            if reason := self.over():
                self.reason = reason
                self.full.set()
                self.on_full()
                return

    def check_final(self) -> None:
        self.done.set()
        if not self.full.is_set() and (reason := self.over()):
            self.reason = reason
            self.full.set()


def run_captured(
    cmd: list[str],
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    output_cap: int = 1 << 20,
    step: Step | None = None,
    confinement: Confinement | None = None,
    observe=None,
) -> Captured:
    """Run `cmd` inside `step`'s sandbox where given (per rank: `cmd` already wraps each rank,
    see launch.launch_argv), its folders under the disk limit, started on the confinement's `cpus`.
    `observe(pid, cgroup_pids)` is called once the process exists and returns an object whose
    `stop()` is called when it ends (its result is `Captured.observed`)."""
    where = confinement or Confinement()
    limits = where.limits
    if step is not None and not step.isolation.per_rank:
        cmd, cwd = step.wrap(cmd), step.host_cwd
        if step.level == "apptainer":
            env = apptainer_env(env)
    if where.launch:
        cmd = [*where.launch, *cmd]
        where = Confinement(limits, None, where.launch)  # the scheduler places it: not pinned here
    cgroup = StepCgroup.create(limits.processes, limits.memory_mb) if limits else None
    try:
        return _run(cmd, cwd, env, timeout_s, output_cap, step, where, cgroup, observe)
    finally:
        if cgroup is not None:
            cgroup.remove()


def _wait(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait for the process; True when it was killed at `timeout_s`."""
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        proc.wait()
        return True
    except BaseException:
        # The job itself is being stopped (walltime signal, cancel): the run dies with it.
        kill_group(proc.pid)
        raise
    return False


def _stopped_reason(hit: list[str], rc: int | None, sig: int | None, timeout: str | bool, flood: str | bool,
                    limits: Limits | None, refused: int = 0) -> str:
    """Why the run stopped, in words: a limit it hit first, then timeout, output flood, a signal;
    and forks the process limit refused."""
    reason = _first_reason(hit, rc, sig, timeout, flood, limits)
    if refused:
        limit = f"process limit ({limits.processes if limits else '?'}): {refused} forks refused"
        reason = f"{reason}; {limit}" if reason else limit
    return reason


def _first_reason(hit: list[str], rc: int | None, sig: int | None, timeout: str | bool, flood: str | bool,
                  limits: Limits | None) -> str:
    if hit:
        return "; ".join(hit + ([str(timeout)] if timeout else []))
    if timeout or flood:
        return str(timeout or flood)
    if sig == signal.SIGXCPU or rc == 128 + signal.SIGXCPU:  # launchers and bwrap exit 128 + signal
        return "cpu time limit"
    if sig == signal.SIGXFSZ or rc == 128 + signal.SIGXFSZ:
        return f"file size limit {limits.file_size_mb if limits else '?'} MB"
    if sig is not None:
        return f"killed by signal {signal.Signals(sig).name}"
    return ""


def _disk_after(disk: _DiskWatch | None, limits: Limits | None, rc: int | None, reason: str) -> str:
    """The stop reason, with the file size limit where the program met it without dying of it;
    a step past its disk limit has its files freed."""
    if disk is None or limits is None:
        return reason
    if disk.full.is_set():
        # What the step wrote past its limit is freed now, not when the job ends: fallocate takes
        # gigabytes between two checks, and until they go every job on the file system (this
        # one's record, the reference beside it) fails for want of room (outside review, 5379f62).
        free_folders(disk.folders)
    if not reason and rc not in (0, None) \
            and (at := file_at_size(disk.folders, limits.file_size_mb << 20, limits.inodes)):
        # SIGXFSZ ignored or caught: the write failed with EFBIG and the program stopped on its own
        return f"file size limit {limits.file_size_mb} MB ({at} reached it)"
    return reason


def _watch_disk(limits: Limits | None, step: Step | None, pid: int) -> _DiskWatch | None:
    """The step's folders under the disk limit: the process group is killed past it."""
    if limits is None or step is None or not step.writable:
        return None
    disk = _DiskWatch(step.watched(), limits, lambda: kill_group(pid))
    disk.start()
    return disk


def _readers(proc: subprocess.Popen, output_cap: int, flood_at: int, flooded: threading.Event
             ) -> tuple[_Reader, _Reader]:
    """stdout and stderr read as they come; a flood sets `flooded` and kills the group."""
    def on_flood() -> None:
        flooded.set()
        kill_group(proc.pid)

    out = _Reader(proc.stdout, output_cap, flood_at, on_flood)
    err = _Reader(proc.stderr, output_cap, flood_at, on_flood)
    out.start()
    err.start()
    return out, err


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout_s: float, output_cap: int,
         step: Step | None, where: Confinement, cgroup: StepCgroup | None, observe=None) -> Captured:
    limits = where.limits
    flood_at = limits.flood_bytes if limits else 1 << 30
    not_ours = bool(where.launch) or (step is not None and step.isolation.per_rank)  # the scheduler's processes
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_limit_preexec(limits, cgroup, not_ours, where.cpus),
        )
    except OSError as e:
        return Captured(127, None, False, f"could not start: {e}", 0.0, "", str(e), False, False, 0, 0)
    watcher = observe(proc.pid, cgroup.pids if cgroup is not None else None) if observe else None
    flooded = threading.Event()
    out, err = _readers(proc, output_cap, flood_at, flooded)
    disk = _watch_disk(limits, step, proc.pid)
    timed_out = _wait(proc, timeout_s)
    wall = time.perf_counter() - t0
    observed = watcher.stop() if watcher is not None else None
    peak = cgroup.memory_peak() if cgroup is not None else None
    cpu = cgroup.cpu_seconds() if cgroup is not None else None
    if disk is not None:
        disk.check_final()
    # Orphans that left the launcher behind (a fork bomb, a daemonised child) die too.
    kill_group(proc.pid)
    refused = oom = 0
    if cgroup is not None:  # and what left the group with setsid, before it can hold our pipes open
        refused, oom = cgroup.refused_forks(), cgroup.oom_kills()
        cgroup.kill_all()
    out.join(5)
    err.join(5)
    rc = proc.returncode
    sig = -rc if rc is not None and rc < 0 else None
    # The limit the step hit comes first: a run whose ranks were killed at the memory limit
    # may still reach its timeout while the launcher waits for the rest.
    hit = [disk.reason] if disk is not None and disk.full.is_set() else []
    hit += [f"memory limit {limits.memory_mb} MB"] if limits and oom else []
    reason = _stopped_reason(hit, rc, sig, timed_out and f"timeout after {timeout_s:g} s",
                             flooded.is_set() and f"output flood: more than {flood_at} bytes", limits, refused)
    reason = _disk_after(disk, limits, rc, reason)
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
        memory_peak_bytes=peak,
        cpu_s=cpu,
        observed=observed,
    )
