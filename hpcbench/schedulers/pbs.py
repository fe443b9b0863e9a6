"""PBS Pro's allocation as a job inside it sees it (PBS Professional User's Guide, "Environment
Variables": PBS_JOBID, PBS_NODEFILE, one line per MPI process slot; NCPUS, the ncpus of the
first chunk). Steps on a subset of its nodes are PALS mpiexec --hostfile (jobs/launchers.py)."""

from __future__ import annotations

from pathlib import Path

from hpcbench.schedulers.base import AllocationView, register_scheduler
from hpcbench.schedulers.settings import PbsSettings


@register_scheduler("pbs")
class PbsView(AllocationView):
    batch = True
    settings = PbsSettings
    job_id_env = "PBS_JOBID"
    # PALS mpiexec, started from a job's step, reads the allocation from them (its default
    # --hostfile is $PBS_NODEFILE: docs.alcf.anl.gov/polaris/running-jobs, mpiexec options)
    env_prefixes = ("PBS_",)
    # PBS sends SIGKILL kill_delay seconds after SIGTERM, 10 by default (OpenPBS
    # src/server/req_runjob.c): 20 s of grace had the driver killed before its summary.
    stop_grace_s = 7.0
    # qsub has no advance signal (Slurm's --signal): SIGTERM comes at the walltime itself, and the
    # job or driver warns itself before it (OpenPBS src/resmom/mom_main.c: a job over its walltime
    # is killed; kill_delay above)
    warns_itself = True

    def hosts(self) -> list[str]:
        nodefile = self.env.get("PBS_NODEFILE", "")
        if nodefile:
            # in order, each once (a line per MPI process slot); a dict, not a list scan: 10,624
            # nodes (Aurora's widest) took 0.50 s to dedupe that way, 1.7 ms this way (measured here)
            seen = list(dict.fromkeys(Path(nodefile).read_text().split()))
            if seen:
                return seen
        return super().hosts()

    def cores_per_node(self, planned: int) -> int:
        """NCPUS, never more than planned: a node's hardware threads (PBS counts them on ALCF) are
        not cores."""
        got = self.env.get("NCPUS", "")
        return min(planned, int(got)) if got.isdigit() and int(got) > 0 else planned
