"""What a run's ranks really ran on, read by the job wrapper, never reported by the program.

Two readers, by where the ranks are:
- `Watcher` (the launcher runs inside the run's sandbox, on this node: the local site): a
  thread of the job driver, outside the sandbox, lists the step's processes (its cgroup,
  else the launcher's descendants in /proc) every few milliseconds and, for each process
  running the program's binary (/proc/<pid>/exe is the same file), reads
  `Cpus_allowed_list` from /proc/<pid>/status, the GPU visibility variables and the rank
  from /proc/<pid>/environ, and the time it spent runnable but waiting for a CPU from
  /proc/<pid>/schedstat (the kernel's "time spent waiting on a runqueue"; kernel docs,
  scheduler/sched-stats). A run shorter than the first look is recorded as not seen.
- `probe_prefix` (batch sites: the launcher outside, each rank wrapped in its sandbox, on any
  node of the allocation): a two-line shell that the launcher starts as the rank, which writes
  the same facts of itself (the shell's own /proc/self/status, before it `exec`s the
  sandboxed program in its place, same pid) into a folder of the job that the sandbox does
  not show, so the program can neither read nor rewrite it.

Either way the program has no say in what is recorded."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from hpcbench.jobs.records import RankAffinity, RunResult

GPU_VARS = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK")
PROC = Path("/proc")


def _status_cpus(pid: int) -> str:
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _run_delay_s(pid: int) -> float | None:
    try:
        return int((PROC / str(pid) / "schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def _environ(pid: int, rank_vars: tuple[str, ...]) -> dict[str, str]:
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        k, _, v = item.decode(errors="replace").partition("=")
        if k in GPU_VARS or k in rank_vars:
            out[k] = v
    return out


def _rank(env: dict[str, str], rank_vars: tuple[str, ...]) -> int:
    return next((int(env[k]) for k in rank_vars if env.get(k, "").isdigit()), -1)


def _children(root: int) -> list[int]:
    """The descendants of `root` (a scan of /proc: this runs where psutil is not installed)."""
    parent: dict[int, int] = {}
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [root]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        found += kids
        frontier += kids
    return found


class Watcher:
    """Reads the affinity of every process of one run that executes `binary`, while it runs; a
    rank's index from the first of `rank_vars` (its launcher's, jobs/launchers.py) it has."""

    fast_s, slow_s, fast_for_s = 0.005, 0.05, 0.3  # look often at first: most runs are short

    def __init__(self, root_pid: int, binary: Path, pids=None, host: str = "", *, rank_vars: tuple[str, ...]):
        st = os.stat(binary)
        self.rank_vars = rank_vars
        self.ident = (st.st_dev, st.st_ino)
        self.root, self.pids_of = root_pid, pids  # pids_of: the step cgroup's member list, or None
        self.host = host or os.uname().nodename
        self.seen: dict[int, RankAffinity] = {}
        self.last: dict[int, str] = {}  # the latest Cpus_allowed_list of each rank
        self.delay0: dict[int, float] = {}
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _candidates(self) -> list[int]:
        if self.pids_of is not None:
            return list(self.pids_of())
        return _children(self.root)

    def _is_program(self, pid: int) -> bool:
        try:
            st = os.stat(PROC / str(pid) / "exe")
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.ident

    def look(self) -> None:
        for pid in self._candidates():
            if pid in self.seen:
                self._update(pid)
            elif self._is_program(pid):
                cpus = _status_cpus(pid)
                if not cpus:
                    continue
                env = _environ(pid, self.rank_vars)
                self.seen[pid] = RankAffinity(host=self.host, rank=_rank(env, self.rank_vars), pid=pid, cpus=cpus,
                                              source="proc", gpus={k: v for k, v in env.items() if k in GPU_VARS})
                self.last[pid] = cpus
                delay = _run_delay_s(pid)
                if delay is not None:
                    self.delay0[pid] = delay

    def _update(self, pid: int) -> None:
        rec = self.seen[pid]
        cpus = _status_cpus(pid)
        if cpus:
            self.last[pid] = cpus
        delay = _run_delay_s(pid)
        if delay is not None and pid in self.delay0:
            rec.cpu_wait_s = round(max(0.0, delay - self.delay0[pid]), 6)

    def _loop(self) -> None:
        t0 = time.monotonic()
        while not self.stop_event.is_set():
            self.look()
            wait = self.fast_s if time.monotonic() - t0 < self.fast_for_s else self.slow_s
            self.stop_event.wait(wait)

    def stop(self) -> list[RankAffinity]:
        """Stop looking (the run ended); what was seen, by rank. A rank that ends on other CPUs
        than it started on moved itself (`changed_to`); moves in between are not counted: Open
        MPI 4.1's MPI_Init runs the rank on every CPU of the node for about 0.2 s and moves it
        back (hwloc's topology discovery; measured with a 2 ms watcher here)."""
        self.stop_event.set()
        self.thread.join(5)
        for pid, rec in self.seen.items():
            if self.last.get(pid, rec.cpus) != rec.cpus:
                rec.changed_to = self.last[pid]
        return sorted(self.seen.values(), key=lambda a: (a.rank, a.pid))


# One line per fact, `key=value`; the rank's own shell writes it, then becomes the program. RANK
# is the rank's index: the first of its launcher's variables set, else -1.
PROBE = (
    'd=$0; r=RANK; '
    'read -r h < /proc/sys/kernel/hostname; '
    '{ echo "host=$h"; echo "rank=$r"; echo "pid=$$"; '
    'while read -r k v; do [ "$k" = Cpus_allowed_list: ] && echo "cpus=$v"; done < /proc/self/status; '
    'for g in ' + " ".join(GPU_VARS) + '; do eval "x=\\${$g-}"; eval "s=\\${$g+set}"; '
    '[ "$s" = set ] && echo "gpu=$g=$x"; done; } > "$d/$h.$r.$$" 2>/dev/null; exec "$@"'
)


def first_set(rank_vars: tuple[str, ...], otherwise: str) -> str:
    """A shell expansion: the first of `rank_vars` set and not empty, else `otherwise`."""
    for var in reversed(rank_vars):
        otherwise = f"${{{var}:-{otherwise}}}"
    return otherwise


def probe_prefix(folder: Path, rank_vars: tuple[str, ...]) -> list[str]:
    """argv that records a rank's facts into `folder` (outside its sandbox), then execs the rest;
    its index is the first of `rank_vars` set (its launcher's: jobs/launchers.rank_variables)."""
    folder.mkdir(parents=True, exist_ok=True)
    return ["/bin/sh", "-c", PROBE.replace("RANK", first_set(rank_vars, "-1"), 1), str(folder)]


def read_probes(folder: Path) -> list[RankAffinity]:
    """The ranks' records a probe wrote (then the folder is emptied for the next run)."""
    out = []
    for f in sorted(folder.glob("*")) if folder.is_dir() else []:
        facts: dict[str, str] = {}
        gpus: dict[str, str] = {}
        try:
            text = f.read_text(errors="replace")[:4096]
        except OSError:
            continue
        for line in text.splitlines():
            k, _, v = line.partition("=")
            if k == "gpu":
                name, _, val = v.partition("=")
                gpus[name] = val
            else:
                facts[k] = v
        f.unlink(missing_ok=True)
        if facts.get("cpus"):
            rank = facts.get("rank", "")
            out.append(RankAffinity(host=facts.get("host", "?"), rank=int(rank) if rank.isdigit() else -1,
                                    pid=int(facts["pid"]) if facts.get("pid", "").isdigit() else 0,
                                    cpus=facts["cpus"], gpus=gpus, source="probe"))
    return sorted(out, key=lambda a: (a.rank, a.host))


def observer(binary: Path, kind: str, per_rank: bool, rank_vars: tuple[str, ...]):
    """The `observe` hook of capture.run_captured for a run of `binary`: a Watcher where the
    ranks are this process's descendants (not per-rank batch launches, whose probes record
    them; not valgrind, whose ranks run the valgrind tool, not the binary)."""
    if per_rank or kind == "valgrind":
        return None
    return lambda pid, pids_of: Watcher(pid, binary, pids_of, rank_vars=rank_vars)


def recorded(observed, probes: Path | None, wall_s: float) -> tuple[list[RankAffinity], str]:
    """The ranks' affinity from the watcher or the probes, and why there is none."""
    ranks = list(observed) if observed else (read_probes(probes) if probes is not None else [])
    if ranks:
        return ranks, ""
    if observed is None and probes is None:
        return [], "not recorded for this kind of run"
    return [], f"no rank seen (the run took {wall_s:.3f} s: ended before the first look, or failed to start)"


# A rank that waited for a CPU over this share of a timed-out run's wall time was held back by
# load. Measured 2026-12-06 (validate-checks, every problem, 40 generated mutants each): all 8
# jobs whose runs timed out on the 4x retry (robertson, allen-cahn-imex, bratu-fold: loops that
# never converge) had 96-100% of their 120-240 s on a CPU and waited 0.005-4.9 s for one; each
# retry cost 2-4 minutes and changed no verdict.
STARVED_SHARE = 0.1


def wait_share(run: RunResult) -> float | None:
    """The largest share of the run's wall time a rank waited for a CPU (/proc/<pid>/schedstat,
    as read above); None where some rank was not watched there (a batch site's probes
    measure no wait)."""
    watched = [a for a in run.affinity if a.source == "proc"]
    if len(watched) < run.ranks or run.wall_s <= 0:
        return None
    return max(a.cpu_wait_s for a in watched) / run.wall_s
