"""`hpcbench sites` (the bundled site configs) and `hpcbench doctor` (a site's checks)."""

from __future__ import annotations

import sys

import click


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


@click.command()
@click.option("--site", default="local", show_default=True)
@click.option("--account", help="allocation to check (default: $HPCBENCH_ACCOUNT)")
@click.option("--no-launch", is_flag=True, help="skip the 2-rank MPI program through the launcher")
def doctor(site, account, no_launch) -> None:
    """Check a site before spending an allocation: scheduler commands, account, each PETSc
    variant (version, claimed configure options, features), compilers, the launcher, and
    which problems that rules out."""
    from hpcbench.doctor import doctor as check
    from hpcbench.site import load_site

    rep = check(load_site(site), account, run_launcher=not no_launch)
    width = max(len(r[0]) for r in rep.rows)
    for what, status, detail in rep.rows:
        click.echo(f"{what:{width}s}  {status:8s} {detail}")
    for pid, why in rep.ruled_out:
        click.echo(f"{'problem ' + pid:{width}s}  {'ruled out':8s} {why}")
    click.echo(f"{rep.failed} required check(s) failed; {len(rep.ruled_out)} problem(s) ruled out"
               if rep.failed or rep.ruled_out else "all checks passed")
    sys.exit(1 if rep.failed else 0)


def register(main: click.Group) -> None:
    main.add_command(sites)
    main.add_command(doctor)
