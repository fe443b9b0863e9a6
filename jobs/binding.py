"""Put a run's ranks on exactly the cores (and GPUs) it holds, in each launcher's own terms.

The core slots (jobs/slots.py) give every run whole cores and GPUs no other run holds at the
same time; this module turns them into the launcher's options. Each rule follows the
launcher's documentation:

- Open MPI (4.1 here): a rankfile of physical CPU ids, `--mca rmaps_rank_file_physical 1
  --rankfile F`: "Rank 0 will run on node aa, bound to the core that contains physical PU 1"
  (mpirun(1), "Rankfiles"; logical ids, the default, are hwloc's numbering, not the
  kernel's). Without it mpirun binds one- and two-rank jobs to cores counted from core 0
  (mpirun(1): "Bind to core: when the number of processes is <= 2"), so every concurrent
  one-rank run shared core 0 (measured: bench/affinity.py). A template that maps ranks
  itself (--npernode, --map-by, --ppr) conflicts with a rankfile ("Conflicting directives
  for mapping policy", measured): there `--cpu-list a,b --bind-to cpu-list:ordered`, the
  n-th rank of a node on the n-th CPU of the list (mpirun(1), "--bind-to cpu-list:ordered";
  hwloc logical core ids, the kernel's on single-socket nodes).
- MPICH's Hydra: `-bind-to user:a+b,c+d` (one entry per rank, the CPUs of its core joined
  by '+'; MPICH wiki "Using the Hydra Process Manager", Process-core Binding, and
  `mpiexec -bind-to -help`).
- Cray PALS (ALCF Polaris, Aurora): `--cpu-bind list:a,b:c,d` (one entry per rank, ':'
  between ranks; docs.alcf.anl.gov/polaris/running-jobs, "Running Multiple MPI Applications
  on a node": each concurrent mpiexec gets its own list and its own CUDA_VISIBLE_DEVICES).
- Slurm: srun picks the cores of an `--exact` step itself ("Allow a step access to only the
  resources requested for the step", srun(1)); `--cpu-bind=cores` binds each task to its
  cores, `-c <threads per core>` gives a task a whole core of a hyperthreaded node, and
  `--mem-per-cpu` gives the step its share of the job's memory (a step asking none is given
  all of it, and the next step waits for it). GPUs: `--gpus-per-task=1` (or `--gpus=N` for
  more ranks than GPUs): Slurm sets CUDA_VISIBLE_DEVICES per step.
- GPUs elsewhere: the site's visibility variable (CUDA_VISIBLE_DEVICES,
  ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, ZE_AFFINITY_MASK) lists the run's GPUs only,
  so a program choosing device rank % count picks one of its own.

A launcher started locally (the whole launch in one sandbox) is itself started on the run's
CPUs (capture.Confinement `cpus`), so its helpers (orted) run there too, and a launcher of
kind `none` hands them to its ranks by inheritance. A template that already binds (Open
MPI --map-by/--cpu-set/--rankfile, Hydra -bind-to, PALS or srun --cpu-bind) is left as the
site wrote it: the recorded affinity (jobs/affinity.py) shows what it did."""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

SITE_BINDS = ("--cpu-set", "--cpu-list", "--rankfile", "-rf", "--bind-to", "-bind-to", "-binding",
              "--cpu-bind", "--cpu_bind")
OMPI_MAPS = ("--map-by", "-map-by", "--npernode", "-npernode", "--ppr", "-ppr", "-N")


@dataclass(frozen=True)
class Binding:
    """What one run holds on its node: per core its CPU ids, the GPUs and their variable."""

    cores: tuple[tuple[int, ...], ...] = ()
    gpus: tuple[str, ...] = ()
    gpu_env: str = ""
    notes: list[str] = field(default_factory=list, compare=False)

    @property
    def cpus(self) -> list[int]:
        return sorted(c for core in self.cores for c in core)

    def rank_cores(self, ranks: int) -> list[tuple[int, ...]]:
        """The core of each rank: one each, round-robin when the run has more ranks than cores."""
        return [self.cores[r % len(self.cores)] for r in range(ranks)] if self.cores else []


@functools.lru_cache(maxsize=8)
def mpiexec_flavour(exe: str) -> str:
    """openmpi | mpich | "" from `mpiexec --version` (Open MPI prints "Open MPI"/"OpenRTE",
    MPICH's Hydra "HYDRA")."""
    path = shutil.which(exe)
    if path is None:
        return ""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    text = out.stdout + out.stderr
    if "Open MPI" in text or "OpenRTE" in text:
        return "openmpi"
    return "mpich" if "HYDRA" in text.upper() else ""


def option_end(argv: list[str]) -> int:
    """Where the launcher's own options end: before a wrapper program (Aurora's
    gpu_tile_compact.sh), else at the end."""
    return next((i for i in range(1, len(argv)) if not argv[i].startswith("-")
                 and not argv[i - 1].startswith("-")), len(argv))


def _site_binds(argv: list[str]) -> bool:
    """Whether the launcher's own options bind (a wrapper's or the program's are not its)."""
    return any(a == f or a.startswith(f + "=") or a.startswith(f + ":") for a in argv[:option_end(argv)]
               for f in SITE_BINDS)


def apply_binding(kind: str, argv: list[str], ranks: int, b: Binding, files: Path | None,
          hosts: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The launcher argv with the run's binding added, and the variables to add to the run's
    environment. `files`: where a rankfile may be written (read by the launcher); `hosts`:
    the run's nodes, its ranks spread over them in blocks (Open MPI's rankfile names them)."""
    argv, env = list(argv), {}
    if b.gpus and b.gpu_env and kind != "srun":
        env[b.gpu_env] = ",".join(b.gpus)
    if kind == "srun":
        return _srun(argv, ranks, b), env
    if kind == "pals":
        # A site's `--cpu-bind depth` binds every run from core 0, and its fixed `list:` (Aurora's
        # 1-8:9-16:...) puts every concurrent run on the same cores: a run holding cores binds to
        # its own list instead (ALCF, "Running Multiple MPI Applications on a node": each mpiexec
        # its own --cpu-bind list). Without cores of its own a site's list stays.
        argv = _without_policy(argv, lists=bool(b.cores))
    if not b.cores or _site_binds(argv):
        if b.cores:
            b.notes.append("binding: the site's launcher template binds by itself")
        return argv, env
    at = option_end(argv)
    if kind == "openmpi" and any(a in OMPI_MAPS or a.split("=")[0] in OMPI_MAPS for a in argv):
        per_node = -(-ranks // max(1, len(hosts or [""])))
        if per_node <= len(b.cores):  # an ordered list takes each CPU once: more ranks than cores are not bound
            argv[at:at] = ["--cpu-list", ",".join(str(c[0]) for c in b.rank_cores(per_node)), "--bind-to",
                           "cpu-list:ordered"]
        else:
            b.notes.append("binding: more ranks than cores, not bound (the run holds every core)")
    elif kind == "openmpi" and files is not None:
        files.mkdir(parents=True, exist_ok=True)
        rankfile = files / f"rankfile.{os.getpid()}"
        nodes = hosts or [socket.gethostname()]
        ppn = -(-ranks // len(nodes))
        lines = (f"rank {r}={nodes[min(r // ppn, len(nodes) - 1)]} slot={core[0]}\n"
                 for r, core in enumerate(b.rank_cores(ranks)))
        rankfile.write_text("".join(lines))
        argv[at:at] = ["--mca", "rmaps_rank_file_physical", "1", "--rankfile", str(rankfile)]
    elif kind == "mpich":
        argv[at:at] = ["-bind-to", "user:" + ",".join("+".join(map(str, c)) for c in b.rank_cores(ranks))]
    elif kind == "pals":
        argv[at:at] = ["--cpu-bind", "list:" + ":".join(",".join(map(str, c)) for c in b.rank_cores(ranks))]
    return argv, env


def _without_policy(argv: list[str], lists: bool = False) -> list[str]:
    """PALS argv without a `--cpu-bind <policy>` (depth, core, numa ...), and with `lists` without
    a `--cpu-bind list:` either: replaced by the run's own list. Only the launcher's own options
    are read (a wrapper's or the program's arguments are theirs)."""
    end = option_end(argv)
    out, skip = [], False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if i >= end:
            out.append(a)
            continue
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if a == "--cpu-bind" and (lists or not nxt.startswith("list:")):
            skip = True
            continue
        if a.startswith("--cpu-bind=") and (lists or not a.split("=", 1)[1].startswith("list:")):
            continue
        out.append(a)
    return out


def _srun(argv: list[str], ranks: int, b: Binding) -> list[str]:
    """Slurm picks the step's cores (--exact); this binds its tasks to them, gives a task whole
    cores, the step the job's memory (shared) and a GPU per task, where the template does not say."""
    has = lambda flag: any(a == flag or a.startswith(flag + "=") for a in argv)  # noqa: E731
    opts = []
    if b.cores and not has("--cpu-bind") and not has("--cpu_bind"):
        opts.append("--cpu-bind=cores")
    threads = len(b.cores[0]) if b.cores else 1
    if threads > 1 and not has("--cpus-per-task") and not has("-c"):
        opts.append(f"--cpus-per-task={threads}")
    if (b.cores or b.gpus) and not any(has(f) for f in ("--mem", "--mem-per-cpu", "--mem-per-gpu")):
        # All of the job's memory, none of it taken from the steps beside it (srun(1), --mem: "a
        # memory limit of zero for a job step will restrict the job step to the amount of memory
        # allocated to the job, but not remove any of the job's memory allocation from being
        # available to other job steps"). A --mem-per-cpu share gave a one-rank step 1/128 of a
        # node: the big one-rank base point of a sweep was killed for memory.
        opts.append("--mem=0")
    gpu_opts = ("--gpus-per-task", "--gpus", "-G", "--gres", "--gpus-per-node", "--tres-per-task")
    if b.gpus and not any(has(f) for f in gpu_opts):
        opts.append("--gpus-per-task=1" if ranks <= len(b.gpus) else f"--gpus={len(b.gpus)}")
    elif b.cores and not any(has(f) for f in gpu_opts):
        # A step that asks no GPUs is given all the job's on its nodes (srun(1), --gres: "By default,
        # a job step is allocated all of the generic resources that have been requested by the job";
        # stepmgr.c _copy_job_tres_to_step): a CPU run in an allocation with GPUs would hold them all
        # and every GPU run wait for it. `none`: "do not copy the job's GRES to the step" (slurm_opt.c)
        opts.append("--gres=none")
    argv[1:1] = opts
    return argv


def of_held(held) -> Binding:
    """The binding of what a run holds (jobs/slots.Held)."""
    return Binding(tuple(tuple(c) for c in held.cores), tuple(held.gpus), held.gpu_env)
