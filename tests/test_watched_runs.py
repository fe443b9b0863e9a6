"""What could tell a program its watched runs from the others: the instruments reach PETSc
through one options file per run (jobs/instruments.py options_argv), so every run gets the same
argv and files of one size; and the case valgrind runs is drawn at planning (jobs/job.py
valgrind_target), not always the first."""

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


def test_valgrind_runs_a_drawn_cheap_case_the_same_on_resume():
    """Which case valgrind runs is drawn at planning from the campaign's secret seed, among the
    cases that ran cleanly at the fewest ranks and cost at most twice the cheapest."""
    from hpcbench.jobs.job import valgrind_target
    from hpcbench.jobs.records import CaseRun, JobResult, JobSpec, RunResult, Variant
    from hpcbench.plan.campaign import valgrind_draw

    cases = [CaseRun(case=c, args=[], ranks=r, time_limit_s=30) for c, r in
             (("default", 1), ("held-out-1", 1), ("held-out-2", 1), ("larger", 1), ("default", 2))]
    walls = {"default": 0.4, "held-out-1": 0.5, "held-out-2": 0.3, "larger": 9.0}
    runs = [RunResult(case=c.case, ranks=c.ranks, kind="instrumented", command=["x"], exit_code=0,
                      wall_s=walls[c.case]) for c in cases]
    rec = JobResult(job_id="a__p__1", agent="a", problem="p", attempt="1", runs=runs)

    def spec(draw: int) -> JobSpec:
        return JobSpec(job_id="a__p__1", agent="a", problem="p", attempt="1", source_dir="/s", entry="main.c",
                       files=["main.c"], runs=cases, variant=Variant(name="cpu", petsc_dir="/p"),
                       record_path="/r.json", work_dir="/w", valgrind_draw=draw)

    assert valgrind_target(spec(0), rec).case == "default"  # no draw: the first, as before
    got = {valgrind_target(spec(valgrind_draw(seed, "a__p__1")), rec).case for seed in range(40)}
    assert got == {"default", "held-out-1", "held-out-2"}  # never the dear case, never 2 ranks
    assert valgrind_draw(7, "a__p__1") == valgrind_draw(7, "a__p__1") != valgrind_draw(8, "a__p__1")
    assert valgrind_draw(None, "a__p__1") == 0
