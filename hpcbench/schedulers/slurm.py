"""Slurm's allocation as a job inside it sees it (sbatch(1), OUTPUT ENVIRONMENT VARIABLES:
SLURM_JOB_ID, SLURM_JOB_NODELIST, SLURM_CPUS_ON_NODE, SLURM_MEM_PER_CPU / SLURM_MEM_PER_NODE).
Steps on a subset of its nodes are srun's (jobs/launchers.py)."""

from __future__ import annotations

import subprocess

from hpcbench.schedulers.base import AllocationView, register_scheduler
from hpcbench.schedulers.settings import SlurmSettings


@register_scheduler("slurm")
class SlurmView(AllocationView):
    batch = True
    settings = SlurmSettings
    env_prefixes = ("SLURM_",)  # srun, started from a job's step, reads the allocation from them
    step_drops = ("SLURM_NTASKS_PER_NODE",)
    job_id_env = "SLURM_JOB_ID"

    def hosts(self) -> list[str]:
        nodelist = self.env.get("SLURM_JOB_NODELIST", "")
        if nodelist:
            p = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True,
                               timeout=60)
            if p.returncode == 0 and p.stdout.split():
                return p.stdout.split()
        return super().hosts()

    def cores_per_node(self, planned: int) -> int:
        got = self.env.get("SLURM_CPUS_ON_NODE", "")
        return min(planned, int(got)) if got.isdigit() and int(got) > 0 else planned

    def mem_per_cpu_mb(self) -> int:
        """SLURM_MEM_PER_CPU, or SLURM_MEM_PER_NODE over SLURM_CPUS_ON_NODE (a step asking no
        memory is given all of the job's, and the next step waits for it: jobs/binding.py)."""
        per_cpu = self.env.get("SLURM_MEM_PER_CPU", "")
        if per_cpu.isdigit():
            return int(per_cpu)
        node, cpus = self.env.get("SLURM_MEM_PER_NODE", ""), self.env.get("SLURM_CPUS_ON_NODE", "")
        if node.isdigit() and cpus.isdigit() and int(cpus) > 0:
            return int(node) // int(cpus)
        return 0
