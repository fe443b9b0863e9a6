"""The instruments reach PETSc through one options file per run (jobs/instruments.py
options_argv): every run of a program gets the same argv, and files of one size, so neither its
argc nor the file's size tells the instrumented run from a timing or valgrind run."""

from __future__ import annotations

from pathlib import Path

from hpcbench.jobs.instruments import OPTIONS_FILE, OPTIONS_FILE_BYTES, LogViewProbe, MallocProbe, options_argv


def _written(tmp_path: Path, name: str, options: list[str]) -> tuple[list[str], bytes]:
    logs = tmp_path / name
    logs.mkdir()
    argv = options_argv(options, logs, Path("/work/job/logs"))
    return argv, (logs / OPTIONS_FILE).read_bytes()


def test_instrumented_and_timing_runs_have_one_argv_and_files_of_one_size(tmp_path):
    inside = Path("/work/job/logs")
    timing = LogViewProbe().options(inside)
    instrumented = [*LogViewProbe().options(inside), *MallocProbe(True).options(inside)]
    argv_t, file_t = _written(tmp_path, "t", timing)
    argv_i, file_i = _written(tmp_path, "i", instrumented)
    assert argv_t == argv_i == ["-options_file", f"/work/job/logs/{OPTIONS_FILE}"]
    assert len(file_t) == len(file_i) == OPTIONS_FILE_BYTES and file_t != file_i
    lines = [ln for ln in file_i.decode().splitlines() if ln and not ln.startswith("#")]
    # one option per line, its value quoted (a campaign folder may hold spaces)
    assert lines[0] == f'-log_view ":{inside}/log_view.xml:ascii_xml"'
    assert "-malloc_debug" in lines and "-options_left" in lines
    assert any(ln.startswith("-malloc_dump ") for ln in lines)


def test_a_long_path_grows_the_file_by_whole_blocks_and_a_quote_falls_back_to_argv(tmp_path):
    long = ["-log_view", ":" + "/d" * 3000 + ":ascii_xml"]
    _, data = _written(tmp_path, "long", long)
    assert len(data) % OPTIONS_FILE_BYTES == 0 and len(data) > OPTIONS_FILE_BYTES
    quoted = ["-log_view", ':/x"y/log_view.xml:ascii_xml']
    assert options_argv(quoted, tmp_path, tmp_path) == quoted
