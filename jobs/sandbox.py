"""The sandbox around every untrusted step: a build, or a run of a submission.

A step sees only its own folders read-write, the system's programs and libraries
(/usr, the parts of /etc that compilers, MPI and the C library read, /sys
read-only for hwloc) and PETSc's installation read-only: PETSC_DIR[/PETSC_ARCH]
alone, never the virtual environment that holds it (hpcbench's own package and
problems/ live there too), plus the external libraries PETSc's makefiles name. It
has a private /tmp and /dev/shm, its own /proc, no network and a pid namespace, so
nothing it starts outlives it, whatever cgroup it writes itself into. Its
environment is built from an allow-list (`step_env`), never the caller's.

Levels (site config `isolation`): `bwrap` (bubblewrap, user namespaces; locally
and on clusters that allow them), `apptainer` (a site's container runtime and
image), `none` (nothing: reports warn). Locally the launcher runs inside the
sandbox with its ranks (one sandbox per step); on a batch scheduler the launcher
stays outside (srun and PALS must reach their daemons) and each rank is wrapped
(`per_rank`): then the network is shared (ranks on several nodes talk through it)
and /tmp and /dev/shm are one folder of the step shared by its ranks on a node.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from hpcbench.jobs import launchers
from hpcbench.jobs.records import DENIED_ENV, SECRET_ENV, Isolation
from hpcbench.petsc_env import PetscInstall
from hpcbench.schedulers.base import view_for

# Caller's variables a step may see: toolchain and library paths, locale, and what
# MPI launchers, PMI/PMIx, OpenMP, GPU runtimes and Cray's compiler wrappers read.
ENV_NAMES = frozenset({
    "PATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "PKG_CONFIG_PATH",
    "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME", "CC", "CXX", "MPICC",
})
# The scheduler's own (SLURM_ ...) come from its allocation view, a launcher's own (PALS_) from
# its part (jobs/launchers.py), so a plugin's reach its steps too.
ENV_PREFIXES = (
    "OMPI_", "PMIX_", "PMI_", "MPICH_", "I_MPI_", "FI_", "UCX_", "HWLOC_",
    "OMP_", "KMP_", "GOMP_", "CUDA_", "NVIDIA_", "ROCR_", "HIP_", "HSA_", "ZE_", "SYCL_",
    "ONEAPI_DEVICE_", "CRAY_", "PE_", "NCCL_",
    # Cray's compiler wrappers and MPICH's control variables (MPIR_CVAR_*, read at MPI_Init: ALCF's
    # and OLCF's pages set them), Kokkos' runtime settings (KOKKOS_*, read at Kokkos::initialize)
    "CRAYPE_", "MPIR_CVAR_", "KOKKOS_",
)
# Whatever an allowed prefix lets through, these never pass: they name credentials; options the
# submitting user left around change the program, and PETSc reads both PETSC_OPTIONS and
# PETSC_OPTIONS_YAML at PetscInitialize (src/sys/objects/options.c PetscOptionsInsert, PETSc 3.26).
# Both from records.py: the site's launcher.env is checked against them when the site file is loaded.
SECRET = SECRET_ENV
DENIED = DENIED_ENV

# /etc: what compilers, Open MPI/MPICH, the dynamic linker and getpwuid read.
# Not all of /etc: it holds keys (munge, ssh) and shadow files that root could read.
ETC = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "openmpi", "mpich", "passwd", "group",
       "hosts", "host.conf", "nsswitch.conf", "localtime", "hostname", "environment-modules", "lmod",
       "valgrind", "gcc", "pmix")
# Merged-/usr distributions make these symlinks; older ones have real folders.
TOP = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def step_env(extra: Mapping[str, str], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an untrusted step: allowed variables of `base` (the
    caller's), then `extra` (PETSc's, MPI's, the site launcher's: ours, trusted). The allocation's
    request that its scheduler's launcher would read as the step's own (the view's `step_drops`:
    Slurm's SLURM_GPUS_PER_NODE) is left out, packed or not: a step asks on its own line."""
    base = os.environ if base is None else base
    view = view_for(environ=base)
    prefixes = (*ENV_PREFIXES, *view.env_prefixes, *launchers.env_prefixes())
    env = {k: v for k, v in base.items()
           if (k in ENV_NAMES or k.startswith(prefixes)) and not SECRET.search(k) and k not in view.step_drops}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(HOME="/tmp", TMPDIR="/tmp")
    env.update({k: v for k, v in extra.items() if not SECRET.search(k)})  # a site's launcher.env included
    for k in DENIED:
        env.pop(k, None)
    return env


_PATH_FLAG = re.compile(r"(?:-Wl,-rpath,|-rpath[ =]|-L|-I)(/[^\s,]+)")


def petsc_paths(petsc: PetscInstall) -> list[Path]:
    """PETSc's installation alone, and the external libraries and headers its
    makefiles name (a site PETSc links hypre, MKL ... from other prefixes)."""
    pd = Path(petsc.petsc_dir)
    if petsc.petsc_arch:  # in-tree build: the arch folder, headers and the shared makefiles
        paths = [pd / petsc.petsc_arch, pd / "include", pd / "lib" / "petsc", pd / "share" / "petsc"]
    else:
        paths = [pd]
    try:
        text = (petsc.conf_dir / "petscvariables").read_text(errors="replace")
    except OSError:
        text = ""
    for m in _PATH_FLAG.finditer(text):
        p = Path(m.group(1))
        if p.is_dir() and not p.is_relative_to("/usr") and p not in paths:
            paths.append(p)
    return [p for p in paths if p.exists()]


@dataclass
class Step:
    """What one untrusted step may see and where it starts."""

    isolation: Isolation
    petsc: PetscInstall
    cwd: Path  # where the step starts, as it sees it
    writable: list[Path]  # host folders
    readonly: list[Path] = field(default_factory=list)
    scratch: Path | None = None  # per_rank: the step's /tmp and /dev/shm, shared by its ranks
    # host folder -> where the step sees it (default: the same path). Each run of a job has
    # folders of its own, all seen at the same paths, so a run cannot tell itself from the
    # others by where it is; at level `none` nothing can be remapped and the host paths show.
    at: dict[Path, Path] = field(default_factory=dict)
    # files shown empty inside (a Python program's ctypes module, jobs/build_python.py); at level
    # `none` nothing is hidden
    hidden: list[Path] = field(default_factory=list)
    # The size of the tmpfs the kernel holds the step's folder to (bytes: disk_mb and what the
    # folder holds when it starts; None: its folders are watched only, see `kernel_disk`); set by
    # jobs/capture.py from the step's limits.
    disk_bytes: int | None = None

    @property
    def level(self) -> str:
        return self.isolation.level

    @property
    def kernel_disk(self) -> bool:
        """Whether the step's working folder is a tmpfs of `disk_bytes` (bwrap --size): one sandbox
        per step (per rank, its ranks share their folders across sandboxes and nodes: watched
        only) with a bubblewrap that sizes a tmpfs (0.5 and later)."""
        return (self.level == "bwrap" and not self.isolation.per_rank and self.disk_bytes is not None
                and any(self.inside(w) == self.cwd for w in self.writable) and bwrap_sizes_tmpfs())

    def inside(self, host: Path) -> Path:
        return self.at.get(host, host) if self.level != "none" else host

    @property
    def host_cwd(self) -> Path:
        """The host folder the step starts in (what `cwd` names from outside)."""
        return next((h for h in self.writable if self.inside(h) == self.cwd), self.cwd)

    def watched(self) -> list[Path]:
        """The host folders the step writes into, for the disk and inode limits."""
        return [*self.writable, *([self.scratch] if self.scratch is not None else [])]

    def ro_paths(self) -> list[Path]:
        extra = [Path(os.path.expandvars(b)) for b in self.isolation.binds]
        return [*petsc_paths(self.petsc), *extra, *self.readonly]

    def rank_env(self) -> dict[str, str]:
        """Variables ranks wrapped one by one need: each is in its own user namespace, so
        Open MPI's cross-memory attach cannot work and PMIx's shared-memory store cannot be
        locked; both have a plain fallback, chosen here rather than found by failing."""
        if not self.isolation.per_rank or self.level == "none":
            return {}
        return {"OMPI_MCA_btl_vader_single_copy_mechanism": "none", "PMIX_MCA_gds": "hash"}

    def wrap(self, argv: list[str], go_fd: int | None = None, copy_back: bool = False) -> list[str]:
        """argv run inside this step's sandbox (unchanged at level `none`). A kernel-capped step
        starts once the harness writes a line to `go_fd` (the harness copies its files out,
        jobs/disk_cap.py), or with `copy_back` copies them back itself (disk_limited)."""
        if self.level == "bwrap":
            capped = self.kernel_disk and (go_fd is not None or copy_back)
            return [*bwrap_prefix(self, capped, copy_back), *(disk_limited(argv, go_fd) if capped else argv)]
        if self.level == "apptainer":
            return [*apptainer_prefix(self), *argv]
        return list(argv)


def _bind(flag: str, p: Path) -> list[str]:
    return [flag, str(p), str(p)]


@cache
def bwrap_sizes_tmpfs() -> bool:
    """Whether the bwrap on PATH has `--size` (a size-capped `--tmpfs`, bubblewrap 0.5.0+;
    Debian 12 ships 0.8.0): asked once per process."""
    import subprocess

    exe = shutil.which("bwrap")
    if exe is None:
        return False
    try:
        out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return "--size" in out.stdout + out.stderr


# Where a kernel-capped step sees its folder's host content (read-only) while a first command
# copies it into the tmpfs it works in; the same path in every step, so it tells no run apart.
STAGE = Path("/.hpcbench-stage")


def disk_limited(argv: list[str], go_fd: int | None) -> list[str]:
    """`argv` started in a kernel-capped step: its folder's files copied into the tmpfs, then
    - with `go_fd`: a wait for the harness's word on it (it holds the tmpfs open first: what the
      step leaves there is copied out after every one of its processes is gone, jobs/disk_cap.py);
    - without (a build started through a scheduler's launcher, on a node or in a process tree the
      harness cannot reach): once the command ends, every other process of the sandbox killed
      (its own pid namespace) and what the tmpfs holds copied back by the sandbox's first command,
      which exits as the command did. STAGE is then writable to the toolchain as it runs: a build
      runs no code of the submission's, only the compiler, linker and make on our makefile."""
    if go_fd is not None:
        script = f'cp -a {STAGE}/. . && read -r go < /proc/self/fd/{go_fd} && exec "$@"'
    else:
        script = (f'cp -a {STAGE}/. . || exit 1; "$@"; rc=$?; kill -KILL -1 2>/dev/null; '
                  f'cp -a ./. {STAGE}/ || exit 1; exit $rc')
    return ["/bin/sh", "-c", script, "sh", *argv]


def bwrap_prefix(step: Step, capped: bool = False, copy_back: bool = False) -> list[str]:
    bwrap = shutil.which("bwrap") or "bwrap"
    args = [bwrap, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if step.isolation.per_rank:
        # The launcher outside starts ranks that must reach each other and its daemons: the
        # network stays, and so does the pid namespace (Open MPI's shared-memory transport
        # tells ranks apart by pid: all of them pid 2 crash it). A rank's daemon is then left
        # to the scheduler's process tracking (proctrack/cgroup) and cannot leave its cgroup.
        args += ["--unshare-user-try", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    else:
        args += ["--unshare-all"]
    args += _bind("--ro-bind", Path("/usr"))
    for top in TOP:
        p = Path("/") / top
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += _bind("--ro-bind", p)
    for name in ETC:
        p = Path("/etc") / name
        if p.exists():
            args += _bind("--ro-bind", p)
    args += _bind("--ro-bind", Path("/sys"))  # hwloc reads the topology there (and warns without it)
    args += ["--proc", "/proc", "--dev", "/dev"]
    if step.scratch is not None:
        step.scratch.mkdir(parents=True, exist_ok=True)
        args += ["--bind", str(step.scratch), "/tmp", "--bind", str(step.scratch), "/dev/shm"]
    else:
        args += ["--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
    for p in step.ro_paths():
        # Under /usr (bound whole above) a PETSc is visible already; binding it again fails where
        # its path is a symlink (Debian's /usr/lib/petsc -> petscdir/petsc3.18/...-real): bwrap
        # mounts onto the link's target, outside the new root.
        if p.exists() and not (p.is_relative_to("/usr") and p.resolve().is_relative_to("/usr")):
            args += _bind("--ro-bind", p)
    for p in step.hidden:
        args += ["--ro-bind", "/dev/null", str(p)]
    if capped:
        args += _capped_folders(step, copy_back)
    else:
        for p in step.writable:
            args += ["--bind", str(p), str(step.inside(p))]
    # Per rank, nothing of the PMI/PMIx server is bound (its variables are set per step, after
    # this argv is built): with the network shared, srun --mpi=pmix ranks of Open MPI start
    # (measured on the Slurm test cluster); a site whose PMI needs a folder adds it to binds.
    args += ["--chdir", str(step.cwd), "--"]
    return args


def _capped_folders(step: Step, copy_back: bool = False) -> list[str]:
    """The working folder a tmpfs of `disk_bytes` (the kernel refuses a block past it: ENOSPC),
    its host content shown read-only at STAGE for the first command to copy in; the step's other
    folders read-only, with the files the harness made in them before the step (a run's instrument
    records, jobs/instruments.py HeldFile) bound writable one by one, each held to RLIMIT_FSIZE:
    the step can fill them but make no file there. Nothing else it writes reaches the host."""
    host = step.host_cwd
    args = ["--bind" if copy_back else "--ro-bind", str(host), str(STAGE),
            "--size", str(step.disk_bytes or 0), "--tmpfs", str(step.cwd)]
    for p in step.writable:
        if p == host:
            continue
        args += ["--ro-bind", str(p), str(step.inside(p))]
        for f in sorted(p.rglob("*")):
            if f.is_file() and not f.is_symlink():
                args += ["--bind", str(f), str(step.inside(p) / f.relative_to(p))]
    return args


def apptainer_prefix(step: Step) -> list[str]:
    """`apptainer exec` with everything contained (own pid and ipc namespaces, no
    home, a clean environment: the step's reaches it as APPTAINERENV_ variables,
    see apptainer_env), only the step's folders and PETSc bound."""
    if not step.isolation.image:
        raise ValueError("isolation apptainer needs isolation_image (the site's container image)")
    args = [shutil.which("apptainer") or "apptainer", "exec", "--no-home", "--writable-tmpfs"]
    if step.isolation.per_rank:
        # Each rank inherits the launcher's environment (ours, allow-listed, with the PMI
        # variables it needs): contained file systems and IPC, not a clean environment.
        args += ["--contain", "--ipc"]
    else:
        args += ["--containall", "--net", "--network", "none"]
    for p in step.ro_paths():
        args += ["--bind", f"{p}:{p}:ro"]
    for p in step.hidden:
        args += ["--bind", f"/dev/null:{p}:ro"]
    for p in step.writable:
        args += ["--bind", f"{p}:{step.inside(p)}"]
    args += ["--pwd", str(step.cwd), step.isolation.image]
    return args


def apptainer_env(env: Mapping[str, str]) -> dict[str, str]:
    """Apptainer's --cleanenv drops the caller's variables; APPTAINERENV_ ones reach the step."""
    out = {k: v for k, v in env.items() if k in ("PATH",)}
    out.update({f"APPTAINERENV_{k}": v for k, v in env.items()})
    return out


def bwrap_works() -> tuple[bool, str]:
    """Can this machine start a bubblewrap sandbox (user namespaces allowed)?"""
    import subprocess

    exe = shutil.which("bwrap")
    if exe is None:
        return False, "bwrap not found (Debian: apt-get install bubblewrap)"
    try:
        out = subprocess.run([exe, "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
                              "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
                              "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--", "/usr/bin/true"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return False, f"bwrap failed to start: {e}"
    if out.returncode != 0:
        return False, f"bwrap failed: {out.stderr.strip()[:300]}"
    return True, exe
