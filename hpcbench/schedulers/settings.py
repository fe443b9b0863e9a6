"""The settings every batch scheduler's executor reads from a site file's `batch:` (the common
part of each scheduler's settings model; hpcbench/schedulers/base.py), and the models of the
in-tree schedulers that have settings of their own (PBS Pro, Slurm): a site file giving one
scheduler's field to another is refused, naming the file and the field."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field


class BatchConfig(BaseModel):
    """How jobs go to a batch scheduler: what every executor reads. A scheduler with settings of its
    own subclasses it (its view's `settings`, hpcbench/schedulers/base.py)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    account_required: bool = True  # real machines charge an allocation: refuse to submit without one
    max_array_size: int = Field(1000, ge=1)  # tasks per array (Slurm MaxArraySize - 1, PBS max_array_size)
    array_parallelism: int = Field(64, ge=1)  # tasks of one array running at once
    walltime_min: int = Field(0, ge=0)  # 0: estimated from the problems' time limits (capped by the partition's)
    retries: int = Field(2, ge=0, le=100)  # resubmissions after a node failure, preemption or boot failure
    poll_s: float = Field(15.0, gt=0)  # between scheduler polls in `wait`
    max_wait_h: float = Field(72.0, gt=0)  # `wait` gives up (and says so) after this long
    python: str = ""  # Python on the compute nodes ("": the driver's own, on the shared file system)
    directives: list[str] = []  # extra scheduler options for every job
    login_node_mpi: bool = False  # `doctor` may start a tiny MPI program where it runs
    # Steps (builds and runs: each job of a packed allocation runs one at a time) one allocation
    # runs at once: every srun asks the shared controller, and OLCF advises no more than 100.
    max_steps: int = Field(100, ge=1)
    # Scheduler commands (executors/schedcmd.py): a query (sacct, squeue, qstat, scancel ...) or a
    # submission (sbatch, qsub) not answered within its timeout is tried again `command_tries` times
    # in all with backoff (a submission only after a connection failure), then reported unreachable.
    command_timeout_s: float = Field(30.0, ge=1, le=3600)
    submit_timeout_s: float = Field(120.0, ge=1, le=3600)
    command_tries: int = Field(3, ge=1, le=20)


class PbsSettings(BatchConfig):
    """PBS Pro's own fields of `batch:`."""

    filesystems: str = ""  # -l filesystems=... (ALCF: home:eagle)
    select_extra: str = ""  # appended to select=N (ALCF: system=polaris)
    # nodes are not shared (ALCF): a chunk asks the node's every hardware thread (ncpus) and no ngpus,
    # and the packed driver takes a node's cores from the site, never from NCPUS
    whole_nodes: bool = False


class SlurmSettings(BatchConfig):
    """Slurm's own fields of `batch:`."""

    signal_margin_s: int = Field(60, ge=0)  # USR2 this long before the walltime, time to write the record
    # sbatch --wckey, only where the site configures one (submitit's default `--wckey=submitit` is
    # refused where wckeys are enforced, TrackWCKey with AccountingStorageEnforce=wckeys)
    wckey: str = ""


S = TypeVar("S", bound=BatchConfig)


def own_settings(batch: BatchConfig, model: type[S]) -> S:
    """A scheduler's settings, typed as its own model (the site loader validated them with it)."""
    if isinstance(batch, model):
        return batch
    return model.model_validate(batch.model_dump(exclude_unset=True))
