"""`hpcbench mcp`: the compile/run tools of the paper's MCP server.

Tool-using agents build and run against the same PETSc as the evaluation, with
the same limits and isolation, because both tools are hpcbench.agents.sandbox, which is
the jobs code (PETSc makefiles, the site's launcher, rlimits, output caps,
wall-clock limits, process-group kill). Compiler errors, bad file names and runs
stopped at their limit come back as data in the tool result, not as protocol
errors, so an agent can read and act on them.

Works with the mcp SDK 2.x (`MCPServer`) and 1.x (`FastMCP`, same decorator API)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hpcbench.agents.sandbox import MAX_RANKS, MAX_TIME_LIMIT_S, Sandbox

INSTRUCTIONS = (
    "PETSc build-and-run tools. `compile` builds C sources with PETSc's makefiles and returns a build_id "
    "(or the compiler errors); `run` starts that build under mpiexec with command-line args at a rank count "
    f"(1..{MAX_RANKS}) with a wall-clock limit (at most {MAX_TIME_LIMIT_S:g} s), and returns exit code, "
    "stdout, stderr and why it stopped."
)


def _server_class() -> Any:
    try:
        from mcp.server.mcpserver import MCPServer

        return MCPServer
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP  # type: ignore[attr-defined]  # mcp 2.x (typed) has none

        return FastMCP


def build_server(sandbox: Sandbox, **server_kw: Any) -> Any:
    import anyio

    server = _server_class()("hpcbench", instructions=INSTRUCTIONS, **server_kw)

    @server.tool(name="compile", description="Build PETSc C sources. files: {name: source text}; entry: the file "
                 "with main(). Returns ok, build_id, errors, warnings, stdout, stderr.")
    async def compile_tool(files: dict[str, str], entry: str = "main.c") -> dict[str, Any]:
        return await anyio.to_thread.run_sync(sandbox.compile, files, entry)

    @server.tool(name="run", description="Run a build from `compile`: args (list of strings), ranks, "
                 "time_limit_s. Returns ok, exit_code, signal, timed_out, stopped_reason, stdout, stderr, wall_s.")
    async def run_tool(build_id: str, args: list[str] | None = None, ranks: int = 1,
                       time_limit_s: float = 60.0) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(sandbox.run, build_id, list(args or []), ranks, time_limit_s)

    return server


def serve(site_name: str, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765,
          workdir: Path | None = None) -> None:
    from hpcbench.site import load_site

    sandbox = Sandbox.for_site(load_site(site_name), workdir)
    if transport == "stdio":
        build_server(sandbox).run("stdio")
        return
    cls = _server_class()
    if cls.__name__ == "FastMCP":  # 1.x takes host and port as settings
        build_server(sandbox, host=host, port=port).run("streamable-http")
    else:
        build_server(sandbox).run("streamable-http", host=host, port=port)
