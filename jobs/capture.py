"""Run an untrusted command: in its sandbox (jobs/sandbox.py), its own session,
limits for the whole step (jobs/cgroup.py; rlimits where no cgroup can be had),
a cap on what it creates in its folders (bytes and inodes), capped output, a wall-clock limit, and
the whole process group killed when it must stop. Why it stopped is recorded in
words ("memory limit 4096 MB", "disk limit 512 MB", "inode limit 20000")."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpcbench.jobs.cgroup import StepCgroup
from hpcbench.jobs.disk_cap import CappedFolder, free_folders
from hpcbench.jobs.diskfull import is_low, says_full
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
    disk_limit: str = ""  # how the disk limit was held: KERNEL_DISK, WATCHED_DISK ("": no limits)


# How a step's disk limit was held, as its record says (BuildResult/RunResult.disk_limit).
KERNEL_DISK = "kernel (tmpfs)"
WATCHED_DISK = "watched every 0.2 s"


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


class _DiskWatch(threading.Thread):
    """Stops a step whose folders grow past the disk limit (bytes) or the inode limit
    (files, folders and links created), checked every PERIOD_S. Where the kernel holds the disk
    limit (`capped`: the step works in a tmpfs of that size, jobs/disk_cap.py) this says when the
    step reached it and counts inodes, which bwrap cannot cap (no `nr_inodes`: each costs the
    step's memory cgroup about 1 KB meanwhile); elsewhere (per-rank sandboxes, apptainer, none, a
    bwrap without --size) it is the only disk limit: a quota-checked folder on the job's file
    system, RLIMIT_FSIZE bounding each file between two checks."""

    PERIOD_S = 0.2

    def __init__(self, folders: list[Path], limits: Limits, on_full, host: list[Path] | None = None,
                 capped: CappedFolder | None = None):
        super().__init__(daemon=True)
        self.folders, self.limits, self.on_full = folders, limits, on_full
        self.host = host if host is not None else folders  # the host folders freed past a limit
        self.capped = capped
        # what the step starts with (capped: its folders' staged files, copied into the tmpfs)
        self.start_bytes, self.start_inodes = folder_usage(self.host)
        self.full = threading.Event()
        self.reason = ""
        self.done = threading.Event()
        self.output = ""  # what the step printed (set when it ended): its own ENOSPC, in words

    def over(self) -> str:
        """The limit the step is past, in words ("" while under both)."""
        used, inodes = folder_usage(self.folders, self.start_inodes + self.limits.inodes)
        if inodes - self.start_inodes > self.limits.inodes:
            return f"inode limit {self.limits.inodes}"
        if used - self.start_bytes > self.limits.disk_mb * 1024 * 1024 or \
                (self.capped is not None and self.capped.at_limit()):
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
    `stop()` is called when it ends (its result is `Captured.observed`).

    The disk limit is the kernel's where the step is one bwrap sandbox (not one per rank) and
    bwrap has `--size`: its folder is a tmpfs of `disk_mb` (jobs/disk_cap.py; started through a
    scheduler's launch, the sandbox copies its files back itself: sandbox.disk_limited); else the
    folders are watched."""
    where = confinement or Confinement()
    limits = where.limits
    go: _Go | None = None
    copy_back = False
    if step is not None and limits is not None and not step.isolation.per_rank:
        capped = dataclasses.replace(step, disk_bytes=tmpfs_size(step, limits))
        if capped.kernel_disk:
            step = capped
            if where.launch:  # the sandbox is not our child: it copies its files back itself
                copy_back = True
            else:
                go = _Go()
    if step is not None and not step.isolation.per_rank:
        cmd, cwd = step.wrap(cmd, go.read if go else None, copy_back), step.host_cwd
        if step.level == "apptainer":
            env = apptainer_env(env)
    if where.launch:
        cmd = [*where.launch, *cmd]
        where = Confinement(limits, None, where.launch)  # the scheduler places it: not pinned here
    cgroup = StepCgroup.create(limits.processes, limits.memory_mb) if limits else None
    try:
        return _run(cmd, cwd, env, timeout_s, output_cap,
                    _Context(step, where, cgroup, observe, go, copy_back))
    finally:
        if go is not None:
            go.close()
        if cgroup is not None:
            cgroup.remove()


def tmpfs_size(step: Step, limits: Limits) -> int:
    """The tmpfs a kernel-capped step works in: `disk_mb` for what it makes, beside the files its
    folder starts with (the submission's, copied in: the limit counts what the step creates, as
    the watch does), in whole pages as the kernel sizes it."""
    start, _ = folder_usage([step.host_cwd]) if step.host_cwd.is_dir() else (0, 0)
    return -(-((limits.disk_mb << 20) + start) // PAGE) * PAGE


PAGE = os.sysconf("SC_PAGE_SIZE")


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


def _disk_after(disk: _DiskWatch | None, limits: Limits | None, rc: int | None, reason: str,
                capped: CappedFolder | None = None, own_enospc: bool = False) -> str:
    """The stop reason, with the file size limit where the program met it without dying of it;
    a step past its disk limit has its files freed; a kernel-capped step's files copied out
    (every process of it is gone by now) unless it was past a limit."""
    if disk is None or limits is None:
        return reason
    if not reason and rc not in (0, None) and own_enospc and says_full(disk.output):
        # ENOSPC inside the tmpfs is the step's own limit (a fallocate of more than it fails whole,
        # leaving the tmpfs as empty as before): never the file system the campaign is on, which
        # has room (`own_enospc`: the step was kernel-capped and that file system is not low;
        # where it is low too, the job's full-disk check decides: jobs/job.py)
        reason = disk.reason = f"disk limit {limits.disk_mb} MB"
        disk.full.set()
    if disk.full.is_set():
        # What the step wrote past its limit is freed now, not when the job ends: fallocate takes
        # gigabytes between two checks, and until they go every job on the file system (this
        # one's record, the reference beside it) fails for want of room (outside review, 5379f62).
        # A capped step's tmpfs goes when `capped` is let go (_run), nothing of it copied out.
        free_folders(disk.host)
        return reason
    if capped is not None:
        capped.copy_out(disk.start_inodes + limits.inodes)
    if not reason and rc not in (0, None) \
            and (at := file_at_size(disk.host, limits.file_size_mb << 20, limits.inodes)):
        # SIGXFSZ ignored or caught: the write failed with EFBIG and the program stopped on its own
        return f"file size limit {limits.file_size_mb} MB ({at} reached it)"
    return reason


def _watch_disk(limits: Limits | None, step: Step | None, pid: int,
                capped: CappedFolder | None = None) -> _DiskWatch | None:
    """The step's folders under the disk limit: the process group is killed past it."""
    if limits is None or step is None or not step.writable:
        return None
    if capped is not None:  # the tmpfs in place of the working folder, the harness's files beside it
        others = [p for p in step.watched() if p != capped.host]
        disk = _DiskWatch([capped.root, *others], limits, lambda: kill_group(pid), step.watched(), capped)
    else:
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


class _Go:
    """The pipe on which a kernel-capped step's first command waits for the harness's word (one
    line): each end closed once, whoever gets there first."""

    def __init__(self) -> None:
        self.read, self.write = os.pipe()

    def close_read(self) -> None:
        if self.read >= 0:
            os.close(self.read)
            self.read = -1

    def say(self) -> None:
        with contextlib.suppress(OSError):  # a sandbox already gone has nothing to be told
            os.write(self.write, b"go\n")

    def close(self) -> None:
        self.close_read()
        if self.write >= 0:
            os.close(self.write)
            self.write = -1


# How long a kernel-capped step's sandbox may take to show its tmpfs (bwrap takes milliseconds).
ATTACH_S = 30.0


@dataclass
class _Context:
    """Where a step runs and what watches it (run_captured's choices, handed to _run and _finish)."""
    step: Step | None
    where: Confinement
    cgroup: StepCgroup | None
    observe: Callable[..., Any] | None = None  # (pid, cgroup pids) -> a watcher, as run_captured takes it
    go: _Go | None = None
    copy_back: bool = False  # a sandbox the scheduler started copies its tmpfs back itself


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout_s: float, output_cap: int,
         ctx: _Context) -> Captured:
    step, where, cgroup, go = ctx.step, ctx.where, ctx.cgroup, ctx.go
    limits = where.limits
    flood_at = limits.flood_bytes if limits else 1 << 30
    not_ours = bool(where.launch) or (step is not None and step.isolation.per_rank)  # the scheduler's processes
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, pass_fds=(go.read,) if go else (),
            preexec_fn=_limit_preexec(limits, cgroup, not_ours, where.cpus),
        )
    except OSError as e:
        return Captured(127, None, False, f"could not start: {e}", 0.0, "", str(e), False, False, 0, 0)
    capped, lost = _attach(proc, step, go)
    try:
        return _finish(proc, t0, timeout_s, output_cap, flood_at, ctx, capped, lost)
    finally:
        if capped is not None:
            capped.close()  # the tmpfs goes now: its pages counted against the step's memory cgroup


def _attach(proc: subprocess.Popen, step: Step | None, go: _Go | None) -> tuple[CappedFolder | None, str]:
    """A kernel-capped step's tmpfs, held open before its program starts (then told to: a line
    on `go`), and why it could not be ("": it was, or the step is not capped)."""
    if go is None or step is None or step.disk_bytes is None:
        return None, ""
    go.close_read()  # the sandbox's own now
    capped = CappedFolder.attach(proc.pid, step.cwd, step.disk_bytes, step.host_cwd, ATTACH_S,
                                  lambda: proc.poll() is None)
    if capped is not None:
        go.say()
    go.close()  # without the word the step's first command ends there
    return capped, "" if capped is not None else f"its sandbox's tmpfs did not appear within {ATTACH_S:g} s"


def _finish(proc: subprocess.Popen, t0: float, timeout_s: float, output_cap: int, flood_at: int,
            ctx: _Context, capped: CappedFolder | None, lost: str) -> Captured:
    step, limits, cgroup, observe, copy_back = ctx.step, ctx.where.limits, ctx.cgroup, ctx.observe, ctx.copy_back
    watcher = observe(proc.pid, cgroup.pids if cgroup is not None else None) if observe else None
    flooded = threading.Event()
    out, err = _readers(proc, output_cap, flood_at, flooded)
    disk = _watch_disk(limits, step, proc.pid, capped)
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
    if disk is not None:
        disk.output = out.text() + err.text()
    kernel = capped is not None or copy_back
    reason = _disk_after(disk, limits, rc, reason, capped, kernel and step is not None and not is_low(step.host_cwd))
    if lost and not reason:
        reason = f"could not start: {lost}"
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
        disk_limit="" if disk is None else KERNEL_DISK if kernel else WATCHED_DISK,
    )
