"""What `hpcbench doctor --site` can see only on the machine itself (issue 37): the link line of
each PETSc it will use (Cray MPICH's GPU Transport Layer in the GPU variants), the cores a PBS job
is given (NCPUS and the job's cpuset against the site file), and the environment a batch job
inherits (a GPU accelerator target where a CPU variant runs). Each check returns
(status, detail, required) for a doctor row; docs/sites.md names them doctor-gtl, doctor-ncpus and
doctor-inherited-env."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from hpcbench.jobs.cores import whole_node_findings
from hpcbench.petsc_env import PetscInstall
from hpcbench.site import SiteConfig

GTL_LIB = re.compile(r"(?:-l|lib)(mpi_gtl_(cuda|hsa|ze))\b")
GTL_FOR_FEATURE = {"cuda": "cuda", "hip": "hsa", "rocm": "hsa", "sycl": "ze"}
ACCEL_MODULE = re.compile(r"(?:^|[:\s])(craype-accel-[\w.-]+)")
Row = tuple[str, str, bool]


def _variable(text: str, name: str) -> str:
    m = re.search(rf"^{re.escape(name)}\s*=(.*)$", text, re.M)
    return m.group(1).strip() if m else ""


def _exports_gpu_mpi(lines: list[str]) -> bool:
    """The variant's job lines switch on GPU-aware Cray MPICH (MPICH_GPU_SUPPORT_ENABLED=1)."""
    return any(re.search(r"\bMPICH_GPU_SUPPORT_ENABLED=['\"]?1\b", ln) for ln in lines)


def gtl_link_check(site: SiteConfig, variant: str, inst: PetscInstall, features: set[str]) -> Row:
    """[doctor-gtl] A variant whose jobs set MPICH_GPU_SUPPORT_ENABLED=1 runs programs linked with
    PETSc's link line; Cray MPICH aborts in MPI_Init ("GTL library is not linked") unless that line
    (PETSC_EXTERNAL_LIB_BASIC in petscvariables) or libpetsc itself (ldd) brings libmpi_gtl_*."""
    if not _exports_gpu_mpi(site.setup_for(variant)):
        return "n/a", "the variant's jobs do not set MPICH_GPU_SUPPORT_ENABLED=1: no GTL needed", False
    conf = inst.conf_dir / "petscvariables"
    try:
        line = _variable(conf.read_text(), "PETSC_EXTERNAL_LIB_BASIC")
    except OSError as e:
        return "FAILED", f"{conf}: cannot read PETSc's link line: {e}", True
    found = GTL_LIB.search(line)
    where = "PETSC_EXTERNAL_LIB_BASIC"
    if not found:
        found, where = _gtl_in_libpetsc(inst.conf_dir.parent.parent)
    want = {GTL_FOR_FEATURE[f] for f in features if f in GTL_FOR_FEATURE}
    if not found:
        return "FAILED", (f"the jobs set MPICH_GPU_SUPPORT_ENABLED=1 but PETSc's link line ({conf}: "
                          f"PETSC_EXTERNAL_LIB_BASIC) and libpetsc bring no libmpi_gtl_*: MPI_Init would abort "
                          f"('GTL library is not linked'); build it from spack/{site.name} (docs/sites.md, "
                          "spack-gtl) or with the cc wrapper and the craype-accel module loaded"), True
    if want and found.group(2) not in want:
        return "WRONG", (f"lib{found.group(1)} ({where}) is not the GTL of this variant's GPUs "
                         f"(libmpi_gtl_{'/'.join(sorted(want))})"), True
    return "ok", f"lib{found.group(1)} on PETSc's link line ({where})", True


def _gtl_in_libpetsc(libdir: Path) -> tuple[re.Match[str] | None, str]:
    lib = next((p for p in sorted(libdir.glob("libpetsc.so*"))), None)
    ldd = shutil.which("ldd")
    if lib is None or ldd is None:
        return None, ""
    try:
        out = subprocess.run([ldd, str(lib)], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None, ""
    return GTL_LIB.search(out), f"ldd {lib.name}"


def ncpus_check(site: SiteConfig, env: Mapping[str, str] | None = None,
                cpus: Iterable[int] | None = None) -> Row:
    """[doctor-ncpus] Inside a PBS job (`qsub -I`): the NCPUS the MoM set from the chunk's ncpus,
    and the CPUs the job may use (`cpus`, else this process's cpuset), against the node in the site
    file, by the rule the packed allocation's driver applies (jobs/cores.whole_node_findings). NCPUS
    other than the node's hardware threads (ALCF's `select=N` chunks get one) is a warning: the pack
    driver does not read it as the node's cores (pbs-whole-node-cores), but a tool that reads NCPUS
    or OMP_NUM_THREADS does. A cpuset lacking CPUs of the node's cores would bind runs to CPUs the
    job does not have: a failure."""
    env = os.environ if env is None else env
    if site.scheduler != "pbs":
        return "n/a", "not a PBS site", False
    if not env.get("PBS_JOBID"):
        return "not run", (f"outside a PBS job: run `hpcbench doctor --site {site.name}` inside "
                           "`qsub -I` (the queue and select the site's jobs use) to see the job's NCPUS"), False
    queue = env.get("PBS_QUEUE", "")
    part = next((p for p in site.partitions if queue and p.name == queue), None) or \
        (site.partition_for(site.variants[0].name) if site.variants else None)
    if part is None or not part.cores_per_node:
        return "not run", "the site file declares no cores_per_node to compare with", False
    cores, threads = part.cores_per_node + len(part.reserved_cores), part.threads_per_core
    have = set(cpus) if cpus is not None else os.sched_getaffinity(0)
    ncpus = env.get("NCPUS", "")
    where = f"queue {queue or '?'} (partition {part.name}: {cores} cores x {threads} threads)"
    found = whole_node_findings(ncpus, part.hardware_threads, part.layout(), have)
    if "cpuset" in found:
        return "FAILED", (f"{found['cpuset']} ({len(have)} CPUs in {where}): packed runs would be bound to CPUs "
                          "this job does not have; ask the whole node"), True
    if "ncpus" in found:
        return "WARNING", (f"NCPUS={ncpus or '(unset)'} (OMP_NUM_THREADS={env.get('OMP_NUM_THREADS', '?')}) in "
                           f"{where}: {found['ncpus']}; the MoM sets it from the chunk's ncpus (one where the "
                           f"select asks none), a program reading NCPUS sees {ncpus or 'nothing'}; "
                           f"{len(have)} CPUs usable"), False
    return "ok", f"NCPUS={ncpus}, {len(have)} CPUs usable in {where}", False


def inherited_env_check(site: SiteConfig, env: Mapping[str, str] | None = None) -> list[tuple[str, Row]]:
    """[doctor-inherited-env] The environment doctor runs in is the one a batch job inherits (sbatch
    exports it; a PBS job's login shell loads the same defaults): a GPU accelerator target in it
    (CRAY_ACCEL_TARGET, a loaded craype-accel-* module, MPICH_GPU_SUPPORT_ENABLED=1) reaches a CPU
    variant's jobs unless their lines unload or unset it. GPU-aware MPI there is fatal (programs
    built without the GTL abort in MPI_Init); an accelerator target alone is a warning (the cc
    wrapper would build for the GPU). One row per CPU variant."""
    env = os.environ if env is None else env
    target = env.get("CRAY_ACCEL_TARGET", "")
    modules = sorted(set(ACCEL_MODULE.findall(env.get("LOADEDMODULES", ""))))
    gpu_mpi = env.get("MPICH_GPU_SUPPORT_ENABLED", "") == "1"
    rows = []
    for v in site.variants:
        if v.is_gpu():
            continue
        lines = site.setup_for(v.name)
        unloads = any(re.search(r"\bmodule\s+unload\b.*\bcraype-accel-", ln) for ln in lines)
        unsets_target = unloads or any(re.search(r"\bunset\b.*\bCRAY_ACCEL_TARGET\b", ln) for ln in lines)
        clears_mpi = any(re.search(r"\bunset\b.*\bMPICH_GPU_SUPPORT_ENABLED\b|MPICH_GPU_SUPPORT_ENABLED=['\"]?0",
                                   ln) for ln in lines)
        accel = [*([f"CRAY_ACCEL_TARGET={target}"] if target and not unsets_target else []),
                 *([f"module {m}" for m in modules] if not unloads else [])]
        if gpu_mpi and not clears_mpi:
            rows.append((v.name, ("FAILED", (f"this environment has MPICH_GPU_SUPPORT_ENABLED=1 and variant {v.name!r} "
                                             "(a CPU build, no GTL) does not unset it: its programs would abort in "
                                             "MPI_Init ('GTL library is not linked'); unset it (or unload the module "
                                             "that sets it: Perlmutter's gpu) before submitting, or in the variant's "
                                             "setup"), True)))
        elif accel:
            why = (f"this environment has {', '.join(accel)}, which variant {v.name!r} (a CPU build) does not "
                   "unload or unset: Cray's cc wrapper would compile for the GPU and link the GTL, and the module "
                   "that loads it may switch on GPU-aware MPI; add `module unload craype-accel-...` and `unset "
                   "CRAY_ACCEL_TARGET` to the variant's setup (as Perlmutter's cpu variant does) or unload it "
                   "before submitting")
            rows.append((v.name, ("WARNING", why, False)))
        elif target or modules or gpu_mpi:
            rows.append((v.name, ("ok", f"inherits {target or ', '.join(modules) or 'GPU-aware MPI'}; the variant's "
                                        "lines unload/unset it", False)))
        else:
            rows.append((v.name, ("ok", "inherits no GPU accelerator target", False)))
    return rows
