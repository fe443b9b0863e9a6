"""CLI for sites and batch schedulers: `sites`, `wait`, `cancel`, `submit --dry-run`
and the checks of `doctor --site`. Registered in cli.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import click

SCHED_TOOLS = {"slurm": ["sbatch", "squeue", "sacct", "scancel"], "pbs": ["qsub", "qstat", "qdel"], "local": []}


def _open(campaign_dir: str):
    from hpcbench.campaign import Campaign
    from hpcbench.executors import executor_for
    from hpcbench.site import SiteConfig

    c = Campaign(Path(campaign_dir))
    site = SiteConfig.model_validate(c.manifest().site_config)
    return c, site, executor_for(site, c)


@click.command()
@click.option("-v", "--verbose", is_flag=True, help="also show partitions, variants and the launcher")
def sites(verbose) -> None:
    """List the bundled site configs (any other: --site PATH.yaml)."""
    from hpcbench.errors import ConfigError
    from hpcbench.site import list_sites, load_site, site_configs_dir

    click.echo(f"site configs in {site_configs_dir()}:")
    for name in list_sites():
        try:
            s = load_site(name)
        except ConfigError as e:
            click.echo(f"  {name:12s} INVALID: {e}")
            continue
        parts = ",".join(p.name for p in s.partitions) or "-"
        click.echo(f"  {name:12s} {s.scheduler:6s} variants={','.join(v.name for v in s.variants):18s} "
                   f"queues={parts:20s} {s.description}")
        if verbose:
            click.echo(f"      launcher: {s.launcher.template}")
            for v in s.variants:
                click.echo(f"      variant {v.name}: PETSC_DIR={v.petsc_dir} PETSC_ARCH={v.petsc_arch or '-'} "
                           f"partition={v.partition or '-'} options={' '.join(v.runtime_options) or '-'}")


_shown: list[Counter] = []


def _progress(counts: Counter) -> None:
    """Every state's count, one line per change (redrawn in place on a terminal)."""
    if _shown and _shown[-1] == counts:
        return
    _shown[:] = [counts.copy()]
    order = ["pending", "running", "retrying", "unknown", "done", "timeout", "failed", "cancelled"]
    msg = "jobs: " + ", ".join(f"{counts[k]} {k}" for k in order if counts.get(k))
    if sys.stderr.isatty():
        click.echo(f"\r{msg}   ", nl=False, err=True)
    else:
        click.echo(msg, err=True)


@click.command()
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--poll", "poll_s", type=float, help="seconds between polls (default: the site's)")
@click.option("--timeout", "timeout_s", type=float, help="give up after this many seconds (jobs keep running)")
def wait(campaign_dir, poll_s, timeout_s) -> None:
    """Follow a campaign's jobs until none is queued or running; resubmit node failures."""
    c, site, ex = _open(campaign_dir)
    specs = c.specs()
    if not hasattr(ex, "wait"):
        states = ex.states(specs)
    else:
        states = ex.wait(specs, progress=_progress, poll_s=poll_s, max_wait_s=timeout_s)
    click.echo("", err=True)
    counts = Counter(states.values())
    click.echo(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "no jobs")
    for jid, st in sorted(states.items()):
        if st != "done":
            click.echo(f"  {st:9s} {jid}")
    if counts.get("cancelled"):
        click.echo(f"rerun the cancelled jobs with: hpcbench submit --resume --site {site.name} --out {c.root} ...")


@click.command()
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--job", "job_ids", multiple=True, help="job id (agent__problem__attempt); default: all")
def cancel(campaign_dir, job_ids) -> None:
    """Cancel a campaign's queued and running jobs (or the --job ones)."""
    from hpcbench.errors import HpcbenchError

    c, site, ex = _open(campaign_dir)
    specs = c.specs()
    if job_ids:
        known = {s.job_id for s in specs}
        unknown = [j for j in job_ids if j not in known]
        if unknown:
            raise HpcbenchError(f"--job {', '.join(unknown)}: not in {c.root} (jobs: {', '.join(sorted(known))})")
        specs = [s for s in specs if s.job_id in job_ids]
    n = ex.cancel(specs)
    click.echo(f"cancelled {n} job(s); `hpcbench submit --resume` reruns them")


def declared_installs(site) -> dict:
    """What a site says its PETSc variants are, for planning where they cannot be looked at
    (a dry run for a cluster on a laptop). Checked for real by `doctor --site` there."""
    from hpcbench.campaign import resolve_variant
    from hpcbench.petsc_env import PetscInstall

    out = {}
    for v in site.variants:
        try:
            out[v.name] = resolve_variant(v)
        except FileNotFoundError:
            feats = {"tao", "ts", "dmplex", "dmstag", "petscfe", *v.provides}  # in every full PETSc build
            feats |= {f for f, flag in (("cuda", "--with-cuda"), ("kokkos", "--with-kokkos"), ("hip", "--with-hip"))
                      if any(c.startswith(flag) for c in v.claims)}
            out[v.name] = PetscInstall(petsc_dir=Path(v.petsc_dir), petsc_arch=v.petsc_arch, version="",
                                       configure_options=" ".join(v.claims), features=frozenset(feats))
    return out


def dry_run(out: str, site_name: str, agents: list[str], submissions: str | None, problem_ids: str | None,
            account: str | None, pack: bool | None = None) -> None:
    from hpcbench.cli import _plan
    from hpcbench.executors import executor_for
    from hpcbench.site import load_site

    site = load_site(site_name)
    s, campaign, plan = _plan(out, site_name, agents, submissions, problem_ids, installs=declared_installs(site))
    from hpcbench.executors.pack import plan_launch_lines
    from hpcbench.executors.shapes import ArrayPlan, Shape

    ex = executor_for(s, campaign)
    if not hasattr(ex, "dry_run"):
        click.echo(f"site {s.name!r} runs jobs on this machine ({len(plan.jobs)} planned): no batch scripts; "
                   "launch commands:")
        click.echo("\n".join(plan_launch_lines(ArrayPlan(Shape("", s.total_cores(), 0, ""), plan.jobs, 0, None), s)))
        return
    ex.account = account
    ex.pack = pack
    scripts = ex.dry_run(plan.jobs)
    for p, text in scripts:
        nodes = f", {p.nodes} node(s) packed" if hasattr(p, "nodes") else ""
        click.echo(f"# ===== {p.name}: {len(p.jobs)} job(s){nodes}, {p.walltime_min} min, partition "
                   f"{p.shape.partition or '(default)'} =====")
        click.echo(text)
        click.echo(f"# ----- launch commands of {p.name} (<app>: the job's build, <null>: launcher calibration) -----")
        click.echo("\n".join(plan_launch_lines(p, s)) + "\n")
    click.echo(f"dry run: {len(scripts)} batch script(s) for {len(plan.jobs)} jobs; nothing submitted. "
               f"Campaign planned in {campaign.root}", err=True)


# ----------------------------------------------------------------------------- doctor

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
    (local, or batch.login_node_mpi); on Slurm, srun makes it a one-job allocation; PBS
    has no such shortcut (say so)."""
    from hpcbench.jobs.launch import launch_argv, mpi_env

    if site.scheduler == "pbs" and not site.batch.login_node_mpi:
        return "not run", "PBS: launch needs an allocation; check with `qsub -I` and the launcher template"
    mpicc = shutil.which("mpicc")
    if not mpicc:
        return "MISSING", "mpicc not found: cannot build the MPI check"
    with tempfile.TemporaryDirectory(prefix="hpcbench-doctor-", dir=Path.cwd()) as tmp:
        src = Path(tmp) / "hello.c"
        src.write_text(HELLO_MPI)
        b = subprocess.run([mpicc, str(src), "-o", str(Path(tmp) / "hello")], capture_output=True, text=True)
        if b.returncode != 0:
            return "FAILED", f"mpicc: {b.stderr.strip()[-300:]}"
        argv, _ = launch_argv(site.launcher, 2, site.total_cores(), [str(Path(tmp) / "hello")])
        if site.scheduler == "slurm" and not site.batch.login_node_mpi and argv[0] == "srun":
            part = site.partitions[0]
            argv[1:1] = ["-t", "2", "-p", part.name, *(["-A", account] if account else []),
                         *(["-C", part.constraint] if part.constraint else [])]
        import os

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
        return "WARNING", f"none: untrusted programs run with your rights, reports warn; limits: {limits}"
    if site.isolation == "apptainer":
        exe = shutil.which("apptainer")
        where = exe or "not on this node (compute nodes may have it: module load apptainer)"
        return ("ok" if exe else "not run"), f"image {site.isolation_image}; apptainer: {where}; limits: {limits}"
    ok, detail = bwrap_works()
    per = "each rank wrapped (launcher outside)" if site.sandbox().per_rank else "one sandbox per step"
    return ("ok" if ok else "FAILED"), f"{detail}: {per}; limits: {limits}" if ok else detail


def doctor_report(site_name: str, account: str | None, run_launcher: bool = True) -> int:
    """Print what is present and missing for a site and which problems that rules out."""
    from hpcbench.campaign import choose_variant, resolve_variant
    from hpcbench.errors import HpcbenchError
    from hpcbench.executors.shapes import resolve_account
    from hpcbench.problem import load_problems
    from hpcbench.site import load_site

    site = load_site(site_name)
    rows: list[tuple[str, str, str]] = []
    bad = 0

    def row(what: str, status: str, detail: str, required: bool = True) -> None:
        nonlocal bad
        rows.append((what, status, detail))
        bad += required and status not in ("ok", "not run", "n/a")

    row("site", "ok", f"{site.name} ({site.scheduler}): {site.description}")
    for tool in SCHED_TOOLS[site.scheduler]:
        path = shutil.which(tool)
        row(f"scheduler: {tool}", "ok" if path else "MISSING", path or "not on PATH")
    acct = ""
    if site.scheduler != "local":
        try:
            acct = resolve_account(site, account)
            row("account", "ok", acct or "(not required here)")
        except HpcbenchError as e:
            row("account", "MISSING", str(e))
    installs: dict = {}
    for v in site.variants:
        try:
            inst = resolve_variant(v)
            installs[v.name] = inst
            row(f"PETSc [{v.name}]", "ok", f"{inst.version} at {inst.petsc_dir} arch={inst.petsc_arch or '(prefix)'}")
            missing = [c for c in v.claims if c not in inst.configure_options]
            row(f"  configure [{v.name}]", "ok" if not missing else "WRONG",
                f"claims {' '.join(v.claims)} not in its configure options" if missing
                else (inst.configure_options[:160] + ("..." if len(inst.configure_options) > 160 else "")))
            row(f"  features [{v.name}]", "ok", ", ".join(sorted(set(inst.features) | set(v.provides))))
        except FileNotFoundError as e:
            installs[v.name] = e
            row(f"PETSc [{v.name}]", "MISSING", str(e))
    for tool, args in (("mpicc", ["--version"]), ("mpiexec", ["--version"]), ("make", ["--version"]),
                       ("valgrind", ["--version"])):
        path = shutil.which(tool)
        row(tool, "ok" if path else "MISSING", _first_line([path, *args]) if path else "not on PATH",
            required=tool != "valgrind")  # valgrind only lowers the memory gate's confidence
    if run_launcher:
        status, detail = launcher_check(site, acct)
        row("launcher", status, detail)
        from hpcbench.machine_baseline import doctor_points

        status, lines = doctor_points(site, acct)
        for i, ln in enumerate(lines):  # the machine's own numbers; efficiency is read against them
            row("machine baseline (mpi4py)" if i == 0 else "", status if i == 0 else "", ln, required=False)
    status, detail = isolation_check(site)
    row(f"isolation: {site.isolation}", status, detail)
    ruled_out = []
    for pid, b in load_problems().items():
        got = choose_variant(b, site, installs)
        if isinstance(got, str):
            ruled_out.append((pid, got))
        else:
            rows.append((f"problem {pid}", "ok", f"variant {got[0].name}"))
    width = max(len(r[0]) for r in rows)
    for what, status, detail in rows:
        click.echo(f"{what:{width}s}  {status:8s} {detail}")
    for pid, why in ruled_out:
        click.echo(f"{'problem ' + pid:{width}s}  {'ruled out':8s} {why}")
    click.echo(f"{bad} required check(s) failed; {len(ruled_out)} problem(s) ruled out" if bad or ruled_out
               else "all checks passed")
    return bad


def register(main: click.Group) -> None:
    for cmd in (sites, wait, cancel):
        main.add_command(cmd)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(0)
