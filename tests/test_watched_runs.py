"""What could tell a program its watched runs from the others: the instruments reach PETSc
through one options file per run (jobs/instruments.py options_argv), so every run gets the same
argv and files of one size; and the case valgrind runs is drawn at planning (jobs/job.py
valgrind_target), not always the first.

What cannot be hidden (valgrind's allocator, its slowness, PETSc's debugging allocator) is met
by comparing the runs: what PETSc counted in each (jobs/log_summary.py) against the
instrumented run (evaluators/watched_runs.py). Programs of tests/adversarial that behave
differently when watched fail the memory gate there, beside controls that do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcbench.jobs.instruments import OPTIONS_FILE, OPTIONS_FILE_BYTES, LogViewProbe, MallocProbe, options_argv
from hpcbench.jobs.sandbox import bwrap_works
from hpcbench.jobs.valgrind import valgrind_path


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
    # two viewers in one option: the XML tree of times and the text summary of counts
    assert lines[0] == f'-log_view ":{inside}/log_view.xml:ascii_xml,:{inside}/log_view.txt"'
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
    cases that ran cleanly at the fewest ranks and cost at most twice the cheapest; a profile
    with `valgrind_case: cheapest` plans no draw."""
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

    # no draw (a sweep's gating step, validate-checks' generated mutants): the cheapest case
    assert valgrind_target(spec(0), rec).case == "held-out-2"
    got = {valgrind_target(spec(valgrind_draw(seed, "a__p__1")), rec).case for seed in range(40)}
    assert got == {"default", "held-out-1", "held-out-2"}  # never the dear case, never 2 ranks
    assert valgrind_draw(7, "a__p__1") == valgrind_draw(7, "a__p__1") != valgrind_draw(8, "a__p__1")
    assert valgrind_draw(None, "a__p__1") == 0


def test_generated_profile_plans_valgrind_at_the_cheapest_case(tmp_path):
    """validate-checks' generated mutants run valgrind at the cheapest case (no draw), a user's
    campaign at a drawn one: the profile decides, through planning."""
    from hpcbench.plan.campaign import Campaign, PlanRequest, plan_jobs
    from hpcbench.plan.held_out import ensure_draw
    from hpcbench.problem import load_problems
    from hpcbench.profile import FULL, GENERATED
    from hpcbench.site import load_site
    from hpcbench.submission import LoadedSubmission, Submission

    problems = {"rosenbrock": load_problems()["rosenbrock"]}
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.c").write_text("int main(void) { return 0; }\n")
    sub = LoadedSubmission(Submission(problem="rosenbrock", agent="me", entry="main.c", files=["main.c"]), src)
    draws = {}
    for profile in (FULL, GENERATED):
        root = tmp_path / profile.name
        ensure_draw(root, problems, seed=11)
        plan = plan_jobs(Campaign(root), load_site("local"), PlanRequest(problems, [sub]), profile)
        draws[profile.name] = plan.jobs[0].valgrind_draw
    assert draws["full"] > 0 and draws["generated"] == 0


# ----------------------------------------------------------------------------- what each run counted

# PETSc 3.26's -log_view text summary (the advection1d reference at 2 ranks, trimmed; a stage of
# the program's own added): the sections jobs/log_summary.py reads
SUMMARY = """\
                         Max       Max/Min     Avg       Total
Time (sec):           1.370e+00     1.000   1.370e+00
Objects:              0.000e+00     0.000   0.000e+00
Flops:                9.202e+05     1.000   9.202e+05  1.840e+06
------------------------------------------------------------------------------------------------------------------------
Event                Count      Time (sec)     Flop                              --- Global ---  --- Stage ----  Total
                   Max Ratio  Max     Ratio   Max  Ratio  Mess   AvgLen  Reduct  %T %F %M %L %R  %T %F %M %L %R Mflop/s
------------------------------------------------------------------------------------------------------------------------

--- Event Stage 0: Main Stage

VecAXPBYCZ           400 1.0 1.1777e-02 69.4 2.00e+05 1.0 0.0e+00 0.0e+00 0.0e+00  0 22  0  0  0   0 22  0  0  0    34
VecScatterBegin     1600 1.0 1.3755e-01 1.1 0.00e+00 0.0 3.2e+03 1.6e+01 0.0e+00  9  0 100 100  0  10  0 100 100  0     0
TSStep               400 1.0 1.2836e+00 1.0 9.20e+05 1.0 3.2e+03 1.6e+01 0.0e+00 94 100 100 100  0  98 100 100 100  0     1

--- Event Stage 1: my stage

TSStep                 2 1.0 1.2836e-03 1.0 9.20e+02 1.0 3.2e+00 1.6e+01 0.0e+00 94 100 100 100  0  98 100 100 100  0     1
my own event          7 1.0 1.2836e-03 1.0 9.20e+02 1.0 3.2e+00 1.6e+01 0.0e+00 94 100 100 100  0  98 100 100 100  0     1
------------------------------------------------------------------------------------------------------------------------

Object Type          Creations   Destructions. Reports information only for process 0.

--- Event Stage 0: Main Stage

    Distributed Mesh     2              2
   IS L to G Mapping     1              1
              Vector     8              7

--- Event Stage 1: my stage

              Vector     3              3
========================================================================================================================
Average time to get PetscTime(): 2.7e-08
#PETSc Option Table entries:
-log_view :lv.xml:ascii_xml,:lv.txt # (source: command line)
"""  # noqa: E501  (PETSc's own line length)


def test_the_text_summary_gives_objects_by_class_and_calls_by_event_summed_over_stages():
    from hpcbench.jobs.log_summary import parse_log_summary

    c = parse_log_summary(SUMMARY.encode())
    assert not c.parse_error
    assert c.created == {"Distributed Mesh": 2, "IS L to G Mapping": 1, "Vector": 11}
    assert c.destroyed == {"Distributed Mesh": 2, "IS L to G Mapping": 1, "Vector": 10}
    assert c.events == {"VecAXPBYCZ": 400, "VecScatterBegin": 1600, "TSStep": 402, "my own event": 7}
    assert c.flops == 1.840e6  # all ranks'


def test_a_summary_cut_short_or_not_petscs_is_named_and_a_flood_of_names_is_bounded():
    from hpcbench.jobs.log_summary import MAX_NAMES, parse_log_summary

    for cut_at in ("Object Type", "   IS L to G", "====="):
        cut = parse_log_summary(SUMMARY.split(cut_at)[0].encode(), "log_view.txt")
        assert cut.parse_error.startswith("log_view.txt: no whole object table"), cut_at
    # a program that called no event and made no object: an empty summary, not a missing one
    empty = SUMMARY.split("--- Event Stage 0")[0] + SUMMARY[SUMMARY.index("Object Type"):].split("--- Event")[0] \
        + "=" * 120 + "\n"
    nothing = parse_log_summary(empty.encode())
    assert not nothing.parse_error and (nothing.events, nothing.created) == ({}, {})
    events = "".join(f"ev{i} 1 1.0 1.0e-03 1.0 0.0e+00 0.0 0.0e+00 0.0e+00 0.0e+00 0 0 0 0 0 0 0 0 0 0 0\n"
                     for i in range(MAX_NAMES + 50))
    flood = parse_log_summary(SUMMARY.replace("VecAXPBYCZ ", events + "VecAXPBYCZ ").encode())
    assert len(flood.events) + len(flood.created) <= MAX_NAMES and "more than" in flood.parse_error


def _run(kind: str, repeat: int = 0, ranks: int = 1, case: str = "n6", **counts):
    from hpcbench.jobs.records import LogCounts, RunResult

    c = LogCounts(created={"Vector": 38, "Index Set": 1823}, destroyed={"Vector": 38, "Index Set": 1823},
                  events={"TaoSolve": 1, "MatSolve": 3644, "VecDot": 50873}, flops=5.937e6)
    for k, v in counts.items():
        getattr(c, k).update(v) if isinstance(v, dict) else setattr(c, k, v)
    return RunResult(case=case, ranks=ranks, kind=kind, repeat=repeat, command=["app"], exit_code=0, wall_s=1.0,
                     log_counts=c)


def _record(*runs):
    from hpcbench.jobs.records import JobResult

    return JobResult(job_id="a__rosenbrock__1", agent="a", problem="rosenbrock", attempt="1", runs=list(runs))


def test_at_one_rank_every_count_must_agree_with_the_instrumented_run():
    from hpcbench.evaluators.watched_runs import compare_runs

    same = compare_runs(_record(_run("instrumented"), _run("timing"), _run("timing", 1), _run("valgrind")))
    assert (same.runs, same.cases, same.differences) == (3, 1, [])
    # one extra vector, created and destroyed, only under valgrind
    extra = compare_runs(_record(_run("instrumented"), _run("timing"),
                                 _run("valgrind", created={"Vector": 39}, destroyed={"Vector": 39})))
    assert [str(d) for d in extra.differences] == [
        "case n6 at 1 rank(s): Vector objects created: 39 in the valgrind run 0, 38 in the instrumented run 0"]
    # a vector left undestroyed only where nothing watches: the timing run
    left = compare_runs(_record(_run("instrumented"), _run("timing", created={"Vector": 39})))
    assert {d.what for d in left.differences} == {"Vector objects created", "Vector objects left undestroyed"}
    calls = compare_runs(_record(_run("instrumented"), _run("valgrind", events={"TaoSolve": 2})))
    assert [(d.what, d.base_value, d.value) for d in calls.differences] == [("calls of TaoSolve", 1, 2)]


def test_at_two_ranks_calls_may_move_an_iteration_but_objects_left_never():
    from hpcbench.evaluators.watched_runs import compare_runs

    # a solver one iteration apart: calls and the vectors it made move together, within a quarter
    apart = _run("timing", ranks=2, events={"MatSolve": 3700}, created={"Vector": 44}, destroyed={"Vector": 44},
                 flops=6.0e6)
    assert compare_runs(_record(_run("instrumented", ranks=2), apart)).differences == []
    # the same calls: the same objects, exactly
    extra = _run("valgrind", ranks=2, created={"Vector": 39}, destroyed={"Vector": 39})
    assert [d.what for d in compare_runs(_record(_run("instrumented", ranks=2), extra)).differences] == [
        "Vector objects created"]
    leak = _run("timing", ranks=2, events={"MatSolve": 3700}, created={"Vector": 39})
    found = compare_runs(_record(_run("instrumented", ranks=2), leak)).differences
    assert [(d.what, d.allowed) for d in found] == [("Vector objects left undestroyed", 0)]
    far = _run("timing", ranks=2, events={"MatSolve": 5000})
    assert [d.what for d in compare_runs(_record(_run("instrumented", ranks=2), far)).differences] == [
        "calls of MatSolve"]


def test_runs_without_counts_failed_runs_and_other_cases_are_not_compared():
    from hpcbench.evaluators.watched_runs import compare_runs

    old = _run("timing", created={"Vector": 40})
    old.log_counts = None  # an older record, or a summary not found whole
    failed = _run("valgrind", created={"Vector": 40})
    failed.exit_code = 1
    other = _run("timing", case="n20", created={"Vector": 40})  # its own case: its own base
    got = compare_runs(_record(_run("instrumented"), old, failed, other))
    assert (got.runs, got.differences) == (0, [])
    assert compare_runs(None).runs == 0


def test_a_missing_summary_counts_against_a_run_only_where_the_job_asked_for_it():
    from hpcbench.evaluators.instrumentation import missing_instruments
    from hpcbench.jobs.records import InstrumentCheck

    older = _run("timing")  # no check at all: a job before the summary existed
    removed = _run("timing", 1)
    removed.instruments = [InstrumentCheck(name="log_summary", problem="log_view.txt was removed during the run")]
    missing = missing_instruments(_record(older, removed))
    assert [(m.kind, m.problem) for m in missing] == [("timing", "log_view.txt was removed during the run")]


def test_a_log_folder_named_with_a_comma_gets_the_xml_alone_and_says_why_no_summary():
    probe = LogViewProbe()
    assert probe.options(Path("/work/a,b/logs")) == ["-log_view", ":/work/a,b/logs/log_view.xml:ascii_xml"]
    assert not probe.with_summary


# ----------------------------------------------------------------------------- behaving differently when watched

# trick -> (the run kind whose counts give it away, what differs there): each beside its control,
# which looks for the same signs and behaves alike in every run
WATCHED_TRICKS = {
    # a vector created (and destroyed) only under valgrind's allocator: nothing else sees it
    "watched_extra_vec": ("valgrind", "Vector objects created"),
    # a vector left undestroyed when a loop of arithmetic is slow (valgrind): valgrind also counts
    # 16 of its bytes lost
    "watched_cpu_skip_destroy": ("valgrind", "Vector objects left undestroyed"),
    # a vector leaked wherever neither valgrind's allocator nor slow PETSc allocations show: in the
    # timing runs, whose memory nothing else looks at
    "unwatched_leak": ("timing", "Vector objects left undestroyed"),
}


@pytest.fixture(scope="module")
def watched_campaign(tmp_path_factory):
    """The tricks, their controls and the rosenbrock reference, with valgrind and -malloc_debug
    (the sandbox as the local site has it)."""
    if not bwrap_works()[0] or valgrind_path() is None:
        pytest.skip("needs bubblewrap and valgrind")
    import subprocess
    import sys

    from hpcbench.score.scoring import contexts
    from hpcbench.store import read_campaign
    from tests.adversarial.tree import CONTROL, plant_decoys, write_tree
    from tests.conftest import profile_file

    base = tmp_path_factory.mktemp("watched")
    write_tree(base / "tree", plant_decoys(base / "decoys"),
               [n for t in [*WATCHED_TRICKS, "unwatched_raw_leak"] for n in (t, CONTROL + t)])
    watched = profile_file("watched", valgrind="every", malloc_debug=True, timing_repeats=1)
    out = base / "out"
    exe = Path(sys.executable).parent / "hpcbench"
    proc = subprocess.run([str(exe), "run", "--profile", str(watched), "--agent", "reference", "--submissions",
                           str(base / "tree"), "--problems", "rosenbrock", "--out", str(out)],
                          capture_output=True, text=True, timeout=1800)
    assert (out / "campaign.h5").is_file(), proc.stdout[-2000:] + proc.stderr[-3000:]
    return {s.meta.agent: ctx for s, ctx in contexts(read_campaign(out / "campaign.h5"))}


def _memory_gate(ctx):
    from hpcbench.evaluators.gates.memory_safety import MemorySafety

    return MemorySafety().evaluate(ctx)


@pytest.mark.slow
@pytest.mark.parametrize("trick", sorted(WATCHED_TRICKS))
def test_a_program_that_behaves_differently_when_watched_fails_the_memory_gate_and_its_control_passes(
        watched_campaign, trick):
    kind, what = WATCHED_TRICKS[trick]
    res = _memory_gate(watched_campaign[f"adv-{trick.replace('_', '-')}"])
    assert not res.passed and "behaves differently when observed" in res.rationale, res.rationale
    found = res.evidence["watched_runs_differences"]
    mine = [d for d in found if d["run"].startswith(kind) and d["what"] == what]
    assert mine and all(d["base"] == "instrumented run 0" and d["allowed"] == 0 for d in mine), found
    assert all(abs(d["value"] - d["base_value"]) == 1 for d in mine), mine  # the one vector, in numbers
    assert not any(d["run"].startswith("timing") for d in found) or kind == "timing", found

    control = _memory_gate(watched_campaign[f"adv-control-{trick.replace('_', '-')}"])
    assert control.passed, control.rationale
    assert control.evidence["watched_runs_differences"] == [] and "runs counted alike" in control.rationale


@pytest.mark.slow
def test_malloc_leaked_only_where_valgrind_is_not_watching_fails_the_memory_gate_and_its_control_passes(
        watched_campaign):
    """The trick frees its malloc block under valgrind's allocator and leaks it elsewhere: PETSc's
    counts agree in every run, -malloc_dump sees no PetscMalloc; the malloc recorder, preloaded
    into every run but valgrind's, finds the block in the instrumented and the timing run."""
    res = _memory_gate(watched_campaign["adv-unwatched-raw-leak"])
    assert not res.passed and "65536 bytes" in res.rationale and "main.c:" in res.rationale, res.rationale
    held = res.evidence["raw_malloc_held"]
    assert {h.split(" run ")[0] for h in held} == {"instrumented", "timing"}, held  # at every case
    control = _memory_gate(watched_campaign["adv-control-unwatched-raw-leak"])
    assert control.passed and control.evidence["raw_malloc_runs"] >= 2, control.rationale
    assert control.evidence["raw_malloc_held"] == []
    runs = watched_campaign["adv-control-unwatched-raw-leak"].record.runs
    # the recorder sat in the runs it watches, and not in valgrind's (memcheck's own allocator there)
    assert {r.kind for r in runs if r.raw_malloc is not None} == {"instrumented", "timing"}
    assert all(r.raw_malloc.tracked >= 1 for r in runs if r.raw_malloc is not None)


@pytest.mark.slow
def test_the_reference_runs_are_counted_alike(watched_campaign):
    res = _memory_gate(watched_campaign["reference"])
    assert res.passed and res.evidence["watched_runs_differences"] == [], res.rationale
    runs = watched_campaign["reference"].record.runs
    # every instrumented, timing and valgrind run has its counts, and they are the instrumented run's
    counted = [r for r in runs if r.kind in ("instrumented", "timing", "valgrind")]
    assert counted and all(r.log_counts is not None and r.log_counts.events.get("TaoSolve") == 1 for r in counted)
