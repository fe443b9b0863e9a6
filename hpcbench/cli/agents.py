"""CLI commands for agents under test: `hpcbench generate` and `hpcbench mcp`."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import click

# what generating agents write (generate, run, submit)
language_option = click.option(
    "--language", type=click.Choice(["c", "python"]), default="c", show_default=True,
    help="what generating agents write: C, or Python with petsc4py (only the problems whose problem.json "
         "languages accept it; docs/python.md)")


@click.command()
@click.option("--agent", "agents", multiple=True, required=True,
              help="reference | samples | dir:PATH | litellm:MODEL | a2a:URL | repair:INNER:N (repeatable)")
@click.option("--problems", "problem_ids", help="comma-separated problem ids (default: all)")
@click.option("--attempts", default=1, show_default=True, type=click.IntRange(1, 1000),
              help="attempts per problem for generating agents (replays copy what they hold)")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="submission tree to write")
@click.option("--base-url", help="OpenAI-compatible endpoint for litellm:MODEL (e.g. http://host:8000/v1)")
@click.option("--api-key-env", default="HPCBENCH_API_KEY", show_default=True,
              help="environment variable holding the API key for --base-url")
@click.option("--max-tokens", default=32000, show_default=True, type=click.IntRange(256, 1_000_000),
              help="completion-token limit of litellm generations")
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(1, 256),
              help="attempts generated at once, over all agents")
@click.option("--timeout", "timeout_s", default=900.0, show_default=True, type=click.FloatRange(1, 86400),
              help="seconds one attempt may take (all its turns)")
@click.option("--retry-failed", is_flag=True, help="regenerate attempts recorded as failed generations")
@click.option("--site", default="local", show_default=True, help="site whose PETSc the repair agent builds with")
@language_option
def generate(agents, problem_ids, attempts, out, base_url, api_key_env, max_tokens, concurrency, timeout_s,
             retry_failed, site, language) -> None:
    """Write submissions <out>/<agent>/<problem>/<attempt>/ from agents under test.

    Finished attempts are not regenerated; a failed generation is recorded in its
    submission.json (generation_error) and the rest goes on. An infrastructure error
    (no key, outage, quota) is no attempt: it is kept in OUT/.errors, the command exits 1,
    and running it again asks for exactly those. Then: `hpcbench submit --submissions OUT`."""
    import os

    from hpcbench.agents import AgentOptions, make_agent
    from hpcbench.agents.generate import PreflightError, preflight
    from hpcbench.agents.generate import generate_submissions as run_generate
    from hpcbench.cli.progress import GENERATE, Display
    from hpcbench.plan.gather import accepting
    from hpcbench.problem import known_problem_ids, load_problems, parse_ids

    bundles, other = accepting(load_problems(None, parse_ids(problem_ids)), language)
    if other:
        click.echo(f"--language {language}: {len(other)} problem(s) do not accept it, left out: "
                   f"{', '.join(other)}", err=True)
    if not bundles:
        raise click.UsageError(f"--language {language}: none of the problems asked accepts it (problem.json languages)")
    known = known_problem_ids()
    opts = AgentOptions(base_url=base_url, api_key=os.environ.get(api_key_env), max_tokens=max_tokens,
                        timeout_s=timeout_s, site=site, language=language)
    made = [make_agent(a, bundles, known, opts) for a in agents]

    async def checked():
        bad = await preflight(made)
        if bad:
            raise PreflightError(bad)
        return await run_generate(made, bundles, attempts, Path(out), concurrency=concurrency,
                                  timeout_s=timeout_s, retry_failed=retry_failed, progress=progress)

    with Display(GENERATE) as progress:
        summary = asyncio.run(checked())
    echo_summary(out, summary)
    if summary.errors:
        click.echo(f"hpcbench: the same command asks again for exactly these {len(summary.errors)} attempt(s) "
                   "once the cause is fixed", err=True)
        raise SystemExit(1)


def echo_summary(out: str, summary) -> None:
    for r in summary.rejected:
        click.echo(f"rejected: {r}", err=True)
    w = summary.written
    click.echo(f"{out}: agents {', '.join(summary.agents) or '-'}; {w['ok']} generated, {w['refused']} refused, "
               f"{w['failed']} failed, {len(summary.errors)} errors, {w['replayed']} replayed, "
               f"{summary.skipped} already there")
    for kind, n in sorted(summary.failures.items()):
        click.echo(f"  failed generations: {kind}: {n}")
    for cause, n in Counter(f"{e.kind}: {e.cause}" for e in summary.errors).most_common():
        click.echo(f"hpcbench: error: {n} attempt(s) not made, infrastructure error (not a failure of the agent, "
                   f"not scored): {cause}", err=True)


@click.command()
@click.option("--site", default="local", show_default=True, help="site whose PETSc, launcher and limits to use")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="http transport: address to listen on")
@click.option("--port", default=8765, show_default=True, type=int, help="http transport: port")
@click.option("--out", "--workdir", "workdir", type=click.Path(file_okay=False),
              help="where builds live (default: a temp folder)")
def mcp(site, transport, host, port, workdir) -> None:
    """MCP server with `compile` and `run` tools on this site's PETSc, with the
    jobs' limits and isolation (stdio, or streamable HTTP at /mcp)."""
    from hpcbench.agents.mcp_server import serve
    from hpcbench.cli.terminal import raw_stdout

    with raw_stdout():  # stdio's stdout is the JSON-RPC channel (the server writes sys.stdout.buffer)
        serve(site, transport, host, port, Path(workdir) if workdir else None)


def register(main: click.Group) -> None:
    main.add_command(generate)
    main.add_command(mcp)
