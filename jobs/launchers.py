"""Launchers as parts: how each starts ranks on some hosts, binds them (jobs/binding.py) and which
of its variables a step keeps. A site file picks one per site, partition or variant
(`launcher.binding`: srun, pals, openmpi, mpich, none, or one an installed package adds through
the `hpcbench.launchers` entry-point group); `auto` infers it from the template's command.

Any scheduler with any launcher: the scheduler's allocation view (hpcbench/schedulers/) hands
a packed job its hosts, and the launcher names them in its own terms:
    srun      --exact -N n --nodelist=h1,h2 (srun(1); an oversubscribed step cannot be --exact:
              Slurm says "More processors requested than permitted", so it runs alone)
    pals      --hostfile F (ALCF, "Running Multiple MPI Applications on a node")
    openmpi   --hostfile F (mpirun(1), "Specifying Host Nodes")
    mpich     -f F (MPICH wiki, "Using the Hydra Process Manager": mpiexec -f hosts -n 4 ./app)
    none      the template as the site wrote it"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, TypeVar

from hpcbench.errors import HpcbenchError
from hpcbench.jobs import binding
from hpcbench.jobs.binding import Binding
from hpcbench.jobs.records import Launcher
from hpcbench.registry import Registry

MPIEXECS = ("mpiexec", "mpirun", "mpiexec.hydra", "orterun")


class LauncherPart:
    """One launcher: the defaults start ranks where the launcher puts them, bound by inheritance."""

    name: ClassVar[str] = ""
    env_prefixes: ClassVar[tuple[str, ...]] = ()  # its variables a step keeps (jobs/sandbox.step_env)
    # Where it tells each rank its index in the run and on its node (read by the affinity probe,
    # valgrind's per-rank report names and gpu_bind), the first one set winning.
    rank_vars: ClassVar[tuple[str, ...]] = ()
    local_rank_vars: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def recognises(cls, argv: list[str]) -> bool:
        """Whether a template starting `argv` is this launcher (for `binding: auto`)."""
        return False

    def on_hosts(self, argv: list[str], hosts: list[str], over: bool, hostfile: Callable[[], Path]) -> list[str]:
        """The launch line with its ranks on `hosts` (`hostfile()` writes them one a line)."""
        return argv

    def bind(self, argv: list[str], ranks: int, held: Binding, files: Path | None,
             hosts: list[str]) -> tuple[list[str], dict[str, str]]:
        """The launch bound to the cores and GPUs the run holds, and variables for its environment."""
        return binding.apply_binding(self.name, argv, ranks, held, files, hosts)


L = TypeVar("L", bound=type[LauncherPart])
LAUNCHERS: Registry[type[LauncherPart]] = Registry("launcher", "hpcbench.launchers")


def register_launcher(name: str) -> Callable[[L], L]:
    """Class decorator: launcher `name` (a site's `launcher.binding`)."""
    return LAUNCHERS.part(name)


def _at_option_end(argv: list[str], words: list[str]) -> list[str]:
    at = binding.option_end(argv)  # before a wrapper program (Aurora's gpu_tile_compact.sh)
    return [*argv[:at], *words, *argv[at:]]


@register_launcher("srun")
class Srun(LauncherPart):
    # srun(1), "OUTPUT ENVIRONMENT VARIABLES": SLURM_PROCID (MPI rank), SLURM_LOCALID (node local task ID)
    rank_vars = ("SLURM_PROCID",)
    local_rank_vars = ("SLURM_LOCALID",)

    @classmethod
    def recognises(cls, argv: list[str]) -> bool:
        return bool(argv) and Path(argv[0]).name == "srun"

    def on_hosts(self, argv: list[str], hosts: list[str], over: bool, hostfile: Callable[[], Path]) -> list[str]:
        return [argv[0], *([] if over else ["--exact"]), "-N", str(len(hosts)), f"--nodelist={','.join(hosts)}",
                *argv[1:]]


@register_launcher("pals")
class Pals(LauncherPart):
    env_prefixes = ("PALS_",)
    # PALS sets PALS_RANKID/PALS_LOCAL_RANKID, Cray PMI PMI_RANK/PMI_LOCAL_RANK (ALCF's Polaris
    # GPU affinity script, set_affinity_gpu_polaris.sh, reads PMI_LOCAL_RANK)
    rank_vars = ("PALS_RANKID", "PMI_RANK")
    local_rank_vars = ("PALS_LOCAL_RANKID", "PMI_LOCAL_RANK")

    def on_hosts(self, argv: list[str], hosts: list[str], over: bool, hostfile: Callable[[], Path]) -> list[str]:
        return _at_option_end(argv, ["--hostfile", str(hostfile())])


@register_launcher("openmpi")
class OpenMpi(LauncherPart):
    # mpirun(1), "Exported Environment Variables": OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK;
    # PMIx launchers (prterun) also set PMIX_RANK
    rank_vars = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK")
    local_rank_vars = ("OMPI_COMM_WORLD_LOCAL_RANK",)

    @classmethod
    def recognises(cls, argv: list[str]) -> bool:
        return bool(argv) and Path(argv[0]).name in MPIEXECS and binding.mpiexec_flavour(argv[0]) == "openmpi"

    def on_hosts(self, argv: list[str], hosts: list[str], over: bool, hostfile: Callable[[], Path]) -> list[str]:
        return _at_option_end(argv, ["--hostfile", str(hostfile())])


@register_launcher("mpich")
class Hydra(LauncherPart):
    # Hydra's PMI sets PMI_RANK, and MPI_LOCALRANKID (MPICH and Intel MPI's mpiexec.hydra)
    rank_vars = ("PMI_RANK",)
    local_rank_vars = ("MPI_LOCALRANKID",)

    @classmethod
    def recognises(cls, argv: list[str]) -> bool:
        return bool(argv) and Path(argv[0]).name in MPIEXECS and binding.mpiexec_flavour(argv[0]) == "mpich"

    def on_hosts(self, argv: list[str], hosts: list[str], over: bool, hostfile: Callable[[], Path]) -> list[str]:
        return _at_option_end(argv, ["-f", str(hostfile())])


@register_launcher("none")
class Inherit(LauncherPart):
    pass


def launcher_named(name: str) -> LauncherPart:
    cls = LAUNCHERS.get(name)
    if not (isinstance(cls, type) and issubclass(cls, LauncherPart)):
        raise HpcbenchError(f"launcher {name!r} is not known (known: {', '.join(LAUNCHERS.names())}; a package "
                            "adds one through the hpcbench.launchers entry-point group)")
    return cls()


def launcher_of(launcher: Launcher) -> LauncherPart:
    """The part that starts the runs of a job's launcher settings (its spec's)."""
    return launcher_for(launcher.binding, launcher.argv(1, 1))


def launcher_for(kind: str, argv: list[str]) -> LauncherPart:
    """The site's launcher, or for `auto` the one whose command the template starts (none: `none`)."""
    if kind != "auto":
        return launcher_named(kind)
    for cls in LAUNCHERS.all().values():
        if cls.recognises(argv):
            return cls()
    return Inherit()


def rank_variables(first: LauncherPart | None = None) -> tuple[str, ...]:
    """Where a rank finds its index: the variables of `first` (the launcher that started the run)
    before every other known launcher's, for a template run as the site wrote it (`none`) or a
    launcher started by another one (mpiexec inside a Slurm job step sees srun's too)."""
    return _first_then_all(first, "rank_vars")


def local_rank_variables(first: LauncherPart | None = None) -> tuple[str, ...]:
    """Where a rank finds its index on its node, as rank_variables."""
    return _first_then_all(first, "local_rank_vars")


def _first_then_all(first: LauncherPart | None, attr: str) -> tuple[str, ...]:
    parts = [type(first)] if first is not None else []
    names = [v for cls in [*parts, *LAUNCHERS.all().values()] for v in getattr(cls, attr)]
    return tuple(dict.fromkeys(names))


def env_prefixes() -> tuple[str, ...]:
    """Every known launcher's variables (a step may be started by any of them)."""
    return tuple(p for cls in LAUNCHERS.all().values() for p in cls.env_prefixes)
