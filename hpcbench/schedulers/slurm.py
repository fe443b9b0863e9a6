"""Slurm's allocation as a job inside it sees it (sbatch(1), OUTPUT ENVIRONMENT VARIABLES:
SLURM_JOB_ID, SLURM_JOB_NODELIST, SLURM_CPUS_ON_NODE). Steps on a subset of its nodes are
srun's (jobs/launchers.py); a build is an `srun --exact` step of its own (own_step)."""

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

    def own_step(self, cpus: int, host: str) -> list[str]:
        """`srun --exact` on `cpus` CPUs of `host` (srun -c's count: the launcher's {depth} a core).
        Slurm picks the cores of every --exact step of the allocation, so a build run in the batch
        step and pinned to a core slot's CPUs could
        share a core with a timed step Slurm placed there; as a step, Slurm gives it CPUs no other
        step holds (sacct names it hpcbench-build). `--mem=0`: all of the job's memory, none of it
        taken from the other steps (srun(1), --mem)."""
        return ["srun", "--exact", "-N", "1", f"--nodelist={host}", "-n", "1", "-c", str(max(1, cpus)),
                "--cpu-bind=cores", "--mem=0", "--job-name=hpcbench-build", "--quiet"]
