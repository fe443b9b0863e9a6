"""Slurm's allocation as a job inside it sees it (sbatch(1), OUTPUT ENVIRONMENT VARIABLES:
SLURM_JOB_ID, SLURM_JOB_NODELIST, SLURM_CPUS_ON_NODE). Steps on a subset of its nodes are
srun's (jobs/launchers.py); a build is an `srun --exact` step of its own (own_step)."""

from __future__ import annotations

import itertools
import re
import subprocess

from hpcbench.schedulers.base import AllocationView, register_scheduler
from hpcbench.schedulers.settings import SlurmSettings

_RANGES = re.compile(r"\[([^\[\]]*)\]")
_RANGE = re.compile(r"(\d+)(?:-(\d+))?")


def expand_hostlist(text: str) -> list[str] | None:
    """The hosts of a Slurm hostlist (SLURM_JOB_NODELIST: `nid[001000-001003,001010],login01`, as
    src/common/hostlist.c writes it: items joined by commas, each a prefix, `[ranges]` and a suffix,
    a range `lo-hi` numbered at lo's width), in order; None where the text is not of that form."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "[") - (ch == "]")
        if depth not in (0, 1):
            return None
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    hosts: list[str] = []
    for item in (x.strip() for x in items):
        if not item:
            continue
        parts = _RANGES.split(item)  # text, ranges, text, ranges, ..., text
        if any(c in "[]" for text in parts[::2] for c in text):
            return None
        choices: list[list[str]] = []
        for k, part in enumerate(parts):
            if k % 2 == 0:
                choices.append([part])
                continue
            numbers = []
            for r in part.split(","):
                m = _RANGE.fullmatch(r.strip())
                if m is None:
                    return None
                lo, hi = m.group(1), m.group(2) or m.group(1)
                if int(hi) < int(lo):
                    return None
                numbers += [f"{n:0{len(lo)}d}" for n in range(int(lo), int(hi) + 1)]
            choices.append(numbers)
        hosts += ["".join(p) for p in itertools.product(*choices)]
    return hosts or None


@register_scheduler("slurm")
class SlurmView(AllocationView):
    batch = True
    settings = SlurmSettings
    env_prefixes = ("SLURM_",)  # srun, started from a job's step, reads the allocation from them
    # srun reads these as its own options (srun(1), INPUT ENVIRONMENT VARIABLES), and sbatch sets
    # them from the allocation's request (sbatch(1), OUTPUT ENVIRONMENT VARIABLES; src/common/env.c
    # set_env_from_opts): a step started with the batch script's would ask the allocation's tasks
    # per node, and all its GPUs a node (SLURM_GPUS_PER_NODE is --gpus-per-node, which Slurm's step
    # manager counts before --gpus-per-task: src/stepmgr/gres_stepmgr.c _step_get_gres_needed), so
    # every GPU run and every build of a packed allocation waited for all the others to end. A step
    # asks its own tasks and GPUs on its srun line (docs/sites.md, slurm-step-gpus).
    step_drops = ("SLURM_NTASKS_PER_NODE", "SLURM_GPUS", "SLURM_GPUS_PER_NODE", "SLURM_GPUS_PER_SOCKET",
                  "SLURM_GPUS_PER_TASK", "SLURM_NTASKS_PER_GPU")
    job_id_env = "SLURM_JOB_ID"

    def hosts(self) -> list[str]:
        """The nodes of SLURM_JOB_NODELIST, read here (no scontrol: one was started per driver, and
        where it failed the allocation was this node alone), else as `scontrol show hostnames` says."""
        nodelist = self.env.get("SLURM_JOB_NODELIST", "") or self.env.get("SLURM_NODELIST", "")
        if nodelist:
            hosts = expand_hostlist(nodelist)
            if hosts:
                return hosts
            p = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True,
                               timeout=60)
            if p.returncode == 0 and p.stdout.split():
                return p.stdout.split()
        return super().hosts()

    def cores_per_node(self, planned: int) -> int:
        got = self.env.get("SLURM_CPUS_ON_NODE", "")
        return min(planned, int(got)) if got.isdigit() and int(got) > 0 else planned

    def own_step(self, cpus: int, host: str) -> list[str]:
        """`srun --exact` on `cpus` CPUs of `host` (srun -c's count: the launcher's {depth} a core).
        Slurm picks the cores of every --exact step of the allocation, so a build run in the batch
        step and pinned to a core slot's CPUs could
        share a core with a timed step Slurm placed there; as a step, Slurm gives it CPUs no other
        step holds (sacct names it hpcbench-build). `--mem=0`: all of the job's memory, none of it
        taken from the other steps (srun(1), --mem). `--gres=none`: none of the job's GPUs, which a
        step asking none is otherwise given all of (srun(1), --gres; docs/sites.md, slurm-step-gpus):
        in a GPU allocation every build held every GPU, and waited for every GPU run to end."""
        return ["srun", "--exact", "-N", "1", f"--nodelist={host}", "-n", "1", "-c", str(max(1, cpus)),
                "--cpu-bind=cores", "--mem=0", "--gres=none", "--job-name=hpcbench-build", "--quiet"]
