"""`hpcbench doctor --site`: what a site has and lacks before an allocation is spent
(scheduler commands, account, each PETSc variant, compilers, an MPI hello through
the launcher, the sandbox) and which problems that rules out. The command prints
the rows (hpcbench/cli/doctor.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hpcbench.doctor_machine import gtl_link_check, inherited_env_check, ncpus_check
from hpcbench.errors import HpcbenchError
from hpcbench.executors.shapes import resolve_account
from hpcbench.plan.campaign import choose_variant
from hpcbench.plan.installs import resolve_installs
from hpcbench.problem import load_problems
from hpcbench.site import SiteConfig

OK_STATES = ("ok", "not run", "n/a")


@dataclass
class DoctorReport:
    """Rows (what, status, detail); `failed` counts the required rows that are not ok."""

    rows: list[tuple[str, str, str]] = field(default_factory=list)
    ruled_out: list[tuple[str, str]] = field(default_factory=list)  # (problem, why)
    failed: int = 0

    def row(self, what: str, status: str, detail: str, required: bool = True) -> None:
        self.rows.append((what, status, detail))
        self.failed += required and status not in OK_STATES


HELLO_MPI = r"""#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  int r, n;
  MPI_Init(&argc, &argv); MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (r == 0) printf("ranks: %d\n", n);
  MPI_Finalize(); return 0;
}
"""


def _first_line(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return ((p.stdout or p.stderr).strip().splitlines() or [""])[0]
    except (OSError, subprocess.SubprocessError):
        return ""


def launcher_check(site, account: str) -> tuple[str, str]:
    """A 2-rank MPI hello through the site's launcher: directly where the site allows it
    (local, or batch.login_node_mpi); otherwise as the scheduler's executor says
    (Executor.login_launch: on Slurm srun makes it a one-job allocation; PBS cannot)."""
    from hpcbench.executors import executor_class
    from hpcbench.jobs.launch import launch_argv, mpi_env

    argv, _ = launch_argv(site.launcher, 2, site.total_cores(), ["hello"])
    launch = executor_class(site.scheduler).login_launch(site, argv, account)
    if isinstance(launch, str):
        return "not run", launch
    mpicc = shutil.which("mpicc")
    if not mpicc:
        return "MISSING", "mpicc not found: cannot build the MPI check"
    with tempfile.TemporaryDirectory(prefix="hpcbench-doctor-", dir=Path.cwd()) as tmp:
        src = Path(tmp) / "hello.c"
        src.write_text(HELLO_MPI)
        b = subprocess.run([mpicc, str(src), "-o", str(Path(tmp) / "hello")], capture_output=True, text=True)
        if b.returncode != 0:
            return "FAILED", f"mpicc: {b.stderr.strip()[-300:]}"
        argv = [*launch[:-1], str(Path(tmp) / "hello")]
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=180, cwd=tmp,
                               env={**os.environ, **mpi_env()})
        except subprocess.TimeoutExpired:
            return "FAILED", f"{' '.join(argv)}: no answer in 180 s"
        except OSError as e:
            return "FAILED", f"{argv[0]}: {e}"
        if p.returncode == 0 and "ranks: 2" in p.stdout:
            return "ok", f"{' '.join(argv[:-1])} <hello>: 2 ranks"
        return "FAILED", f"{' '.join(argv[:-1])}: exit {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}"


def isolation_check(site) -> tuple[str, str]:
    """The sandbox every build and run gets (docs/security.md), and whether it starts here."""
    from hpcbench.jobs.cgroup import StepCgroup
    from hpcbench.jobs.sandbox import bwrap_works

    cg = StepCgroup.create(8, 64)
    limits = ("memory, pids per step (cgroup)" if cg and cg.limits_memory else
              "pids per step (cgroup), memory per process (rlimit)" if cg else "rlimits per process (no cgroup)")
    if cg:
        cg.remove()
    if site.isolation == "none":
        return "WARNING", (f"none: agents' programs would run with your rights: run/submit refuse them without "
                           f"--trust-submissions, reports warn; limits: {limits}")
    if site.isolation == "apptainer":
        exe = shutil.which("apptainer")
        where = exe or "not on this node (compute nodes may have it: module load apptainer)"
        return ("ok" if exe else "not run"), f"image {site.isolation_image}; apptainer: {where}; limits: {limits}"
    ok, detail = bwrap_works()
    per = "each rank wrapped (launcher outside)" if site.sandbox().per_rank else "one sandbox per step"
    return ("ok" if ok else "FAILED"), f"{detail}: {per}; limits: {limits}; {disk_check(site)}" if ok else detail


def disk_check(site) -> str:
    """How a step's disk limit is held here (jobs/disk_cap.py): by the kernel where bwrap sizes a
    tmpfs and the step is one sandbox started by us, else by the watch every 0.2 s."""
    from hpcbench.jobs.sandbox import bwrap_sizes_tmpfs

    if not bwrap_sizes_tmpfs():
        return "disk limit: watched every 0.2 s (this bwrap has no --size: a size-capped tmpfs needs 0.5+)"
    tmpfs = f"a tmpfs of disk_mb = {site.limits.disk_mb} MB per step, bwrap --size"
    if site.sandbox().per_rank:
        return (f"disk limit: builds kernel ({tmpfs}); runs watched every 0.2 s (each rank its own sandbox, "
                "the ranks' folders shared)")
    return f"disk limit: kernel ({tmpfs})"


def isolation_candidates() -> list[tuple[str, str, str]]:
    """Which sandbox works on this node, whatever the site file says: bubblewrap (from PATH: the
    system's or a Spack view's, where user namespaces are allowed) and Apptainer (docs/sites.md,
    isolation-site). Rows (what, status, detail); informational."""
    from hpcbench.jobs.sandbox import bwrap_works

    ok, detail = bwrap_works()
    rows = [("  bwrap here", "ok" if ok else "no", f"works: {detail}" if ok else detail)]
    exe = shutil.which("apptainer")
    if exe is None:
        rows.append(("  apptainer here", "no", "not on PATH (ALCF/OLCF compute nodes: module load apptainer)"))
    else:
        version = _first_line([exe, "--version"])
        rows.append(("  apptainer here", "ok" if version else "no", f"{exe}: {version or 'does not start'}"))
    return rows


def scheduler_rows(rep: DoctorReport, site: SiteConfig, account: str | None) -> str:
    """The scheduler's commands and the account to charge; returns the account."""
    rep.row("site", "ok", f"{site.name} ({site.scheduler}): {site.description}")
    from hpcbench.executors import executor_class

    for tool in executor_class(site.scheduler).tools:
        path = shutil.which(tool)
        rep.row(f"scheduler: {tool}", "ok" if path else "MISSING", path or "not on PATH")
    if not executor_class(site.scheduler).batch:
        return ""
    try:
        acct = resolve_account(site, account)
        rep.row("account", "ok", acct or "(not required here)")
        return acct
    except HpcbenchError as e:
        rep.row("account", "MISSING", str(e))
        return ""


def petsc_rows(rep: DoctorReport, site: SiteConfig) -> dict:
    """Each variant: found, its configure options against the site's claims, its features."""
    installs = resolve_installs(site)
    for v in site.variants:
        inst = installs[v.name]
        if isinstance(inst, Exception):
            rep.row(f"PETSc [{v.name}]", "MISSING", str(inst))
            continue
        rep.row(f"PETSc [{v.name}]", "ok", f"{inst.version} at {inst.petsc_dir} arch={inst.petsc_arch or '(prefix)'}")
        missing = [c for c in v.claims if c not in inst.configure_options]
        opts = inst.configure_options
        rep.row(f"  configure [{v.name}]", "ok" if not missing else "WRONG",
                f"claims {' '.join(v.claims)} not in its configure options" if missing
                else (opts[:160] + ("..." if len(opts) > 160 else "")))
        features = set(inst.features) | set(v.provides)
        rep.row(f"  features [{v.name}]", "ok", ", ".join(sorted(features)))
        status, detail, required = gtl_link_check(site, v.name, inst, features)
        rep.row(f"  GTL [{v.name}]", status, detail, required=required)
    return installs


def machine_rows(rep: DoctorReport, site: SiteConfig) -> None:
    """What a job on this machine is given (hpcbench/doctor_machine.py): a PBS job's NCPUS and
    cpuset, and the environment a batch job inherits, per CPU variant."""
    status, detail, required = ncpus_check(site)
    rep.row("NCPUS (PBS job)", status, detail, required=required)
    for name, (status, detail, required) in inherited_env_check(site):
        rep.row(f"inherited env [{name}]", status, detail, required=required)


def tool_rows(rep: DoctorReport) -> None:
    for tool in ("mpicc", "mpiexec", "make", "valgrind"):
        path = shutil.which(tool)
        rep.row(tool, "ok" if path else "MISSING", _first_line([path, "--version"]) if path else "not on PATH",
                required=tool != "valgrind")  # valgrind only lowers the memory gate's confidence


def doctor(site: SiteConfig, account: str | None, run_launcher: bool = True) -> DoctorReport:
    """What is present and missing for a site and which problems that rules out."""
    rep = DoctorReport()
    acct = scheduler_rows(rep, site, account)
    installs = petsc_rows(rep, site)
    machine_rows(rep, site)
    tool_rows(rep)
    if run_launcher:
        rep.row("launcher", *launcher_check(site, acct))
        from hpcbench.machine_baseline import doctor_points

        status, lines = doctor_points(site, acct)
        for i, ln in enumerate(lines):  # the machine's own numbers; efficiency is read against them
            rep.row("machine baseline (mpi4py)" if i == 0 else "", status if i == 0 else "", ln, required=False)
    rep.row(f"isolation: {site.isolation}", *isolation_check(site))
    for what, status, detail in isolation_candidates():
        rep.row(what, status, detail, required=False)
    for pid, b in load_problems().items():
        got = choose_variant(b, site, installs)
        if isinstance(got, str):
            rep.ruled_out.append((pid, got))
        else:
            rep.rows.append((f"problem {pid}", "ok", f"variant {got[0].name}"))
    return rep
