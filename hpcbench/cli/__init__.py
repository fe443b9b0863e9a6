"""The `hpcbench` command line: thin commands, one module per group of verbs.
Each module parses options, calls a stage's public API, prints, and hangs its
commands on the group with `register(main)`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hpcbench.cli import terminal
from hpcbench.errors import HpcbenchError, env_number


def fail(msg: str, code: int = 2) -> None:
    click.echo(f"hpcbench: error: {msg}", err=True)
    sys.exit(code)


# Numbers hpcbench reads from the environment: checked before any verb starts, so a bad value
# is named at once rather than when (and if) the verb first needs it.
NUMERIC_ENV = {"HPCBENCH_STORE_LOCK_TIMEOUT": (1800.0, False), "HPCBENCH_SCORE_WORKERS": (0.0, True)}


class Main(click.Group):
    def invoke(self, ctx: click.Context):
        with terminal.guarded():  # whatever a command prints, no control sequence reaches the terminal
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context):
        try:
            for name, (default, integer) in NUMERIC_ENV.items():
                env_number(name, default, integer=integer)
            return super().invoke(ctx)
        except (HpcbenchError, FileNotFoundError, FileExistsError, LookupError, NotImplementedError) as e:
            fail(str(e))
        except OSError as e:  # a full disk met by a verb that does not name its campaign (report, ...)
            from hpcbench.jobs.diskfull import full_message, is_disk_full_error

            if not is_disk_full_error(e):
                raise
            where = Path(e.filename) if isinstance(e.filename, str) else Path.cwd()
            fail(f"{full_message(where, e.strerror or str(e))}; nothing after that point was written. "
                 "Free space and rerun the command.")
        except KeyboardInterrupt:
            # The local executor has stopped its jobs by now; nothing unfinished was recorded as done.
            click.echo("\nhpcbench: interrupted; jobs stopped. Rerun the same command to resume.", err=True)
            sys.exit(130)


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hpcbench")
def main() -> None:
    """Build, run and score PETSc programs written by AI agents."""


def _register_all() -> None:
    from hpcbench.cli import agents, campaign, doctor, judge, lint, problems, report, score, stats, sweep

    for module in (campaign, score, report, stats, problems, doctor, judge, agents, lint, sweep):
        module.register(main)


_register_all()

if __name__ == "__main__":
    main()
