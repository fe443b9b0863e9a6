"""Site configs: one YAML file per machine in site-configs/, validated here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hpcbench.errors import ConfigError, format_validation_error
from hpcbench.executors.registry import EXECUTORS
from hpcbench.jobs.cores import GpuVisibility, NodeLayout, declared, this_machine
from hpcbench.jobs.records import Isolation, IsolationLevel, Launcher, Limits


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Partition(Strict):
    """A Slurm partition or a PBS queue (with the node type a job lands on)."""

    name: str
    # What the scheduler calls it (--partition / -q); "" asks for none (Perlmutter: QOS and
    # constraint pick the nodes). Default: the name.
    submit_as: str | None = None
    account: str = ""  # never written in a shared file: comes from --account/HPCBENCH_ACCOUNT
    qos: str = ""
    gpus_per_node: int = Field(0, ge=0)
    cores_per_node: int = Field(0, ge=0)  # 0: not declared
    max_nodes: int = Field(0, ge=0)  # nodes one job may have (0: not declared); wider sweep points are refused
    constraint: str = ""  # Slurm --constraint (Perlmutter: cpu | gpu)
    max_walltime_min: int = Field(60, ge=1)
    directives: list[str] = []  # extra options for jobs on this partition only
    # The node as runs are given it (jobs/cores.py; docs/internals.md "Cores and binding"): each run
    # gets whole cores (all their hardware threads) and GPUs of its own, never shared with another run.
    threads_per_core: int = Field(1, ge=1, le=8)  # hardware threads per core (PBS on ALCF counts them in ncpus)
    reserved_cores: list[Annotated[int, Field(ge=0)]] = []  # cores runs never get (OS, daemons, core spec.)
    gpu_visibility: GpuVisibility = ""  # the variable that gives a run its GPUs (CUDA_VISIBLE_DEVICES ...)
    gpu_devices: list[str] = []  # the node's GPUs as that variable names them ([]: 0 .. gpus_per_node-1)
    gpu_cores: list[list[Annotated[int, Field(ge=0)]]] = []  # per GPU (gpu_devices order), the cores nearest it

    @property
    def queue(self) -> str:
        return self.name if self.submit_as is None else self.submit_as

    @model_validator(mode="after")
    def _node(self) -> Partition:
        if self.cores_per_node and any(k >= self.cores_per_node for k in self.reserved_cores):
            raise ValueError(f"reserved_cores: core indices must be below cores_per_node ({self.cores_per_node})")
        if self.cores_per_node and len(set(self.reserved_cores)) >= self.cores_per_node:
            raise ValueError("reserved_cores: leaves no core for the runs")
        if self.gpu_devices and len(self.gpu_devices) != self.gpus_per_node:
            raise ValueError(f"gpu_devices: {len(self.gpu_devices)} ids for gpus_per_node {self.gpus_per_node}")
        if self.gpu_cores and len(self.gpu_cores) != self.gpus_per_node:
            raise ValueError(f"gpu_cores: one list of cores per GPU ({self.gpus_per_node}), got {len(self.gpu_cores)}")
        return self

    def layout(self, cores: int = 0) -> NodeLayout:
        """The cores and GPUs of one of its nodes, as runs are given them (`cores`: what the
        scheduler gave, where the partition does not declare cores_per_node)."""
        gpus = self.gpu_devices or [str(i) for i in range(self.gpus_per_node)]
        return declared(self.cores_per_node or cores or 1, self.threads_per_core, self.reserved_cores, gpus,
                        self.gpu_visibility, self.gpu_cores)


class BatchConfig(Strict):
    """How jobs go to a batch scheduler (Slurm, PBS Pro)."""

    account_required: bool = True  # real machines charge an allocation: refuse to submit without one
    max_array_size: int = Field(1000, ge=1)  # tasks per array (Slurm MaxArraySize - 1, PBS max_array_size)
    array_parallelism: int = Field(64, ge=1)  # tasks of one array running at once
    walltime_min: int = Field(0, ge=0)  # 0: estimated from the problems' time limits (capped by the partition's)
    signal_margin_s: int = Field(60, ge=0)  # Slurm: USR2 this long before the walltime, time to write the record
    retries: int = Field(2, ge=0, le=100)  # resubmissions after a node failure, preemption or boot failure
    poll_s: float = Field(15.0, gt=0)  # between scheduler polls in `wait`
    max_wait_h: float = Field(72.0, gt=0)  # `wait` gives up (and says so) after this long
    python: str = ""  # Python on the compute nodes ("": the driver's own, on the shared file system)
    directives: list[str] = []  # extra scheduler options for every job
    filesystems: str = ""  # PBS Pro -l filesystems=... (ALCF: home:eagle)
    select_extra: str = ""  # PBS Pro: appended to select=N (ALCF: system=polaris)
    whole_nodes: bool = False  # PBS Pro: nodes are not shared (ALCF), so no ncpus/ngpus in select
    login_node_mpi: bool = False  # `doctor` may start a tiny MPI program where it runs
    # Scheduler commands (executors/schedcmd.py): a query (sacct, squeue, qstat, scancel ...) or a
    # submission (sbatch, qsub) not answered within its timeout is tried again `command_tries` times
    # in all with backoff (a submission only after a connection failure), then reported unreachable.
    command_timeout_s: float = Field(30.0, ge=1, le=3600)
    submit_timeout_s: float = Field(120.0, ge=1, le=3600)
    command_tries: int = Field(3, ge=1, le=20)


class VariantConfig(Strict):
    """A PETSc build. `petsc_dir: auto` means PETSC_DIR from the environment or
    the one scripts/setup.sh built into the venv."""

    name: str
    petsc_dir: str = "auto"
    petsc_arch: str = ""
    runtime_options: list[str] = []
    partition: str = ""
    provides: list[str] = []  # extra features beyond what petscconf.h says (e.g. gpu)
    setup: list[str] = []  # shell lines for jobs of this variant (module load cudatoolkit ...)
    launcher: Launcher | None = None  # overrides the site's (GPU binding options)
    claims: list[str] = []  # configure options this build must show (doctor checks --with-cuda ...)


class SiteConfig(Strict):
    name: str
    description: str = ""
    scheduler: str = "local"  # an executor's name: local, slurm, pbs, or one an installed package adds
    partitions: list[Partition] = []
    setup: list[str] = []  # shell lines run before each job (modules, env)
    launcher: Launcher = Launcher()
    variants: list[VariantConfig] = Field(default_factory=lambda: [VariantConfig(name="cpu")])
    limits: Limits = Limits()
    storage_root: str = "./campaigns"
    # Local site: the cores runs may use (0: every core this process may run on), without the
    # reserved ones (core indices in CPU order); the GPUs of this machine and their variable.
    cores: int = Field(0, ge=0)
    reserved_cores: list[Annotated[int, Field(ge=0)]] = []
    gpus: list[str] = []  # device ids as gpu_visibility names them
    gpu_visibility: GpuVisibility = ""
    timing_repeats: int = Field(3, ge=1, le=100)
    # A bigger performance case on this machine than problem.json's (problem id -> its args):
    # the reference should take about 0.5 to 2 s there too (docs/problems.md, "Performance").
    performance_args: dict[str, list[str]] = {}
    valgrind: bool = True
    batch: BatchConfig = BatchConfig()
    # The sandbox around every build and run (docs/security.md): bwrap | apptainer | none.
    # `none` runs untrusted programs with the user's rights; reports warn about it.
    isolation: IsolationLevel = "bwrap"
    isolation_binds: list[str] = []  # read-only paths the toolchain needs besides /usr and PETSc
    isolation_image: str = ""  # apptainer: the image the steps run in
    # Nodes are allocated whole (ALCF, OLCF, NERSC regular QOS): a campaign's jobs of one variant
    # then go to one packed allocation by default (`submit --no-pack` for one job per array task).
    exclusive_nodes: bool = False

    @field_validator("scheduler")
    @classmethod
    def _scheduler_known(cls, name: str) -> str:
        if EXECUTORS.get(name) is None:
            raise ValueError(f"{name!r} is not a known scheduler (known: {', '.join(EXECUTORS.names())}; a package "
                             "adds one through the hpcbench.executors entry-point group)")
        return name

    def is_batch(self) -> bool:
        """Jobs go to a batch scheduler (its executor says so), not this machine."""
        executor = EXECUTORS.get(self.scheduler)
        return bool(getattr(executor, "batch", False))

    @model_validator(mode="after")
    def _partitions_known(self) -> SiteConfig:
        self.storage_root = os.path.expandvars(os.path.expanduser(self.storage_root))  # $SCRATCH, ${USER}
        names = [p.name for p in self.partitions]
        for what, seen in (("variants", [v.name for v in self.variants]), ("partitions", names)):
            twice = sorted({n for n in seen if seen.count(n) > 1})
            if twice:
                raise ValueError(f"{what}: {', '.join(map(repr, twice))} named twice; each name picks one")
        if not self.variants:
            raise ValueError("variants: empty; a site needs at least one PETSc variant (name, petsc_dir)")
        for b in self.isolation_binds:
            if not os.path.isabs(os.path.expandvars(b)):
                raise ValueError(f"isolation_binds: {b!r} is not an absolute path")
        for i, v in enumerate(self.variants):
            if v.partition and v.partition not in names:
                raise ValueError(f"variants.{i}.partition: {v.partition!r} is not one of the site's partitions "
                                 f"({', '.join(names) or 'none defined'})")
        if self.isolation == "apptainer" and not self.isolation_image:
            raise ValueError("isolation_image: isolation apptainer needs the image the steps run in")
        if self.is_batch() and not self.partitions:
            raise ValueError(f"partitions: a {self.scheduler} site needs at least one partition or queue")
        return self

    def sandbox(self) -> Isolation:
        """The isolation of this site's steps; on a batch scheduler each rank is wrapped."""
        return Isolation(level=self.isolation, per_rank=self.is_batch(),
                         binds=self.isolation_binds, image=self.isolation_image)

    def variant(self, name: str) -> VariantConfig:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)

    def partition_for(self, variant: str) -> Partition | None:
        """The partition a variant's jobs go to (the first one by default)."""
        want = self.variant(variant).partition if any(v.name == variant for v in self.variants) else ""
        for p in self.partitions:
            if p.name == want or not want:
                return p
        return None

    def total_cores(self) -> int:
        """The cores a local campaign is planned for: `cores`, else those this process may use."""
        return self.cores or len(self.local_layout().cores)

    def local_layout(self) -> NodeLayout:
        """This machine's cores and GPUs as the local executor hands them out."""
        return this_machine(self.reserved_cores, self.cores, self.gpus, self.gpu_visibility)

    def node_layout(self, variant: str, cores: int = 0) -> NodeLayout:
        """The node a variant's runs are given cores (and GPUs) of: its partition's (`cores`: what
        the scheduler gave where the partition does not say), or this machine."""
        part = self.partition_for(variant) if self.is_batch() else None
        return part.layout(cores) if part is not None else self.local_layout()


def site_configs_dir() -> Path:
    from hpcbench.resources import data_path

    return data_path("site_configs")


def list_sites() -> list[str]:
    return sorted(p.stem for p in site_configs_dir().glob("*.yaml"))


def load_site(name_or_path: str) -> SiteConfig:
    """A bundled site by name, or any YAML file by path."""
    p = Path(name_or_path)
    path = p if (p.suffix in (".yaml", ".yml") or p.is_file()) else site_configs_dir() / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ConfigError(path, None, f"no such site config; bundled sites: {', '.join(list_sites())}")
    try:
        raw = yaml.safe_load(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ConfigError(path, None, f"not UTF-8 text (byte {e.start}: {e.reason})") from None
    except yaml.YAMLError as e:
        raise ConfigError(path, None, f"malformed YAML: {e}") from None
    if not isinstance(raw, dict):
        raise ConfigError(path, None, "must be a YAML mapping")
    try:
        return SiteConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(path, *format_validation_error(e)) from None
