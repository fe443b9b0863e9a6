"""The pieces that keep a graded program from controlling what measures it, one by one:
reading run-folder files (no links, no FIFOs, capped), valgrind's reports (streamed,
attributed by object), the run-to-run answer agreement, the blame of missing instruments,
the source scan, and the disk/inode limits. tests/test_adversarial_run.py sends real
programs through the whole pipeline."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from hpcbench.evaluators.harness_tampering import FAILING, failing, scan_source
from hpcbench.evaluators.instrumentation import Missing, blame
from hpcbench.evaluators.run_agreement import disagreements
from hpcbench.jobs.capture import folder_usage
from hpcbench.jobs.records import JobResult, RunResult, ValgrindSummary
from hpcbench.jobs.untrusted_files import CappedReader, HeldFile, UnsafeFile, read_untrusted
from hpcbench.jobs.valgrind import KEPT_ERRORS, in_submission, read_report
from hpcbench.problem import Checks

ROOT = Path(__file__).resolve().parent.parent


# ----------------------------------------------------------------------------- run-folder files


def test_a_link_a_fifo_and_a_hard_link_are_refused_and_nothing_blocks(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s")
    run = tmp_path / "run"
    run.mkdir()
    (run / "link.xml").symlink_to(secret)
    os.mkfifo(run / "fifo.xml")  # opening it for reading without O_NONBLOCK waits for a writer for ever
    os.link(secret, run / "hard.xml")
    (run / "sub").symlink_to(tmp_path)
    (run / "ok.xml").write_text("<a/>")
    with pytest.raises(UnsafeFile, match="symbolic link"):
        read_untrusted(run, "link.xml", 100)
    with pytest.raises(UnsafeFile, match="a FIFO"):
        read_untrusted(run, "fifo.xml", 100)
    with pytest.raises(UnsafeFile, match="hard links"):
        read_untrusted(run, "hard.xml", 100, single_link=True)
    with pytest.raises(UnsafeFile, match="'sub' is a symbolic link"):
        read_untrusted(run, "sub/secret", 100)
    with pytest.raises(UnsafeFile, match="larger than 3 bytes"):
        read_untrusted(run, "ok.xml", 3)
    assert read_untrusted(run, "ok.xml", 100) == b"<a/>"


def test_a_held_file_reads_what_was_written_into_it_and_says_when_its_name_was_changed(tmp_path):
    held = HeldFile.create(tmp_path, "report.xml")
    (tmp_path / "report.xml").write_text("written by the instrument")  # the same inode, through its name
    assert held.tampered() == "" and held.read(100) == b"written by the instrument"
    os.rename(tmp_path / "report.xml", tmp_path / "moved")
    (tmp_path / "report.xml").write_text("<forged/>")
    assert "replaced by another file" in held.tampered()
    assert held.read(100) == b"written by the instrument"  # what is read is still the instrument's
    (tmp_path / "report.xml").unlink()
    os.mkfifo(tmp_path / "report.xml")
    assert "replaced during the run (now a FIFO)" in held.tampered()
    (tmp_path / "report.xml").unlink()
    assert "removed" in held.tampered()
    held.close()


def test_a_capped_reader_stops_at_its_cap_and_says_it_was_cut(tmp_path):
    f = tmp_path / "big"
    f.write_bytes(b"x" * 1000)
    fd = os.open(f, os.O_RDONLY)
    r = CappedReader(fd, 300)
    got = b"".join(iter(lambda: r.read(128), b""))
    assert len(got) == 300 and r.over
    os.close(fd)


# ----------------------------------------------------------------------------- valgrind


APP = "/campaign/work/job/build/app"
LIBMPI = "/usr/lib/x86_64-linux-gnu/libmpi.so.40"
PRELOAD = "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so"


def test_valgrind_errors_count_by_the_object_of_the_innermost_own_frame():
    # a leak inside an MPI_Op callback: malloc <- Combine (app) <- ompi_op (libmpi) <- main (app)
    assert in_submission([PRELOAD, APP, LIBMPI, LIBMPI, APP], {APP})
    # MPI's own start-up: malloc <- libopen-pal ... <- MPI_Init (libmpi) <- PetscInitialize <- main (app)
    assert not in_submission([PRELOAD, "/usr/lib/libopen-pal.so.40", LIBMPI, "/petsc/lib/libpetsc.so", APP], {APP})
    # a leak through PETSc from the program: counted whatever file names its frames carry
    assert in_submission([PRELOAD, "/petsc/lib/libpetsc.so", APP], {APP})
    assert not in_submission([PRELOAD, "/usr/lib/libc.so.6"], {APP})
    # code unloaded before exit (no object: Open MPI's components after MPI_Finalize) is MPI's too:
    # malloc <- strdup (libc) <- ??? <- finalize (petsc4py's module, an own object of a Python program)
    pyx = "/v/petsc4py/PETSc.cpython-311-x86_64-linux-gnu.so"
    assert not in_submission([PRELOAD, "/usr/lib/libc.so.6", "", "", pyx], {pyx})
    assert in_submission([PRELOAD, "/usr/lib/libc.so.6", APP, ""], {APP})


def _report(errors: int, finished: bool = True, obj: str = APP) -> bytes:
    err = ("<error><kind>Leak_DefinitelyLost</kind><xwhat><text>lost</text><leakedbytes>8</leakedbytes>"
           f"<leakedblocks>1</leakedblocks></xwhat><stack><frame><obj>{PRELOAD}</obj><fn>malloc</fn></frame>"
           f"<frame><obj>{obj}</obj><fn>Helper</fn><file>mal.c</file><line>3</line></frame></stack></error>\n")
    status = "<status><state>FINISHED</state></status>" if finished else ""
    return (b'<?xml version="1.0"?><valgrindoutput><protocolversion>4</protocolversion>'
            b"<protocoltool>memcheck</protocoltool><status><state>RUNNING</state></status>"
            + err.encode() * errors + status.encode() + b"</valgrindoutput>")


def test_a_report_is_streamed_its_errors_kept_up_to_a_cap_and_all_counted():
    summary = ValgrindSummary(ran=True)
    check = read_report(io.BytesIO(_report(KEPT_ERRORS * 3)), {APP}, summary)
    assert check.finished and check.tool == "memcheck" and not check.problem and check.counted == KEPT_ERRORS * 3
    assert len(summary.errors) == KEPT_ERRORS and summary.submission_lost_bytes == 8 * KEPT_ERRORS * 3
    # the frame claims mal.c (#line): the object is the submission's binary, so it counts
    assert summary.errors[0].in_submission and "Helper mal.c:3" in summary.errors[0].frames


def test_a_report_cut_short_or_garbled_is_not_taken_as_clean():
    assert not read_report(io.BytesIO(_report(1, finished=False)), {APP}, ValgrindSummary()).finished
    garbled = read_report(io.BytesIO(_report(1)[:-20] + b"<!-- forged"), {APP}, ValgrindSummary())
    assert "not well-formed" in garbled.problem


# ----------------------------------------------------------------------------- agreement and blame


def _checks() -> Checks:
    return Checks.model_validate({"checks": [
        {"kind": "compare", "quantity": "sum", "reference": {"source": "reference_run"}, "rtol": 1e-9, "atol": 0},
        {"kind": "sanity", "name": "pos", "quantity": "norm", "test": "all_positive"}]})


def _run(kind: str, stdout: str, repeat: int = 0) -> RunResult:
    return RunResult(case="a", ranks=1, kind=kind, repeat=repeat, command=[], exit_code=0, wall_s=1.0, stdout=stdout)


def test_runs_whose_answers_differ_from_the_checked_run_are_named():
    rec = JobResult(job_id="j", agent="a", problem="p", attempt="1", runs=[
        _run("instrumented", "sum: 1.0\nnorm: 2.0\n"),
        _run("timing", "sum: 1.0000000000001\nnorm: 2.0\n"),  # round-off: the same answer
        _run("timing", "sum: 5.0\nnorm: 2.0\n", 1),
        _run("valgrind", "sum: 1.0\n"),
        _run("null", "")])
    differ = disagreements(rec, _checks())
    assert differ == ["timing run 1 of case a at 1 ranks: sum: entry 0: 5 where the checked run printed 1",
                      "valgrind run 0 of case a at 1 ranks: norm: 'norm' not printed"]


def test_a_quantity_only_bounded_by_a_sanity_check_agrees_within_a_thousandth_of_the_bound():
    """rosenbrock's objective at its minimum is round-off (2.19e-21 in the instrumented run, 2.10e-21
    under valgrind, measured): not a different answer; 1e-9 off where the bound is 1e-7 is."""
    from hpcbench.problem import Checks

    checks = Checks.model_validate({"checks": [{"kind": "sanity", "name": "at minimum", "quantity": "objective",
                                                "test": "max_abs_below", "target": 1e-7}]})
    rec = JobResult(job_id="j", agent="a", problem="p", attempt="1", runs=[
        _run("instrumented", "objective: 2.1933514051e-21\n"),
        _run("valgrind", "objective: 2.0953500000e-21\n"),
        _run("timing", "objective: 1.0e-9\n")])
    assert disagreements(rec, checks) == [
        "timing run 0 of case a at 1 ranks: objective: entry 0: 1e-09 where the checked run printed 2.19335e-21"]


def test_an_instrument_missing_for_the_reference_too_is_unverified_not_blamed():
    sub = [Missing("instrumented", "a", 1, "malloc_dump", "gone"), Missing("valgrind", "a", 1, "valgrind", "gone")]
    disabled, unverified = blame(sub, [Missing("instrumented", "b", 2, "malloc_dump", "threadsafe PETSc")])
    assert [m.instrument for m in disabled] == ["valgrind"] and [m.instrument for m in unverified] == ["malloc_dump"]


# ----------------------------------------------------------------------------- the source scan


@pytest.mark.parametrize("code,src", [
    ("HB401", 'PetscOptionsClearValue(NULL, "-malloc_dump");'),
    ("HB401", 'PetscOptionsInsertString(NULL, "-ksp_type cg -log_view ::ascii_info");'),
    ("HB401", "PetscOptionsClear(NULL);"),
    ("HB402", 'PetscOptionsHasName(NULL, NULL, "-malloc_debug", &flg);'),
    ("HB402", 'if (!strcmp(argv[i], "-log_view")) x = 1;'),
    ("HB402", "PetscMallocGetDebug(&a, NULL, NULL);"),
    ("HB403", "fclose(stdout);"),
    ("HB403", "dup2(fd, STDOUT_FILENO);"),
    ("HB403", 'freopen("x", "w", stderr);'),
    ("HB403", "PETSC_STDOUT = f;"),
    ("HB403", "PetscVFPrintf = mine;"),
    ("HB405", "if (RUNNING_ON_VALGRIND) return 0;"),
    ("HB405", 'if (strstr(getenv("LD_PRELOAD"), "vgpreload")) return 0;'),
    ("HB406", "PetscMallocSet(mymalloc, myfree, myrealloc);"),
    ("HB406", "void *p = __libc_malloc(64);"),  # behind the malloc recorder (jobs/raw_malloc.py)
    ("HB406", 'void *(*f)(size_t) = dlsym(RTLD_NEXT, "malloc");'),
    ("HB406", "void *p = sbrk(4096);"),
    ("HB407", 'unsetenv("HPCBENCH_MALLOC_REPORT");'),
    ("HB407", 'FILE *f = fopen("/proc/self/maps", "r");'),
    ("HB408", 'FILE *f = fopen("petscrc", "w");'),
    ("HB408", 'unlink("../logs/valgrind.0.xml");'),
])
def test_the_scan_fails_what_tampers_with_the_harness(code, src):
    found = scan_source("main.c", f"#include <petscsys.h>\nint main(int argc, char **argv) {{ {src} return 0; }}\n")
    assert code in FAILING and code in {f.code for f in failing(found)}, found


@pytest.mark.parametrize("code,src", [
    ("HB404", '#line 1 "petsc.c"\nint main(void) { return 0; }\n'),
    ("HB405", "#include <valgrind/memcheck.h>\nint main(void) { return 0; }\n"),
    ("HB406", "#include <stdlib.h>\nvoid *malloc(size_t n) { return 0; }\nint main(void) { return 0; }\n"),
    ("HB406", "void free(void *p) { (void)p; }\nint main(void) { return 0; }\n"),
    ("HB408", '#define RC "~/.petscrc"\nint main(void) { return 0; }\n'),
])
def test_the_scan_reads_preprocessor_lines_too(code, src):
    assert code in {f.code for f in failing(scan_source("main.c", src))}


def test_what_is_only_a_finding_does_not_fail_and_dead_code_is_ignored():
    src = ('#include <petscsys.h>\nint main(int argc, char **argv) {\n  const char *h = getenv("HOME");\n'
           '  PetscOptionsPrefixPush(NULL, "sys1_");\n  PetscOptionsClearValue(NULL, name);\n'
           '#if 0\n  fclose(stdout);\n#endif\n  return 0;\n}\n')
    found = scan_source("main.c", src)
    assert {f.code for f in found} == {"HB451", "HB454"} and not failing(found)


def test_no_tutorial_of_petsc_fails_the_scan():
    """PETSc's own C tutorials (the sdist this project builds from): a false positive here
    would fail an expert's program. Their notes (options files, prefixes) are allowed."""
    sdist = ROOT / ".venv" / "hpcbench-cache" / "petsc-3.26.1.tar.gz"
    if not sdist.is_file():
        pytest.skip(f"no PETSc sdist at {sdist}")
    scanned, bad = 0, []
    with tarfile.open(sdist) as tar:
        for m in tar:
            if m.isfile() and "/tutorials/" in m.name and m.name.endswith(".c"):
                f = tar.extractfile(m)
                assert f is not None
                bad += failing(scan_source(m.name, f.read().decode("utf-8", "replace")))
                scanned += 1
    assert scanned > 300 and not bad, bad


# ----------------------------------------------------------------------------- limits


def test_folders_and_links_count_towards_disk_use_and_inodes(tmp_path):
    for i in range(300):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"l{i}").symlink_to("/nonexistent/" + "x" * 100)
    used, entries = folder_usage([tmp_path])
    assert entries == 600 and used >= 300 * 4096  # every folder is a block; regular files are not needed
    assert folder_usage([tmp_path], max_entries=50)[1] == 51  # the walk stops past the limit


@pytest.mark.slow
def test_a_local_job_past_its_wall_time_limit_is_stopped_and_recorded_as_a_timeout(tmp_path):
    """The local executor gives each job a limit of its own (from its cases, as a batch
    walltime); the job hears SIGTERM there and records what finished. Here the limit is set
    below what the program takes (a run sleeping within its own time limit) to see it hold."""
    import json
    import time

    from hpcbench.executors.local import LocalExecutor
    from hpcbench.jobs.records import JobResult
    from hpcbench.pipeline import plan_campaign
    from hpcbench.plan.options import RunOptions
    from hpcbench.site import load_site

    d = tmp_path / "tree" / "sleeper" / "rosenbrock" / "1"
    d.mkdir(parents=True)
    (d / "main.c").write_text("#include <petscsys.h>\nint main(int argc, char **argv)\n{\n"
                              "  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));\n  PetscCall(PetscSleep(25));\n"
                              "  PetscCall(PetscFinalize());\n  return 0;\n}\n")
    (d / "submission.json").write_text(json.dumps({"problem": "rosenbrock", "agent": "sleeper", "attempt": "1",
                                                   "entry": "main.c", "files": ["main.c"]}))
    site = load_site("local")
    opts = RunOptions(submissions=str(tmp_path / "tree"), problems="rosenbrock")
    planned = plan_campaign(tmp_path / "out", site, opts)
    job = next(s for s in planned.campaign.specs() if s.agent == "sleeper")

    class Limited(LocalExecutor):
        walltime_s = staticmethod(lambda spec: 40.0)

    t0 = time.monotonic()
    Limited(site, planned.campaign).submit([job])
    took = time.monotonic() - t0
    rec = JobResult.model_validate_json(Path(job.record_path).read_text())
    assert rec.status == "timeout" and "walltime (40 s) was reached" in rec.reason, rec.reason
    assert took < 40 + LocalExecutor.stop_grace_s + 15, took


def test_lint_prints_the_tampering_findings_too():
    import subprocess
    import sys

    exe = Path(sys.executable).parent / "hpcbench"
    src = ROOT / "tests" / "adversarial" / "clear_malloc_dump.c"
    proc = subprocess.run([str(exe), "lint", "--select", "HB4", str(src)], capture_output=True, text=True)
    assert proc.returncode == 1 and f"{src}:10:13: HB401 PetscOptionsClearValue changes hpcbench's " \
        "instrumentation option '-malloc_dump'" in proc.stdout.splitlines(), proc.stdout
