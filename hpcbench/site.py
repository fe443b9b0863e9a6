"""Site configs: one YAML file per machine in site-configs/, validated here."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import (
    BaseModel,
    Field,
    SerializeAsAny,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from hpcbench.errors import ConfigError, format_validation_error
from hpcbench.jobs.cores import GpuVisibility, NodeLayout, declared, this_machine
from hpcbench.jobs.launchers import LAUNCHERS
from hpcbench.jobs.records import Isolation, IsolationLevel, Launcher, Limits
from hpcbench.schedulers.base import SCHEDULERS, settings_model, view_class
from hpcbench.schedulers.settings import BatchConfig
from hpcbench.strict import Strict


class WalltimeBin(Strict):
    """The longest walltime a queue gives a job of at most `max_nodes` nodes (Frontier's bins,
    the execution queues behind ALCF's `prod`)."""

    max_nodes: int = Field(ge=1)
    max_walltime_min: int = Field(ge=1)


class Partition(Strict):
    """A Slurm partition or a PBS queue (with the node type a job lands on). The queue rules
    (nodes, walltime by node count, jobs per user) come from the site's documentation and are
    cited in docs/sites.md; the planner (executors/queues.py) picks a queue that accepts each
    allocation and refuses, naming the rule, where none does."""

    name: str
    # What the scheduler calls it (--partition / -q); "" asks for none (Perlmutter: QOS and
    # constraint pick the nodes). Default: the name.
    submit_as: str | None = None
    account: str = ""  # never written in a shared file: comes from --account/HPCBENCH_ACCOUNT
    qos: str = ""
    gpus_per_node: int = Field(0, ge=0)
    cores_per_node: int = Field(0, ge=0)  # 0: not declared
    max_nodes: int = Field(0, ge=0)  # nodes one job may have (0: not declared); wider sweep points are refused
    min_nodes: int = Field(1, ge=1)  # fewer is refused by the queue (ALCF prod: 10)
    constraint: str = ""  # Slurm --constraint (Perlmutter: cpu | gpu)
    max_walltime_min: int = Field(60, ge=1)
    walltime_bins: list[WalltimeBin] = []  # walltime cap by node count (the first bin holding the job)
    max_running_per_user: int = Field(0, ge=0)  # jobs one user may have running at once (0: not declared)
    max_queued_per_user: int = Field(0, ge=0)  # jobs one user may have in any state (0: not declared)
    # What a node offers (docs/sites.md): the cores jobs may use (cores_per_node, after the
    # reserved ones), the cores kept for the system, hardware threads per core, and GPUs. The node
    # as runs are given it (jobs/cores.py; docs/internals.md "Cores and binding"): each run gets
    # whole cores (all their hardware threads) and GPUs of its own, never shared with another run.
    reserved_cores: list[Annotated[int, Field(ge=0)]] = []  # physical core ids jobs never get (Aurora: 0, 52)
    threads_per_core: int = Field(1, ge=1, le=8)  # hardware threads per core (PBS on ALCF counts them in ncpus)
    tiles_per_gpu: int = Field(1, ge=1)  # ranks a GPU takes, one per tile (Aurora's PVC: 2)
    directives: list[str] = []  # extra options for jobs on this partition only
    gpu_visibility: GpuVisibility = ""  # the variable that gives a run its GPUs (CUDA_VISIBLE_DEVICES ...)
    # The node's GPU slots as that variable names them ([]: 0 .. gpus_per_node-1, and with tiles
    # each GPU's tiles "g.t", the ZE_AFFINITY_MASK form): a slot is what one rank takes, a tile
    # where a GPU has tiles (docs/sites.md, aurora-tiles)
    gpu_devices: list[str] = []
    gpu_cores: list[list[Annotated[int, Field(ge=0)]]] = []  # per GPU slot (gpu_devices order), the cores nearest it
    launcher: Launcher | None = None  # this queue's nodes' launcher (a variant's own still wins)

    def walltime_cap(self, nodes: int) -> int:
        """The longest walltime (minutes) this queue gives a job of `nodes` nodes."""
        for b in sorted(self.walltime_bins, key=lambda b: b.max_nodes):
            if nodes <= b.max_nodes:
                return min(b.max_walltime_min, self.max_walltime_min)
        return self.max_walltime_min

    def refuses(self, nodes: int) -> str:
        """Why this queue refuses a job of `nodes` nodes ("" if it takes it)."""
        if nodes < self.min_nodes:
            return f"queue {self.name} takes at least {self.min_nodes} nodes"
        if self.max_nodes and nodes > self.max_nodes:
            return f"queue {self.name} takes at most {self.max_nodes} nodes"
        return ""

    @property
    def user_job_limit(self) -> int:
        """Allocations one user can have in this queue at once (0: not declared)."""
        limits = [n for n in (self.max_running_per_user, self.max_queued_per_user) if n]
        return min(limits) if limits else 0

    @property
    def gpu_ranks_per_node(self) -> int:
        """Ranks a node holds for a GPU run: one per GPU (or tile)."""
        return self.gpus_per_node * self.tiles_per_gpu

    @property
    def hardware_threads(self) -> int:
        """A node's hardware threads, reserved cores included (0: cores not declared): what ALCF's
        PBS counts as a node's `ncpus` (docs.alcf.anl.gov/running-jobs, "ncpus ... equates to a
        hardware thread": 64 on Polaris, 208 on Aurora)."""
        return (self.cores_per_node + len(self.reserved_cores)) * self.threads_per_core if self.cores_per_node else 0

    @property
    def queue(self) -> str:
        return self.name if self.submit_as is None else self.submit_as

    @model_validator(mode="after")
    def _node(self) -> Partition:
        if len(set(self.reserved_cores)) != len(self.reserved_cores):
            raise ValueError("reserved_cores: a core named twice")
        physical = self.cores_per_node + len(self.reserved_cores)  # cores_per_node counts the usable ones
        if self.cores_per_node and any(k >= physical for k in self.reserved_cores):
            raise ValueError(f"reserved_cores: core indices must be below the node's {physical} cores "
                             f"(cores_per_node {self.cores_per_node} usable + {len(self.reserved_cores)} reserved)")
        slots = self.gpu_ranks_per_node
        if self.gpu_devices and len(self.gpu_devices) != slots:
            raise ValueError(f"gpu_devices: {len(self.gpu_devices)} ids for {slots} GPU slots (gpus_per_node "
                             f"{self.gpus_per_node} x tiles_per_gpu {self.tiles_per_gpu})")
        if self.gpu_cores and len(self.gpu_cores) != slots:
            raise ValueError(f"gpu_cores: one list of cores per GPU slot ({slots}: gpus_per_node {self.gpus_per_node} "
                             f"x tiles_per_gpu {self.tiles_per_gpu}), got {len(self.gpu_cores)}")
        return self

    def gpu_slots(self) -> list[str]:
        """The node's GPU slots as its `gpu_visibility` variable names them: one per tile where a GPU
        has tiles ("0.0", "0.1", "1.0", ...: Level Zero's device.tile in ZE_AFFINITY_MASK, COMPOSITE
        hierarchy), so concurrent runs of a packed allocation each get tiles of their own."""
        if self.gpu_devices:
            return list(self.gpu_devices)
        gpus = [str(i) for i in range(self.gpus_per_node)]
        return gpus if self.tiles_per_gpu == 1 else [f"{g}.{t}" for g in gpus for t in range(self.tiles_per_gpu)]

    def layout(self, cores: int = 0) -> NodeLayout:
        """The cores and GPUs of one of its nodes, as runs are given them (`cores`: what the
        scheduler gave, where the partition does not declare cores_per_node)."""
        gpus = self.gpu_slots()
        physical = (self.cores_per_node + len(self.reserved_cores)) if self.cores_per_node else (cores or 1)
        return declared(physical, self.threads_per_core, self.reserved_cores, gpus, self.gpu_visibility,
                        self.gpu_cores)


class VariantConfig(Strict):
    """A PETSc build. `petsc_dir: auto` means PETSC_DIR from the environment or
    the one scripts/setup.sh built into the venv."""

    name: str
    petsc_dir: str = "auto"
    petsc_arch: str = ""
    runtime_options: list[str] = []
    partition: str = ""
    provides: list[str] = []  # extra features beyond what petscconf.h says (e.g. gpu)
    setup: list[str] = []  # shell lines for jobs of this variant, after the site's
    modules: list[str] = []  # `module ARGS` lines for this variant (load craype-accel-nvidia80 ...)
    env: dict[str, str] = {}  # exported for this variant's jobs (GPU-aware MPI only on GPU variants)
    launcher: Launcher | None = None  # overrides the site's (GPU binding options)
    claims: list[str] = []  # configure options this build must show (doctor checks --with-cuda ...)

    def is_gpu(self) -> bool:
        """A GPU build: it says so (`provides: [gpu]`) or claims a GPU back-end."""
        return bool(set(self.provides) & GPU_FEATURES or any(f in c for c in self.claims for f in GPU_FEATURES))


GPU_FEATURES = frozenset({"cuda", "hip", "sycl", "kokkos", "gpu"})
# Variables that switch on Cray MPICH's GPU transport layer: MPI_Init aborts ("GTL library is not
# linked") in a program built without it, so only GPU variants may set them (docs/sites.md, gtl).
GPU_AWARE_MPI_ENV = ("MPICH_GPU_SUPPORT_ENABLED",)
GPU_ONLY_MODULES = ("craype-accel-",)


class SiteConfig(Strict):
    name: str
    description: str = ""
    scheduler: str = "local"  # an executor's name: local, slurm, pbs, or one an installed package adds
    partitions: list[Partition] = []
    setup: list[str] = []  # shell lines run before each job (modules, env)
    modules: list[str] = []  # `module ARGS` lines for every variant (after `setup`)
    env: dict[str, str] = {}  # exported for every variant
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
    # The options problem.json's `performance.params` draws are drawn here too (plan/perf_draw.py:
    # the campaign's value replaces the one given, or is appended).
    performance_args: dict[str, list[str]] = {}
    valgrind: bool = True
    # -malloc_debug in the instrumented run: PETSc validates its whole heap at every allocation
    # and free, which finds a corrupted block early (also one never freed). Off, the tracing
    # allocator (on through -malloc_dump) still checks each block's guards when it is freed and
    # still dumps leaks; the run is several times faster (darcy-dmplex -n 16: 0.58 -> 0.11 s).
    malloc_debug: bool = True
    # Built binaries reused when the sources, PETSc and flags are the same (jobs/build_cache.py):
    # "" is $XDG_CACHE_HOME/hpcbench/builds (else ~/.cache/hpcbench/builds), "none" turns it off.
    # On a cluster it must be a folder the compute nodes see (home, a project file system).
    build_cache: str = ""
    # The scheduler's settings model (its view's `settings`, a BatchConfig subclass: fields of its own)
    batch: SerializeAsAny[BatchConfig] = Field(default_factory=BatchConfig, validate_default=True)
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
        if SCHEDULERS.get(name) is None:
            raise ValueError(f"{name!r} is not a known scheduler (known: {', '.join(SCHEDULERS.names())}; a package "
                             "adds one through the hpcbench.executors and hpcbench.schedulers entry-point groups)")
        return name

    @field_validator("batch", mode="before")
    @classmethod
    def _batch_settings(cls, v: object, info: ValidationInfo) -> object:
        """`batch:` validated by the scheduler's own model (errors name batch.<field>)."""
        model = settings_model(info.data.get("scheduler", "local"))
        if isinstance(v, model):
            return v
        return model.model_validate(v.model_dump(exclude_unset=True) if isinstance(v, BaseModel) else v)

    def is_batch(self) -> bool:
        """Jobs go to a batch scheduler (its view says so), not this machine."""
        return view_class(self.scheduler).batch

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
        if self.isolation == "bwrap" and self.limits.disk_mb > self.limits.memory_mb // 2:
            # the kernel's disk limit is a tmpfs (jobs/disk_cap.py): its pages count against the
            # step's memory cgroup, so a step that fills its folder has memory_mb - disk_mb left
            raise ValueError(f"limits.disk_mb: {self.limits.disk_mb} MB is more than half of limits.memory_mb "
                             f"({self.limits.memory_mb} MB); a step's files are held in memory (a tmpfs counted "
                             "against memory_mb), so a program that filled its folder would have too little left")
        if self.isolation == "apptainer" and not self.isolation_image:
            raise ValueError("isolation_image: isolation apptainer needs the image the steps run in")
        if self.is_batch() and not self.partitions:
            raise ValueError(f"partitions: a {self.scheduler} site needs at least one partition or queue")
        self._gpu_mpi_only_on_gpu_variants()
        self._launchers_known()
        return self

    def _launchers_known(self) -> None:
        """Every launcher the file names is one a part provides (jobs/launchers.py or a package's)."""
        named = [("launcher", self.launcher), *((f"partitions.{i}.launcher", p.launcher)
                                                for i, p in enumerate(self.partitions)),
                 *((f"variants.{i}.launcher", v.launcher) for i, v in enumerate(self.variants))]
        for where, launcher in named:
            if launcher is not None and launcher.binding != "auto" and LAUNCHERS.get(launcher.binding) is None:
                raise ValueError(f"{where}.binding: {launcher.binding!r} is not a known launcher (known: auto, "
                                 f"{', '.join(LAUNCHERS.names())}; a package adds one through the "
                                 "hpcbench.launchers entry-point group)")

    def launcher_for(self, variant: str) -> Launcher:
        """The launcher of a variant's runs: the variant's own, else its partition's, else the site's."""
        v = self.variant(variant) if any(x.name == variant for x in self.variants) else None
        part = self.partition_for(variant)
        return (v.launcher if v else None) or (part.launcher if part else None) or self.launcher

    def _gpu_mpi_only_on_gpu_variants(self) -> None:
        """GPU-aware MPI (its variable, the craype-accel module) only where the variant is a GPU
        build: a CPU program aborts in MPI_Init without the GTL library (docs/sites.md, gtl)."""
        site_wide = [*self.setup, *self.modules, *(f"{k}={v}" for k, v in self.env.items())]
        for where, lines in (("setup", self.setup), ("modules", self.modules), ("env", site_wide)):
            if any(_gpu_only(ln) for ln in lines) and any(not v.is_gpu() for v in self.variants):
                cpu = next(v.name for v in self.variants if not v.is_gpu())
                raise ValueError(f"{where}: GPU-aware MPI or a GPU accelerator module for every variant, but "
                                 f"variant {cpu!r} is a CPU build (Cray MPICH aborts in MPI_Init: 'GTL library "
                                 "is not linked'); put it in the GPU variants' modules/env")
        for i, v in enumerate(self.variants):
            lines = [*v.setup, *v.modules, *(f"{k}={val}" for k, val in v.env.items())]
            if not v.is_gpu() and any(_gpu_only(ln) for ln in lines):
                raise ValueError(f"variants.{i}: GPU-aware MPI or a GPU accelerator module on CPU variant "
                                 f"{v.name!r} (Cray MPICH aborts in MPI_Init: 'GTL library is not linked')")

    def setup_for(self, variant: str) -> list[str]:
        """The shell lines a job of `variant` starts with: the site's setup, modules and env, then
        the variant's."""
        v = self.variant(variant) if any(x.name == variant for x in self.variants) else None
        lines = [*self.setup, *(f"module {m}" for m in self.modules), *_exports(self.env)]
        if v is not None:
            lines += [*v.setup, *(f"module {m}" for m in v.modules), *_exports(v.env)]
        return lines

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

    def queues_for(self, variant: str) -> list[Partition]:
        """The queues a variant's allocations may go to, its own first: those of the same node
        type (constraint and GPUs per node), in the site file's order."""
        own = self.partition_for(variant)
        if own is None:
            return []
        same = [p for p in self.partitions if p is not own and p.constraint == own.constraint
                and p.gpus_per_node == own.gpus_per_node and p.cores_per_node == own.cores_per_node]
        return [own, *same]

    def is_gpu_variant(self, variant: str) -> bool:
        return any(v.name == variant and v.is_gpu() for v in self.variants)

    def ranks_per_node(self, variant: str, part: Partition | None = None) -> int:
        """Ranks one node holds for a run of `variant` (0: not declared): its usable cores, or
        for a GPU variant one rank per GPU (tile), as PETSc's GPU back-ends use one device per rank."""
        part = part or self.partition_for(variant)
        if part is None:
            return 0
        if self.is_gpu_variant(variant) and part.gpu_ranks_per_node:
            return part.gpu_ranks_per_node
        return part.cores_per_node

    def job_cores(self, variant: str, width: int) -> int:
        """Cores a job of `variant` whose widest run has `width` ranks is planned to have: on a batch
        site the cores of the partition's nodes that hold it (the compute nodes, never the login
        node that runs `submit`), else this machine's (`total_cores`; a test cluster that declares
        no cores_per_node is this machine)."""
        part = self.partition_for(variant) if self.is_batch() else None
        if part is not None and part.cores_per_node:
            per_node = self.ranks_per_node(variant, part) or part.cores_per_node
            return part.cores_per_node * max(1, -(-width // per_node))
        return self.total_cores()

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


def _gpu_only(line: str) -> bool:
    words = line.replace("=", " ").split()
    on = any(w in GPU_AWARE_MPI_ENV for w in words) and not line.rstrip().endswith("=0") and "unset" not in words
    return on or (any(w.startswith(GPU_ONLY_MODULES) for w in words) and "unload" not in words)


def _exports(env: dict[str, str]) -> list[str]:
    return [f"export {k}={shlex.quote(v)}" for k, v in env.items()]


def site_configs_dir() -> Path:
    from hpcbench.resources import data_path

    return data_path("site_configs")


def list_sites() -> list[str]:
    return sorted(p.stem for p in site_configs_dir().glob("*.yaml"))


class _OneKeyOnceLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys in a mapping without a word, so a site file that
    names `env:` twice loses the first block (found when a test's added `env:` silently vanished
    behind the bundled one). A key given twice is an error here, with both lines."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        first: dict[object, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                line = first.setdefault(key, key_node.start_mark.line)
            except TypeError:
                continue  # an unhashable key: SafeLoader's own error says so below
            if line != key_node.start_mark.line:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice (first on line {line + 1}); keep one",
                    key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def planned_site(config: dict) -> SiteConfig:
    """The site a campaign was planned for, from its manifest (validated when planned). `batch:`
    keys its scheduler's settings model does not hold are dropped: an older hpcbench kept every
    scheduler's fields in one model and wrote them all into each manifest."""
    batch = config.get("batch")
    if isinstance(batch, dict):
        fields = settings_model(str(config.get("scheduler", "local"))).model_fields
        config = {**config, "batch": {k: v for k, v in batch.items() if k in fields}}
    return SiteConfig.model_validate(config)


def load_site(name_or_path: str) -> SiteConfig:
    """A bundled site by name, or any YAML file by path."""
    p = Path(name_or_path)
    path = p if (p.suffix in (".yaml", ".yml") or p.is_file()) else site_configs_dir() / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ConfigError(path, None, f"no such site config; bundled sites: {', '.join(list_sites())}")
    try:
        raw = yaml.load(path.read_bytes().decode("utf-8"), Loader=_OneKeyOnceLoader)  # noqa: S506 - a SafeLoader
    except UnicodeDecodeError as e:
        raise ConfigError(path, None, f"not UTF-8 text (byte {e.start}: {e.reason})") from None
    except yaml.YAMLError as e:
        raise ConfigError(path, None, f"malformed YAML: {e}") from None
    if not isinstance(raw, dict):
        raise ConfigError(path, None, "must be a YAML mapping")
    try:
        site = SiteConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(path, *format_validation_error(e)) from None
    if site.scheduler == "local" and site.cores:  # a fact of this machine: checked where it runs
        usable = len(this_machine(site.reserved_cores).cores)
        if site.cores > usable:
            raise ConfigError(path, "cores", f"{site.cores} cores, but this machine lets hpcbench use {usable} "
                              f"(without reserved_cores); say at most {usable}, or 0 for all of them")
    return site
