"""The cores and GPUs of a node as runs are given them: one whole core (all its hardware
threads) or one GPU at a time, each to one run only (jobs/slots.py hands them out).

A site file declares them per partition (hpcbench/site.py: `cores_per_node`,
`threads_per_core`, `reserved_cores`, `gpus_per_node`, `gpu_visibility`, `gpu_devices`,
`gpu_cores`); the local site finds them on this machine (`this_machine`): the CPUs this
process may run on (its affinity: a container's or a cgroup's cpuset) grouped into cores by
the kernel's topology (/sys/devices/system/cpu/cpuN/topology/thread_siblings_list).

Core k of a declared node holds CPUs k, k + C, k + 2C, ... (C = cores per node, one per
hardware thread): how Linux numbers the hardware threads of x86 nodes (all first threads,
then all second threads), which is what `lscpu -e` shows on the four named machines' CPU
nodes. A site whose nodes differ lists no threads (threads_per_core 1) and binds to the
first thread of each core only."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import Field

from hpcbench.jobs.records import Model
from hpcbench.jobs.slots import LAYOUT_FILE

# The variable a GPU runtime reads to choose the devices a process sees: NVIDIA CUDA, AMD ROCm
# (ROCR_VISIBLE_DEVICES; HIP_VISIBLE_DEVICES on top of it), Intel Level Zero (ZE_AFFINITY_MASK,
# device or device.tile).
GpuVisibility = Literal["", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"]


class NodeLayout(Model):
    """What one node offers to runs, in the order they are handed out."""

    cores: list[list[int]] = Field(min_length=1)  # per usable core, its CPU ids (hardware threads)
    gpus: list[str] = []  # the usable GPUs, as `gpu_env` names them
    gpu_env: GpuVisibility = ""
    gpu_cores: list[list[int]] = []  # per GPU (same order), the indices into `cores` nearest it

    def cpus(self, cores: Iterable[int]) -> list[int]:
        """The CPU ids of the given core indices (every hardware thread of each)."""
        return sorted(c for k in cores for c in self.cores[k])

    def save(self, folder: Path) -> None:
        from hpcbench.jobs.records import write_atomic

        write_atomic(Path(folder) / LAYOUT_FILE, self.model_dump_json())

    def machine_slots(self) -> Path:
        """This user's core slots for this layout on this machine, shared by every campaign
        (and every test worker) that runs on it at the same time: two `hpcbench run` side by side
        take turns on the cores instead of oversubscribing them. The layout's digest is in the
        name: a site that offers other cores (`cores:`, `reserved_cores:`) has slots of its own."""
        import hashlib
        import tempfile

        digest = hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:12]
        base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
        return Path(base) / f"hpcbench-{os.getuid()}" / f"core-slots-{digest}"

    @classmethod
    def load(cls, folder: Path, count: int) -> NodeLayout:
        """The layout an executor wrote beside its slots; without one, `count` cores of one
        thread numbered from 0 (binding then names CPUs 0..count-1)."""
        path = Path(folder) / LAYOUT_FILE
        if path.is_file():
            return cls.model_validate_json(path.read_text())
        return cls(cores=[[i] for i in range(max(1, count))])


def parse_cpu_list(text: str) -> list[int]:
    """"0-3,8,10-11" (the kernel's list format: Cpus_allowed_list, cpuset.cpus) -> [0,1,2,3,8,10,11]."""
    out: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ValueError(f"not a CPU list: {text!r}")
        out += range(int(lo), int(hi or lo) + 1)
    return sorted(set(out))


def cpu_list(cpus: Iterable[int]) -> str:
    """[0,1,2,3,8] -> "0-3,8" (the kernel's format, as Cpus_allowed_list prints it)."""
    ids = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


def _siblings(cpu: int, sysfs: Path) -> list[int]:
    try:
        return parse_cpu_list((sysfs / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text())
    except (OSError, ValueError):
        return [cpu]


def this_machine(reserved: Iterable[int] = (), limit: int = 0, gpus: Iterable[str] = (), gpu_env: GpuVisibility = "",
                 sysfs: Path = Path("/sys/devices/system/cpu")) -> NodeLayout:
    """The cores of this machine this process may use, in CPU order, without the `reserved`
    core indices and at most `limit` of them (0: all): a core is listed with those of its
    hardware threads that are allowed."""
    allowed = sorted(os.sched_getaffinity(0))
    cores: list[list[int]] = []
    seen: set[int] = set()
    for cpu in allowed:
        if cpu in seen:
            continue
        threads = [c for c in _siblings(cpu, sysfs) if c in allowed] or [cpu]
        seen.update(threads)
        cores.append(threads)
    skip = set(reserved)
    usable = [c for k, c in enumerate(cores) if k not in skip] or cores[:1]
    if limit > 0:
        usable = usable[:limit]
    gpu_list = list(gpus)
    return NodeLayout(cores=usable, gpus=gpu_list, gpu_env=gpu_env if gpu_list else "")


def declared(cores_per_node: int, threads_per_core: int = 1, reserved: Iterable[int] = (),
             gpus: Iterable[str] = (), gpu_env: GpuVisibility = "", gpu_cores: Iterable[Iterable[int]] = ()
             ) -> NodeLayout:
    """A site's node as its file declares it (see the module's note on thread numbering)."""
    skip = set(reserved)
    keep = [k for k in range(max(1, cores_per_node)) if k not in skip]
    index = {k: i for i, k in enumerate(keep)}
    cores = [[k + t * cores_per_node for t in range(max(1, threads_per_core))] for k in keep]
    gpu_list = list(gpus)
    near = [[index[k] for k in ks if k in index] for ks in gpu_cores]
    return NodeLayout(cores=cores, gpus=gpu_list, gpu_env=gpu_env if gpu_list else "",
                      gpu_cores=near if len(near) == len(gpu_list) else [])


def whole_node_findings(ncpus: str, threads: int, layout: NodeLayout, affinity: Iterable[int]) -> dict[str, str]:
    """Where the node a PBS job runs on disagrees with the site's whole node (docs/sites.md,
    pbs-whole-node-cores and doctor-ncpus; the one coding of the rule, for the packed allocation's
    driver, jobs/pack.node_warnings, and for `doctor --site`, hpcbench/doctor_machine.ncpus_check):
    "ncpus" where the MoM's NCPUS (the first chunk's ncpus, OpenPBS src/resmom/start_exec.c; one
    where the select asks none) is not the node's `threads` hardware threads (0: not declared);
    "cpuset" where the job's CPUs (`affinity`: the MoM's cpuset) lack CPUs that runs are bound to
    (the layout's). The driver warns of both and keeps the layout's cores; doctor warns of the first
    and fails on the second (runs bound there fail)."""
    out = {}
    if threads and ncpus != str(threads):
        out["ncpus"] = (f"NCPUS is {ncpus or 'unset'} where a whole node has {threads} hardware threads: the "
                        f"MoM's count is not the node's (docs/sites.md, pbs-whole-node-cores); runs use the "
                        f"site's {len(layout.cores)} cores a node")
    missing = sorted(set(layout.cpus(range(len(layout.cores)))) - set(affinity))
    if missing:
        out["cpuset"] = (f"this node's CPU affinity lacks {len(missing)} of the site's CPUs "
                         f"({cpu_list(missing)[:60]}): the job's cpuset is smaller than the node the site "
                         "declares; runs bound there will fail")
    return out

