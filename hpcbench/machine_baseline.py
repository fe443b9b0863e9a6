"""The machine's own baseline from where hpcbench runs (jobs/baseline.py measures it; inside a
packed allocation its driver calls it there):

    measure_locally(site, ranks_list, out_path)  here, with the site's launcher (local sweeps)
    doctor_points(site, account)                 `doctor --site`: through the scheduler's login launch
"""

from __future__ import annotations

from pathlib import Path

from hpcbench.jobs.baseline import program, run_point, write_baseline


def measure_locally(site, ranks_list: list[int], out_path: Path, variant: str | None = None,
            env: dict[str, str] | None = None) -> dict:
    """Measure here with the site's launcher (no allocation around it) and write the file.
    `variant`: whose launcher (default: the site's first variant); `env`: added to its
    environment (a sweep's runs yield while they wait: hpcbench/profile.py)."""
    from hpcbench.jobs.launch import launch_argv

    variant = variant or (site.variants[0].name if site.variants else "cpu")
    launcher = site.launcher_for(variant)
    if env:
        launcher = launcher.model_copy(update={"env": {**env, **launcher.env}})
    points = []
    for r in sorted(set(ranks_list)):
        argv, over = launch_argv(launcher, r, site.total_cores(), program(site.batch.python))
        points.append(run_point(argv, r, over))
    return write_baseline(out_path, variant, launcher, points)


def doctor_points(site, account: str, ranks_list: tuple[int, ...] = (1, 2)) -> tuple[str, list[str]]:
    """`doctor --site`: the baseline through the site's launcher where it can run from here
    (local, batch.login_node_mpi, or Slurm's srun making a small allocation of its own);
    PBS needs an allocation (the packed allocation measures it before its jobs). How to
    launch from here is the executor's (Executor.login_launch), as for doctor's MPI check."""
    from hpcbench.executors import executor_class
    from hpcbench.jobs.launch import launch_argv

    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "MISSING", ["mpi4py is not installed (scripts/setup.sh installs it; clusters: py-mpi4py in spack.yaml)"]
    lines, bad = [], False
    for r in ranks_list:
        argv, over = launch_argv(site.launcher, r, site.total_cores(), program(site.batch.python))
        launch = executor_class(site.scheduler).login_launch(site, argv, account)
        if isinstance(launch, str):
            return "not run", [f"{launch}; measured inside each packed allocation "
                               "(<campaign>/machine/baseline-<variant>.json)"]
        pt = run_point(launch, r, over)
        if pt.get("error"):
            bad = True
            lines.append(f"{r} rank(s): {pt['error']}")
            continue
        lat = pt.get("pingpong_latency_us")
        bw = pt.get("pingpong_bandwidth_MBps")
        pp = f"ping-pong {lat:.2f} us, {bw:.0f} MB/s; " if lat is not None else ""
        lines.append(f"{r} rank(s) on {pt['nodes']} node(s): {pp}allreduce 8 B {pt['allreduce_8B_us']:.2f} us, "
                     f"1 MB {pt['allreduce_1MB_us']:.0f} us" + (" (oversubscribed)" if over else ""))
    return ("FAILED" if bad else "ok"), lines
