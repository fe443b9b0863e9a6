"""The `hpcbench` command line: thin commands, one module per group of verbs.
Each module parses options, calls a stage's public API, prints, and hangs its
commands on the group with `register(main)`."""

from __future__ import annotations

import sys

import click

from hpcbench.errors import HpcbenchError


def fail(msg: str, code: int = 2) -> None:
    click.echo(f"hpcbench: error: {msg}", err=True)
    sys.exit(code)


class Main(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (HpcbenchError, FileNotFoundError, FileExistsError, LookupError, NotImplementedError) as e:
            fail(str(e))
        except KeyboardInterrupt:
            # The local executor has stopped its jobs by now; nothing unfinished was recorded as done.
            click.echo("\nhpcbench: interrupted; jobs stopped. Rerun the same command to resume.", err=True)
            sys.exit(130)


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hpcbench")
def main() -> None:
    """Build, run and score PETSc programs written by AI agents."""


def _register_all() -> None:
    from hpcbench.cli import agents, campaign, doctor, judge, lint, problems, report, score, sweep

    for module in (campaign, score, report, problems, doctor, judge, agents, lint, sweep):
        module.register(main)


_register_all()

if __name__ == "__main__":
    main()
