"""The machine's own baseline, measured with mpi4py through the site's launcher: ping-pong
latency and bandwidth between rank 0 and the last rank (on another node when the run
spans several), allreduce times, and the memory bandwidth all ranks get at once (a STREAM
triad, a = b + s c, on arrays far larger than the caches), at each rank count a sweep uses.
Scaling efficiency is read against it: a program cannot beat the network it runs on, and a
memory-bound one (most PETSc solvers: PETSc's FAQ reads scaling against STREAM, "What kind
of parallel computers or clusters are needed to use PETSc?") cannot speed up more than the
bandwidth does, stream(p) / stream(1).

    in_allocation(manifest, hosts, cores)   inside a packed allocation, before its jobs (jobs/pack.py)
    python -m hpcbench.jobs.baseline --point    one point: what each launch runs
    (hpcbench/machine_baseline.py: the same, from a login node or this machine: measure, doctor)

The file (<campaign>/machine/baseline-<variant>.json):
    {"schema": 1, "variant", "launcher", "hosts": [...], "points": [{"ranks", "nodes",
     "pingpong_latency_us", "pingpong_bandwidth_MBps", "allreduce_8B_us", "allreduce_1MB_us",
     "stream_triad_MBps", "oversubscribed", "error"}], "measured_at", "mpi_library"}
A point that could not be measured keeps its ranks and says why in "error" (numbers null)."""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from hpcbench.jobs.launch import mpi_env
from hpcbench.jobs.placement import PackContext, placed_launcher
from hpcbench.jobs.records import Launcher, write_atomic

SCHEMA = 1
LAT_BYTES, BW_BYTES, BIG_BYTES = 8, 4 << 20, 1 << 20
STREAM_DOUBLES = 2_000_000  # 16 MB per array and rank: well beyond a core's share of any cache
# numpy does the triad in two passes (c*s into a, then a+b into a): 5 streams of 8 bytes per
# element where STREAM's compiled loop moves 3; the bytes counted are those moved. Ratios between
# rank counts (the bandwidth-allowed speedup) do not depend on that constant.
STREAM_BYTES_PER_ELEMENT = 5 * 8
POINT_TIMEOUT_S = 180.0


BATCH_S = 0.1  # time one batch may take: an oversubscribed point is slow, not worth minutes


def _affordable(comm, op, reps: int) -> int:
    """Repetitions per batch that fit BATCH_S, from one timed call (the same on every rank)."""
    from mpi4py import MPI

    op()  # the first call sets up connections: not what a repetition costs
    comm.Barrier()
    t = time.perf_counter()
    op()
    one = comm.allreduce(time.perf_counter() - t, op=MPI.MAX)
    return max(3, min(reps, int(BATCH_S / max(one, 1e-9))))


def _time_pingpong(comm, peer: int, nbytes: int, reps: int) -> float:
    """Seconds per round trip between rank 0 and `peer` (others wait at the barrier)."""
    import numpy as np

    buf = np.zeros(max(1, nbytes), dtype=np.uint8)
    rank = comm.Get_rank()

    def trip() -> None:
        if rank == 0:
            comm.Send(buf, dest=peer, tag=7)
            comm.Recv(buf, source=peer, tag=7)
        elif rank == peer:
            comm.Recv(buf, source=0, tag=7)
            comm.Send(buf, dest=0, tag=7)

    reps = _affordable(comm, trip, reps)
    best = float("inf")
    for _ in range(3):  # best of three batches: the machine's capability, not its noise
        comm.Barrier()
        t = time.perf_counter()
        for _ in range(reps):
            trip()
        best = min(best, (time.perf_counter() - t) / reps)
    return best


def _time_allreduce(comm, nbytes: int, reps: int) -> float:
    import numpy as np
    from mpi4py import MPI

    n = max(1, nbytes // 8)
    a, b = np.ones(n), np.zeros(n)
    reps = _affordable(comm, lambda: comm.Allreduce(a, b, op=MPI.SUM), reps)
    best = float("inf")
    for _ in range(3):
        comm.Barrier()
        t = time.perf_counter()
        for _ in range(reps):
            comm.Allreduce(a, b, op=MPI.SUM)
        best = min(best, comm.allreduce(time.perf_counter() - t, op=MPI.MAX) / reps)
    return best


def _stream_triad(comm) -> float:
    """MB/s of memory traffic of all ranks together doing the triad at once, best of twenty (a
    loaded machine descheduling one rank spoils single tries)."""
    import numpy as np
    from mpi4py import MPI

    a, b, c = np.zeros(STREAM_DOUBLES), np.full(STREAM_DOUBLES, 1.0), np.full(STREAM_DOUBLES, 2.0)
    best = float("inf")
    for _ in range(20):
        comm.Barrier()
        t = time.perf_counter()
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)
        best = min(best, comm.allreduce(time.perf_counter() - t, op=MPI.MAX))
    return comm.Get_size() * STREAM_BYTES_PER_ELEMENT * STREAM_DOUBLES / best / 1e6


def point() -> dict | None:
    """One point, under MPI: rank 0 returns the numbers, the others None."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    size, rank = comm.Get_size(), comm.Get_rank()
    hosts = comm.gather(socket.gethostname(), root=0)
    out: dict = {"ranks": size}
    if size > 1:
        peer = size - 1
        lat = _time_pingpong(comm, peer, LAT_BYTES, 200)
        bw = _time_pingpong(comm, peer, BW_BYTES, 10)
        out["pingpong_latency_us"] = lat / 2 * 1e6
        out["pingpong_bandwidth_MBps"] = BW_BYTES / (bw / 2) / 1e6
    else:
        out["pingpong_latency_us"] = out["pingpong_bandwidth_MBps"] = None
    out["allreduce_8B_us"] = _time_allreduce(comm, 8, 200) * 1e6
    out["allreduce_1MB_us"] = _time_allreduce(comm, BIG_BYTES, 10) * 1e6
    out["stream_triad_MBps"] = _stream_triad(comm)
    if rank != 0:
        return None
    out["hosts"] = sorted(set(hosts or []))
    out["nodes"] = len(out["hosts"])
    out["mpi_library"] = MPI.Get_library_version().strip().splitlines()[0]
    return out


def run_point(argv: list[str], ranks: int, over: bool) -> dict:
    env = {**os.environ, **mpi_env()}
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=POINT_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return {"ranks": ranks, "oversubscribed": over, "error": f"no answer in {POINT_TIMEOUT_S:.0f} s"}
    except OSError as e:
        return {"ranks": ranks, "oversubscribed": over, "error": f"{argv[0]}: {e}"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip()[-400:]
        return {"ranks": ranks, "oversubscribed": over, "error": f"exit {p.returncode}: {tail}"}
    got = json.loads(lines[-1])
    got["oversubscribed"] = over
    return got


def write_baseline(out_path: Path, variant: str, launcher: Launcher, points: list[dict]) -> dict:
    hosts = sorted({h for pt in points for h in pt.pop("hosts", [])})
    libs = [pt.pop("mpi_library") for pt in points if "mpi_library" in pt]
    doc = {"schema": SCHEMA, "variant": variant, "launcher": launcher.template, "hosts": hosts,
           "points": points, "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "mpi_library": libs[0].replace("\x00", "").strip() if libs else ""}
    write_atomic(Path(out_path), json.dumps(doc, indent=1))
    return doc


def program(python: str = "") -> list[str]:
    return [python or sys.executable, "-m", "hpcbench.jobs.baseline", "--point"]


def in_allocation(manifest, hosts: list[str], cores_per_node: int) -> dict:
    """Inside a packed allocation (jobs/pack.py): each point placed as its jobs' runs are."""
    req = manifest.baseline
    ctx = PackContext(manifest.scheduler, tuple(hosts), cores_per_node,
                      str(Path(manifest.work_dir) / ".pack-hosts" / "baseline"))
    points = []
    for r in sorted(set(req.ranks)):
        argv, over, _ = placed_launcher(req.launcher, r, ctx)
        if over and req.launcher.oversubscribe_flag:
            argv.append(req.launcher.oversubscribe_flag)
        points.append(run_point(argv + program(req.python), r, over))
    return write_baseline(Path(req.out), manifest.variant, req.launcher, points)


def main(argv: list[str] | None = None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    if argv != ["--point"]:
        print("usage: python -m hpcbench.jobs.baseline --point   (under mpiexec/srun)", file=sys.stderr)
        return 2
    out = point()
    if out is not None:
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
