"""What the graded program controls at run time, attacked through the real pipeline: one
campaign (`hpcbench run --submissions`, bubblewrap, PETSc, Open MPI, valgrind) of the
programs in tests/adversarial/, each the honest Rosenbrock solver plus one trick.

Each trick must end in a failed gate, a failed check or a flagged finding (or, for
submission arguments, a refused input), with nothing from outside its own folders in the
store, while the reference still passes everything. `BEFORE` says what each trick got on
main cf18e6d, before the harness verified its instruments (measured with the same tree and
site, `python -m tests.adversarial.tree`; docs/security.md has the table): every one scored
100 GOLD except as noted.

Every gate is evaluated on its own here (a failed gate stops scoring, so the report shows
only the first): the runtime catch is asserted separately from the source scan, and a trick
the runtime cannot see says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from hpcbench.jobs.sandbox import bwrap_sizes_tmpfs, bwrap_works
from hpcbench.jobs.valgrind import valgrind_path
from tests.adversarial.tree import CANARY, plant_decoys, tricks, write_tree
from tests.conftest import profile_file

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not bwrap_works()[0], reason=f"bubblewrap unusable here: {bwrap_works()[1]}"),
              pytest.mark.skipif(valgrind_path() is None, reason="valgrind is not installed")]

KEYS = {"HPCBENCH_JUDGE_API_KEY": "canary-judge-adv-51b2", "OPENAI_API_KEY": "canary-openai-adv-0c9e"}


@dataclass(frozen=True)
class Trick:
    before: str  # what it got on main cf18e6d
    runtime: tuple[str, str] | None  # (evaluator, words of its rationale) that the run itself catches
    scan: tuple[str, ...] = ()  # harness-tampering codes the API-usage gate fails it with


ANSWERS = ("numerical_accuracy", "answers differ between runs")
DISABLED = ("memory_safety", "instrumentation disabled")
DUMP = ("memory_safety", "-malloc_dump:")
VALGRIND = ("memory_safety", "bytes lost from the submission's code")
REFUSED = ("compilation", "refused before running")
OBSERVED = ("memory_safety", "behaves differently when observed")
RAW = ("memory_safety", "taken by the program's own code were never freed")
# Where the kernel holds the disk limit (jobs/disk_cap.py) a run's log folder is read-only but for
# the files the harness made there, bound one by one: a trick that removes, replaces or adds a file
# there fails at it (EROFS), its run is clean of it, and the scan is what fails it (or valgrind's
# report, left in place, shows the leak it hid). Measured: fifo_logs and symlink_logs clean runs,
# valgrind_xml_remove "valgrind: 8192 bytes lost from the submission's code"; the rest as before.
SHUT = bwrap_sizes_tmpfs()

TRICKS: dict[str, Trick] = {
    "cache_in_run_folder": Trick("100 GOLD, execution time 0.003 s (timing runs printed the cached answer)",
                                 ANSWERS, ("HB402",)),
    "cache_in_home": Trick("100 GOLD, 0.002 s (the guess of the timing runs was never checked)", ANSWERS, ("HB402",)),
    "cache_in_logs": Trick("100 GOLD, 0.000 s", ANSWERS, ("HB402", "HB408")),
    "fast_garbage": Trick("100 GOLD, 0.000 s", ANSWERS, ("HB402",)),
    "fast_garbage_allocator": Trick("100 GOLD, 0.000 s", ANSWERS, ("HB402",)),
    "valgrind_garbage": Trick("100 GOLD (the valgrind run's answers were never checked)", ANSWERS,
                              ("HB405", "HB407")),
    "petscrc_slow_null": Trick("100 GOLD, 0.000 s (null runs slept 4 s)", DISABLED, ("HB401", "HB408")),
    "home_petscrc": Trick("100 GOLD, 0.436 s (the sandbox's /tmp was already private per run)", DISABLED,
                          ("HB401", "HB408")),
    "clear_malloc_dump": Trick("100 GOLD, leak unseen", DISABLED, ("HB401",)),
    "clear_malloc_hidden_name": Trick("100 GOLD, leak unseen", DISABLED),
    "malloc_dump_elsewhere": Trick("100 GOLD, leak unseen", DISABLED, ("HB401",)),
    "prefix_args": Trick("100 GOLD, leak unseen, every instrument off", DISABLED),
    "prefix_options_file": Trick("100 GOLD, leak unseen, every instrument off", DISABLED),
    "close_stdout": Trick("100 GOLD, leak unseen", DUMP, ("HB401", "HB403")),
    "dup2_stdout": Trick("100 GOLD, leak unseen", DUMP, ("HB403",)),
    "freopen_stdout": Trick("100 GOLD, leak unseen", DUMP, ("HB403",)),
    "line_directive": Trick("100 GOLD, valgrind's leak attributed to PETSc", VALGRIND, ("HB404",)),
    "mpi_op_leak": Trick("100 GOLD, valgrind's leak taken for MPI's", VALGRIND),
    "valgrind_detect_argv": Trick("100 GOLD (the valgrind run had no -log_view)", VALGRIND, ("HB402",)),
    "valgrind_detect_argc": Trick("100 GOLD (the valgrind run had fewer arguments)", VALGRIND),
    "valgrind_detect_env": Trick("100 GOLD; the runtime cannot hide valgrind's LD_PRELOAD: the scan catches it",
                                 None, ("HB405", "HB407")),
    "leak_without_debug_malloc": Trick("100 GOLD; a reachable leak outside the checked run: the scan catches it",
                                       None, ("HB402",)),
    "valgrind_xml_remove": Trick("100 GOLD, no report read as a clean one", VALGRIND if SHUT else DISABLED,
                                 ("HB405", "HB408")),
    "valgrind_xml_forge": Trick("100 GOLD, the program's clean report read", DISABLED, ("HB405", "HB408")),
    "valgrind_xml_truncate": Trick("100 GOLD, the cut report read as clean", DISABLED, ("HB405", "HB407")),
    "symlink_logs": Trick("memory gate failed, but another campaign's -log_view and another submission's "
                          "valgrind report (the canary) were stored in campaign.h5", None if SHUT else DISABLED,
                          ("HB402", "HB407", "HB408")),
    "fifo_logs": Trick("the job driver blocked for ever on the FIFO; `run` never ended", None if SHUT else DISABLED,
                       ("HB402", "HB408")),
    "huge_xml": Trick("a 42.9 MB record from a 50 MB XML parsed whole by the driver", DISABLED, ("HB402", "HB408")),
    "replace_malloc_dump": Trick("100 GOLD, memory gate passed at confidence 1.0 (outside review, 5379f62)", REFUSED),
    "replace_mpi_wtime": Trick("not tried before; the same door as replace_malloc_dump, in MPI", REFUSED),
    "interior_pointer_leak": Trick("100 GOLD: valgrind's \"possibly lost\" was not asked for (outside review, "
                                   "5379f62)", VALGRIND),
    "detect_in_hpp": Trick("100 GOLD: the scans read .c and .h only (outside review, 5379f62)", None,
                           ("HB405", "HB407")),
    # Behaving differently when watched (tests/test_watched_runs.py has their controls): not tried on
    # cf18e6d; "before" is their records scored with the memory gate as it was before the runs'
    # counts were compared (6889ecc's parent): every other gate and check passed.
    "watched_extra_vec": Trick("every gate passed: a vector created only under valgrind's allocator, unseen",
                               OBSERVED),
    "watched_cpu_skip_destroy": Trick("memory gate failed on valgrind's 16 bytes lost; the vector left "
                                      "undestroyed when slow was not named", OBSERVED),
    "unwatched_leak": Trick("every gate passed: a vector leaked in every unwatched run, unseen", OBSERVED),
    # not tried on cf18e6d: on 7fb6608 (before the malloc recorder) every gate passed
    "unwatched_raw_leak": Trick("every gate passed: 64 KiB taken with malloc leaked in every run but valgrind's",
                                RAW),
    "inode_bomb": Trick("91.8 GOLD: 187,503 folders and links, 737 MB under a 256 MB disk limit, unrecorded",
                        ("execution", "inode limit 5000")),
}


def _site(path: Path) -> Path:
    path.write_text(json.dumps({
        "name": "adversarial", "scheduler": "local", "isolation": "bwrap",
        "launcher": {"template": "mpiexec -n {ranks}", "oversubscribe_flag": "--oversubscribe"},
        "variants": [{"name": "cpu", "petsc_dir": "auto"}],
        "limits": {"cpu_s": 600, "memory_mb": 4096, "file_size_mb": 256, "disk_mb": 256, "inodes": 5000,
                   "processes": 256, "output_bytes": 1 << 20, "flood_bytes": 64 << 20},
        "timing_repeats": 2, "valgrind": True}))
    return path


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    from hpcbench.score.scoring import contexts
    from hpcbench.store import read_campaign

    base = tmp_path_factory.mktemp("adversarial")
    assert set(TRICKS) == set(tricks()), "every program in tests/adversarial has its row here"
    write_tree(base / "tree", plant_decoys(base / "decoys"))
    out = base / "out"
    exe = Path(sys.executable).parent / "hpcbench"
    # every instrument (valgrind, -malloc_debug, a timed run and its null runs), but not the
    # performance case: no trick here is about it
    watched = profile_file("watched", valgrind="every", malloc_debug=True, timing_repeats=1)
    proc = subprocess.run([str(exe), "run", "--profile", str(watched), "--agent", "reference", "--submissions",
                           str(base / "tree"),
                           "--problems", "rosenbrock", "--site", str(_site(base / "site.json")), "--out", str(out)],
                          capture_output=True, text=True, env={**os.environ, **KEYS}, timeout=3600)
    (base / "run.log").write_text(f"{proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    assert (out / "campaign.h5").is_file(), proc.stderr[-3000:]
    stored = read_campaign(out / "campaign.h5")
    return out, {s.meta.agent: (s, ctx) for s, ctx in contexts(stored)}


def _evaluate(ctx, name: str):
    from hpcbench.evaluators.base import all_evaluators

    return next(e for e in all_evaluators() if e.name == name).evaluate(ctx)


def _agent(trick: str) -> str:
    return f"adv-{trick.replace('_', '-')}"


def test_the_reference_still_passes_everything(campaign):
    _, subs = campaign
    _, ctx = subs["reference"]
    for gate in ("compilation", "execution", "memory_safety", "api_usage"):
        res = _evaluate(ctx, gate)
        assert res.passed, (gate, res.rationale)
    assert _evaluate(ctx, "numerical_accuracy").score == 1.0
    assert all(c.found == c.expected and not c.problem for r in ctx.record.runs for c in r.instruments)
    assert "instruments unverified" not in _evaluate(ctx, "memory_safety").rationale


@pytest.mark.parametrize("trick", sorted(TRICKS))
def test_each_trick_ends_in_a_failed_gate_check_or_finding(campaign, trick):
    out, subs = campaign
    want = TRICKS[trick]
    if _agent(trick) not in subs:  # refused at planning (the submission-argument allow-list): a refused input
        rejected = json.loads((out / "campaign.json").read_text()).get("rejected", [])
        assert trick == "prefix_args" and any(_agent(trick) in json.dumps(r) for r in rejected), rejected
        return
    s, ctx = subs[_agent(trick)]
    assert s.record.build is not None and (s.record.build.exit_code == 0) == (want.runtime != REFUSED), s.record.build
    if want.runtime is not None:
        name, words = want.runtime
        res = _evaluate(ctx, name)
        assert res.score == 0.0 and words in res.rationale, (name, res.rationale)
    api = _evaluate(ctx, "api_usage")
    codes = {line.split(": ")[1].split()[0] for line in api.evidence.get("harness_tampering", [])}
    assert set(want.scan) <= codes, codes
    assert (not api.passed) == bool(want.scan), api.rationale


def test_nothing_from_outside_its_own_folders_reaches_the_store(campaign):
    out, subs = campaign
    stored = "".join(s.record.model_dump_json() for s, _ in subs.values() if s.record is not None)
    assert CANARY not in stored
    for value in KEYS.values():
        assert value not in stored
    shadow = Path("/etc/shadow").read_text().split(":")[1] if os.access("/etc/shadow", os.R_OK) else ""
    if len(shadow) > 8:
        assert shadow not in stored
    for name in ("huge_xml", "symlink_logs"):  # and nothing grows without bound
        assert len(subs[_agent(name)][0].record.model_dump_json()) < 1 << 20
    assert not any((out / "work").glob("*/runs")), "run folders are removed with the job's work"


def test_the_null_program_runs_untouched_by_what_a_program_left(campaign):
    _, subs = campaign
    ref_nulls = [r.wall_s for r in subs["reference"][1].record.runs if r.kind == "null"]
    for trick in ("petscrc_slow_null", "home_petscrc"):
        nulls = [r.wall_s for r in subs[_agent(trick)][1].record.runs if r.kind == "null"]
        assert nulls and max(nulls) < max(ref_nulls) + 3.0, (trick, nulls, ref_nulls)  # no 4 s -petsc_sleep


def test_the_valgrind_run_has_the_timing_runs_options(campaign):
    _, subs = campaign
    runs = subs["reference"][1].record.runs
    vg = next(r for r in runs if r.kind == "valgrind")  # at a case drawn at planning
    # the instrumented run of that case (held-out cases have no timing run): one argv for all now
    timing = next(r for r in runs if r.kind == "instrumented" and r.case == vg.case and r.ranks == vg.ranks)
    # The launcher's part differs (valgrind's wrapper sits between it and the program): from the
    # program on, the argv must be the same, so valgrind is not recognisable by its options.
    app = next(a for a in timing.command if a.endswith("/build/app"))
    assert vg.command.count(app) == 1
    assert vg.command[vg.command.index(app):] == timing.command[timing.command.index(app):]
