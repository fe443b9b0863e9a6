"""`hpcbench mcp` through the mcp client over stdio, on real PETSc and MPI:
compile errors come back as data, a program builds and runs, a run over its
wall-clock limit is stopped, bad file names never reach the disk."""

import asyncio
import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.petsc

OK = r"""#include <petscsys.h>
int main(int argc, char **argv)
{
  PetscMPIInt size;
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "ranks: %d\n", size));
  PetscCall(PetscFinalize());
  return 0;
}
"""
BROKEN = ("#include <petscsys.h>\nint main(int argc, char **argv)\n{\n"
          "  PetscCall(PetscInitialise(&argc));\n  return 0;\n}\n")
HANG = r"""#include <petscsys.h>
#include <unistd.h>
int main(int argc, char **argv)
{
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  for (;;) sleep(1);
  PetscCall(PetscFinalize());
  return 0;
}
"""


# PETSc calls PetscMallocDump through its PLT: a program's own definition would take over
# -malloc_dump's report (jobs/interposition.py refuses such a binary)
REPLACES = "PetscErrorCode PetscMallocDump(FILE *fp)\n{\n  (void)fp;\n  return PETSC_SUCCESS;\n}\n"


def _result(res) -> dict:
    assert not getattr(res, "is_error", getattr(res, "isError", False)), res
    return json.loads(res.content[0].text)


async def _session_calls(workdir: Path) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    exe = Path(sys.executable).parent / "hpcbench"
    params = StdioServerParameters(command=str(exe), args=["mcp", "--site", "local", "--workdir", str(workdir)])
    out: dict = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        out["tools"] = sorted(t.name for t in (await s.list_tools()).tools)
        out["broken"] = _result(await s.call_tool("compile", {"files": {"main.c": BROKEN}, "entry": "main.c"}))
        out["escape"] = _result(await s.call_tool("compile", {"files": {"../x.c": OK}, "entry": "../x.c"}))
        ok = _result(await s.call_tool("compile", {"files": {"main.c": OK}, "entry": "main.c"}))
        out["ok"] = ok
        out["run"] = _result(await s.call_tool("run", {"build_id": ok["build_id"], "ranks": 2}))
        hang = _result(await s.call_tool("compile", {"files": {"hang.c": HANG}, "entry": "hang.c"}))
        out["hang"] = _result(await s.call_tool("run", {"build_id": hang["build_id"], "ranks": 1,
                                                       "time_limit_s": 3}))
        out["unknown"] = _result(await s.call_tool("run", {"build_id": "0123456789abcdef"}))
        # numbers that compare false with everything: min("nan", 600) once meant no limit at all
        out["odd"] = [_result(await s.call_tool("run", {"build_id": ok["build_id"], **kw}))
                      for kw in ({"time_limit_s": "nan"}, {"time_limit_s": "inf"}, {"time_limit_s": -1},
                                 {"time_limit_s": "1e999"})]
        rank = await s.call_tool("run", {"build_id": ok["build_id"], "ranks": 1.5})  # the tool's schema says int
        out["half_rank"] = (getattr(rank, "is_error", getattr(rank, "isError", False)), rank.content[0].text)
        out["replaces"] = _result(await s.call_tool("compile", {"files": {"main.c": OK + REPLACES}, "entry": "main.c"}))
    return out


def test_mcp_compile_and_run_over_stdio(tmp_path):
    got = asyncio.run(asyncio.wait_for(_session_calls(tmp_path / "work"), 240))
    assert got["tools"] == ["compile", "run"]
    broken = got["broken"]
    assert broken["ok"] is False and broken["build_id"] == ""
    assert any("PetscInitialise" in e for e in broken["errors"] + [broken["stderr"]]), broken
    assert got["escape"]["ok"] is False and "escapes" in got["escape"]["error"]
    assert not (tmp_path / "x.c").exists() and not (tmp_path / "work" / ".." / "x.c").exists()
    assert got["ok"]["ok"] is True and len(got["ok"]["build_id"]) == 16
    run = got["run"]
    assert run["ok"] is True and run["exit_code"] == 0 and "ranks: 2" in run["stdout"]
    hang = got["hang"]
    assert hang["ok"] is False and hang["timed_out"] is True and "timeout after 3 s" in hang["stopped_reason"]
    assert got["unknown"]["ok"] is False and "compile first" in got["unknown"]["error"]
    for odd in got["odd"]:
        assert odd["ok"] is False and "must be" in odd["error"] and "exit_code" not in odd, odd
    assert got["half_rank"][0] and "ranks" in got["half_rank"][1], got["half_rank"]
    rep = got["replaces"]
    assert rep["ok"] is False and rep["build_id"] == "", rep
    assert "PetscMallocDump" in rep["stderr"] and "refused to run" in rep["stderr"], rep


async def _http_calls(url: str) -> dict:
    from mcp import ClientSession

    try:
        from mcp.client.streamable_http import streamable_http_client as connect
    except ImportError:  # mcp 1.x
        from mcp.client.streamable_http import streamablehttp_client as connect
    async with connect(url) as streams, ClientSession(streams[0], streams[1]) as s:
        await s.initialize()
        return _result(await s.call_tool("compile", {"files": {"main.c": BROKEN}, "entry": "main.c"}))


def test_mcp_over_streamable_http(tmp_path):
    import socket
    import subprocess
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    exe = Path(sys.executable).parent / "hpcbench"
    proc = subprocess.Popen([str(exe), "mcp", "--transport", "http", "--port", str(port), "--workdir",
                             str(tmp_path / "work")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        t0 = time.time()
        while True:  # until it listens (or died)
            assert proc.poll() is None, proc.stderr.read().decode()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.time() - t0 < 60, "mcp http server did not start"
                time.sleep(0.2)
        got = asyncio.run(asyncio.wait_for(_http_calls(f"http://127.0.0.1:{port}/mcp"), 120))
    finally:
        proc.terminate()
        proc.wait(20)
    assert got["ok"] is False and any("PetscInitialise" in e for e in got["errors"] + [got["stderr"]])
