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
from hpcbench.registry import Registry

MPIEXECS = ("mpiexec", "mpirun", "mpiexec.hydra", "orterun")


class LauncherPart:
    """One launcher: the defaults start ranks where the launcher puts them, bound by inheritance."""

    name: ClassVar[str] = ""
    env_prefixes: ClassVar[tuple[str, ...]] = ()  # its variables a step keeps (jobs/sandbox.step_env)

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
        return binding.apply(self.name, argv, ranks, held, files, hosts)


L = TypeVar("L", bound=type[LauncherPart])
LAUNCHERS: Registry[type[LauncherPart]] = Registry("launcher", "hpcbench.launchers")


def register_launcher(name: str) -> Callable[[L], L]:
    def deco(cls: L) -> L:
        cls.name = name
        LAUNCHERS.add(name, cls)
        return cls

    return deco


def _at_option_end(argv: list[str], words: list[str]) -> list[str]:
    at = binding.option_end(argv)  # before a wrapper program (Aurora's gpu_tile_compact.sh)
    return [*argv[:at], *words, *argv[at:]]


@register_launcher("srun")
class Srun(LauncherPart):
    @classmethod
    def recognises(cls, argv: list[str]) -> bool:
        return bool(argv) and Path(argv[0]).name == "srun"

    def on_hosts(self, argv: list[str], hosts: list[str], over: bool, hostfile: Callable[[], Path]) -> list[str]:
        return [argv[0], *([] if over else ["--exact"]), "-N", str(len(hosts)), f"--nodelist={','.join(hosts)}",
                *argv[1:]]


@register_launcher("pals")
class Pals(LauncherPart):
    env_prefixes = ("PALS_",)

    def on_hosts(self, argv: list[str], hosts: list[str], over: bool, hostfile: Callable[[], Path]) -> list[str]:
        return _at_option_end(argv, ["--hostfile", str(hostfile())])


@register_launcher("openmpi")
class OpenMpi(LauncherPart):
    @classmethod
    def recognises(cls, argv: list[str]) -> bool:
        return bool(argv) and Path(argv[0]).name in MPIEXECS and binding.mpiexec_flavour(argv[0]) == "openmpi"

    def on_hosts(self, argv: list[str], hosts: list[str], over: bool, hostfile: Callable[[], Path]) -> list[str]:
        return _at_option_end(argv, ["--hostfile", str(hostfile())])


@register_launcher("mpich")
class Hydra(LauncherPart):
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


def launcher_for(kind: str, argv: list[str]) -> LauncherPart:
    """The site's launcher, or for `auto` the one whose command the template starts (none: `none`)."""
    if kind != "auto":
        return launcher_named(kind)
    for cls in LAUNCHERS.all().values():
        if cls.recognises(argv):
            return cls()
    return Inherit()


def env_prefixes() -> tuple[str, ...]:
    """Every known launcher's variables (a step may be started by any of them)."""
    return tuple(p for cls in LAUNCHERS.all().values() for p in cls.env_prefixes)
