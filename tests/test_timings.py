"""Timings you can trust, through the real pipeline: every run on cores (and GPUs) of its own,
what its ranks really ran on recorded by the job wrapper, and the performance case scored
against the reference (docs/internals.md "Timings"). Locally with this machine's Open MPI; PBS
through the stand-in qsub (tests/fake_pbs/pbs_standin.py) and a STAND-IN for PALS's mpiexec
(tests/fake_pbs/pals_mpiexec.py: PALS cannot run here; it binds each rank to its entry of
--cpu-bind list: with Open MPI, so the affinity the probes record is real)."""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
from pathlib import Path

import pytest

from hpcbench.jobs.cores import parse_cpu_list
from tests.clusters import polaris_here, serve
from tests.conftest import ROOT, hpcbench

pytestmark = pytest.mark.petsc

# The rosenbrock reference, printing the CPUs it may run on and then spinning so that runs overlap.
PINNED = r"""
#include <stdio.h>
#include <string.h>
#include <time.h>
static void PrintCpusAndSpin(double seconds)
{
  char line[512];
  FILE *f = fopen("/proc/self/status", "r");
  struct timespec t0, t;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "Cpus_allowed_list:", 18)) printf("program_cpus: %s", line + 19);
  if (f) fclose(f);
  fflush(stdout);
  clock_gettime(CLOCK_REALTIME, &t0);
  do clock_gettime(CLOCK_REALTIME, &t); while ((t.tv_sec - t0.tv_sec) + 1e-9 * (t.tv_nsec - t0.tv_nsec) < seconds);
  printf("program_window: %.6f %.6f\n", t0.tv_sec + 1e-9 * t0.tv_nsec, t.tv_sec + 1e-9 * t.tv_nsec);
  fflush(stdout);
}
#include <unistd.h>
static void Meet(const char *dir, int copy, int copies)
{
  char path[1024];
  FILE *f;
  snprintf(path, sizeof path, "%s/%d", dir, copy);
  if ((f = fopen(path, "w"))) fclose(f);
  for (int i = 0; i < 2000; i++) {
    for (int k = 1; k <= copies; k++) {
      snprintf(path, sizeof path, "%s/%d", dir, k);
      if (k != copy && !access(path, F_OK)) return;
    }
    usleep(10000);
  }
}
"""


def pinned_tree(root: Path, copies: int, spin: float = 0.4, meet: Path | None = None) -> Path:
    """`meet`: a folder the programs can see (no sandbox) where each copy leaves a mark and waits
    (at most 20 s) for another copy's before it spins, so that runs the executor lets run together
    do so whatever the load (on a loaded CI machine one copy's runs once all ended before the next
    copy's build did); an executor that runs them one at a time still shows no overlap."""
    ref = ROOT / "problems" / "rosenbrock" / "reference"
    src = (ref / "main.c").read_text().replace("#include <petsctao.h>", "#include <petsctao.h>\n" + PINNED, 1)
    for k in range(1, copies + 1):
        call = f"  Meet(\"{meet}\", {k}, {copies});\n" if meet else ""
        text = re.sub(r"(  PetscCall\(PetscInitialize\([^\n]*\n)", rf"\1{call}  PrintCpusAndSpin({spin});\n", src,
                      count=1)
        d = root / "pinned" / "rosenbrock" / str(k)
        d.mkdir(parents=True)
        (d / "main.c").write_text(text)
        meta = json.loads((ref / "submission.json").read_text())
        (d / "submission.json").write_text(json.dumps({**meta, "agent": "pinned", "attempt": str(k)}))
    if meet:
        meet.mkdir(parents=True, exist_ok=True)
    return root


def timed_runs(out: Path, agent: str = "pinned") -> list[dict]:
    rows = []
    for p in (out / "records").glob(f"{agent}__*.json"):
        rec = json.loads(p.read_text())
        for r in rec["runs"]:
            if r["kind"] in ("instrumented", "timing") and r["exit_code"] == 0:
                rows.append({**r, "job": rec["job_id"]})
    return rows


def spin_window(run: dict) -> tuple[float, float]:
    """When the program itself spun (wall clock, printed by every rank; the widest). The
    driver's started_at + wall_s is not it: it also holds the launcher's start and teardown, and
    an `srun --exact` step waits there until Slurm has released the CPUs of a step that just
    ended, so two such intervals overlap while the programs never ran together (CI, stop 28)."""
    found = [tuple(map(float, m)) for m in re.findall(r"program_window: (\S+) (\S+)", run["stdout"])]
    assert found, run["stdout"]
    return min(a for a, _ in found), max(b for _, b in found)


def overlapping(rows: list[dict]) -> list[tuple[dict, dict]]:
    """Pairs of runs of different jobs whose programs spun at the same time."""
    win = [spin_window(r) for r in rows]
    return [(rows[i], rows[j]) for i, j in itertools.combinations(range(len(rows)), 2)
            if rows[i]["job"] != rows[j]["job"] and win[i][0] < win[j][1] and win[j][0] < win[i][1]]


def cpus_seen(run: dict) -> set[int]:
    return {c for a in run["affinity"] for c in parse_cpu_list(a["cpus"])}


def test_side_by_side_local_runs_are_on_cores_of_their_own(tmp_path: Path):
    """Three one-rank programs run side by side by the local executor: every run is bound to the
    core it holds (what the program printed is what the job wrapper recorded and what it was
    given), and no two runs that overlapped in time shared a core. On main they all ran on core 0."""
    out = tmp_path / "c"
    hpcbench("submit", "--site", "local", "--submissions", str(pinned_tree(tmp_path / "tree", 3)),
             "--problems", "rosenbrock", "--out", str(out))
    rows = timed_runs(out)
    assert len(rows) >= 3 * 2 * 2, rows  # two cases, instrumented and timing runs, three programs
    for r in rows:
        printed = re.search(r"program_cpus: (\S+)", r["stdout"]).group(1)
        assert r["affinity"] and r["affinity"][0]["source"] == "proc" and r["affinity"][0]["pid"] > 0
        assert r["affinity"][0]["cpus"] == printed == r["placement"]["cpus"], r["command"]
        assert "--rankfile" in r["command"]
    pairs = overlapping(rows)
    assert pairs, "no two runs overlapped in time: nothing was tested"
    assert not [(a["job"], b["job"]) for a, b in pairs if cpus_seen(a) & cpus_seen(b)]
    assert len({r["placement"]["cpus"] for r in rows}) == min(3, len(os.sched_getaffinity(0)))
    # and scoring finds no contended run (hpcbench/score/contention.py reads the same records)
    hpcbench("collect", str(out))
    from hpcbench.score.scoring import campaign_contention

    assert campaign_contention(out / "campaign.h5") == {}


def _pals_site(tmp: Path, gpus: bool) -> Path:
    """Polaris's config here (clusters.polaris_here) with the PALS stand-in as mpiexec."""
    bindir = tmp / "pals-bin"
    bindir.mkdir(exist_ok=True)
    if not (bindir / "mpiexec").exists():
        (bindir / "mpiexec").symlink_to(ROOT / "tests" / "fake_pbs" / "pals_mpiexec.py")
    site = polaris_here(tmp)
    text = site.read_text().replace('template: "mpiexec -n {ranks}"',
                                    f'template: "{bindir}/mpiexec --np {{ranks}} --ppn {{ppn}} --depth {{depth}}"\n'
                                    "  binding: pals")
    if gpus:  # the only variant: every rank gets a GPU of its own (this PETSc, as if it drove GPUs)
        text = re.sub(r"variants:\n(  - .*\n(    .*\n)*)+", "variants:\n  - name: gpu\n    petsc_dir: auto\n"
                      "    partition: debug\n    provides: [gpu]\n", text)
    site.write_text(text)
    return site


@pytest.mark.parametrize("gpus", [False, True], ids=["cpus", "gpus"])
def test_pbs_packed_runs_get_disjoint_cpu_bind_lists_and_gpus(fake_pbs, tmp_path, monkeypatch, gpus):
    """Packed on one PBS host: concurrent runs get disjoint `--cpu-bind list:` sets (the ranks'
    affinity, recorded by the probe outside the sandbox, is that list), and GPU runs distinct
    CUDA_VISIBLE_DEVICES. Before: every run `--cpu-bind depth` from core 0, all GPUs 0,1,2,3."""
    out = tmp_path / "c"
    site = _pals_site(tmp_path, gpus)
    tree = pinned_tree(tmp_path / "tree", 3, spin=0.6, meet=tmp_path / "meet")
    # Polaris has isolation: none (no bubblewrap in its image): these programs are our own
    # quick: the instrumented and timing runs are asserted, not the performance case (its own tests)
    hpcbench("submit", "--site", str(site), "--account", "P", "--submissions", str(tree), "--problems",
             "rosenbrock", "--out", str(out), "--trust-submissions", "--profile", "quick")
    ledger = json.loads((out / "scheduler" / "ledger.json").read_text())
    nodefile = tmp_path / "nodefile"
    nodefile.write_text(f"{socket.gethostname()}\n")
    monkeypatch.setenv("PBS_NODEFILE", str(nodefile))  # NCPUS: the stand-in's, as OpenPBS's MoM sets it
    serve(fake_pbs, ledger["arrays"][0]["array_id"])
    assert "done: 4" in hpcbench("wait", str(out), "--poll", "0.1", "--timeout", "60").stdout
    rows = timed_runs(out)
    for r in rows:
        lists = r["command"][r["command"].index("--cpu-bind") + 1]
        assert lists.startswith("list:") and lists[5:] == r["placement"]["cpus"], r["command"]
        assert r["affinity"] and r["affinity"][0]["source"] == "probe"
        assert cpus_seen(r) == set(parse_cpu_list(r["placement"]["cpus"]))
        if gpus:
            assert len(r["placement"]["gpus"]) == 1
            assert r["affinity"][0]["gpus"] == {"CUDA_VISIBLE_DEVICES": r["placement"]["gpus"][0]}
    assert sorted(p.name for p in (tmp_path / "meet").iterdir()) == ["1", "2", "3"]  # every copy met
    pairs = overlapping(rows)
    assert pairs, "no two runs overlapped in time: nothing was tested"
    assert not [(a["job"], b["job"]) for a, b in pairs if cpus_seen(a) & cpus_seen(b)]
    if gpus:
        assert not [(a["job"], b["job"]) for a, b in pairs if a["placement"]["gpus"] == b["placement"]["gpus"]]


def test_a_ten_times_slower_right_program_loses_performance_and_the_reference_keeps_it(tmp_path: Path):
    """Robertson at tolerances 1000 times tighter (right answers, about ten times the work)
    against the problem's par, timed side by side on the same core: at most 0.6 (before: 0.90 on
    absolute thresholds); another Rosenbrock-W scheme (ra34pw2), as fast as the reference, scores as the reference
    does (BDF at the reference's tolerances is now wrong by accuracy, issue 35); the
    reference itself, timed against par in the same rotation, is measurably slower than par
    (issue 34: before par it scored 1.0 against itself)."""
    from hpcbench.validation import performance as vp

    reports = vp.validate_performance(["robertson"], tmp_path / "v", {"tolerances-1000x-tighter", "rosw-ra34pw2"})
    (r,) = reports
    slow = next(o for o in r.outcomes if o.name == "tolerances-1000x-tighter")
    assert not slow.broken and slow.score is not None and slow.score <= 0.6, slow
    fast = next(o for o in r.outcomes if o.name == "rosw-ra34pw2")
    assert fast.accepted, fast
    assert r.against_par and r.reference_ratio is not None and r.reference_ratio >= 1.5, r.reference
    assert r.reference_score is not None and r.reference_score < 0.9, r.reference


@pytest.mark.slurm
def test_concurrent_slurm_steps_of_one_allocation_run_on_cores_of_their_own(slurm_cluster, tmp_path):
    """A packed campaign on the Slurm test cluster: each run an `srun --exact --cpu-bind=cores`
    step; the steps that overlapped in time ran on different CPUs (the ranks' own
    Cpus_allowed_list, recorded by the probe each rank ran first)."""
    import subprocess

    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, check=True).stdout
    if "task/affinity" not in config:
        pytest.fail("the running Slurm test cluster does not bind tasks (TaskPlugin is not task/affinity): it was "
                    "started by an older scripts/slurm-test-cluster.sh; stop and start it again when it is idle")
    out = tmp_path / "c"
    site = _site_variant_ci(tmp_path)
    hpcbench("submit", "--site", str(site), "--pack", "--wait", "--submissions",
             str(pinned_tree(tmp_path / "tree", 3, spin=0.6)), "--problems", "rosenbrock", "--out", str(out),
             "--profile", "quick")  # the instrumented and timing runs are asserted, not the performance case
    rows = timed_runs(out)
    assert len(rows) >= 3 * 2 * 2
    for r in rows:
        assert r["command"][0] == "srun" and "--exact" in r["command"] and "--cpu-bind=cores" in r["command"]
        assert r["affinity"] and r["affinity"][0]["source"] == "probe", r
        printed = re.search(r"program_cpus: (\S+)", r["stdout"]).group(1)
        assert cpus_seen(r) == set(parse_cpu_list(printed))
    pairs = overlapping(rows)
    assert pairs, "no two steps overlapped in time: nothing was tested"
    assert not [(a["job"], b["job"]) for a, b in pairs if cpus_seen(a) & cpus_seen(b)]


def _site_variant_ci(tmp: Path) -> Path:
    from tests.clusters import site_variant

    return site_variant(tmp, "ci-slurm-bind", **{"timing_repeats: 3": "timing_repeats: 1",
                                                   "valgrind: true": "valgrind: false"})


SNOOP = r"""
#include <dirent.h>
#include <stdio.h>
#include <string.h>
/* Looks for the reference's performance build from every folder above its own: prints what it finds. */
static void Snoop(void)
{
  char path[4096] = ".";
  for (int up = 0; up < 8; up++) {
    DIR *d;
    struct dirent *e;
    strcat(path, "/..");
    d = opendir(path);
    while (d && (e = readdir(d)))
      if (!strcmp(e->d_name, "_perf_ref") || !strncmp(e->d_name, "reference__", 11))
        printf("found: %s/%s\n", path, e->d_name);
    if (d) closedir(d);
  }
  fflush(stdout);
}
"""


def test_the_reference_beside_a_submission_is_out_of_its_sight(tmp_path: Path):
    """A submission that searches every folder above it, in its cases and in its performance
    runs (timed beside the reference), finds neither the reference's performance build nor its
    job: they are outside its sandbox. Its performance runs and the reference's are recorded."""
    ref = ROOT / "problems" / "rosenbrock" / "reference"
    src = (ref / "main.c").read_text().replace("#include <petsctao.h>", "#include <petsctao.h>\n" + SNOOP, 1)
    src = re.sub(r"(  PetscCall\(PetscInitialize\([^\n]*\n)", r"\1  Snoop();\n", src, count=1)
    d = tmp_path / "tree" / "snoop" / "rosenbrock" / "1"
    d.mkdir(parents=True)
    (d / "main.c").write_text(src)
    meta = json.loads((ref / "submission.json").read_text())
    (d / "submission.json").write_text(json.dumps({**meta, "agent": "snoop"}))
    out = tmp_path / "c"
    hpcbench("submit", "--site", "local", "--submissions", str(tmp_path / "tree"), "--problems", "rosenbrock",
             "--out", str(out))
    rec = json.loads((out / "records" / "snoop__rosenbrock__1.json").read_text())
    kinds = {r["kind"] for r in rec["runs"]}
    assert {"perf", "perf_ref"} <= kinds, kinds
    leaks = [r["stdout"] for r in rec["runs"] if r["kind"] != "perf_ref" and "found:" in r["stdout"]]
    assert not leaks, leaks[0]
    assert (out / "work" / "_perf_ref").is_dir()  # it was there, beside it, all along


def test_the_reference_is_timed_once_in_its_own_job_and_an_edited_copy_against_it(tmp_path: Path):
    """The reference's own job (and a byte-identical copy under another agent) runs the
    performance case without a second copy of the reference, its runs standing for both sides
    (ratio 1 by definition; before: the same binary twice, ~90 core-seconds of the default
    campaign), beside the problem's par. A copy that differs by one comment is another program:
    timed against the reference and par, round by round."""
    ref = ROOT / "problems" / "rosenbrock" / "reference"
    meta = json.loads((ref / "submission.json").read_text())
    src = (ref / "main.c").read_text()
    for agent, text in (("copy", src), ("edited", "/* edited */\n" + src)):
        d = tmp_path / "tree" / agent / "rosenbrock" / "1"
        d.mkdir(parents=True)
        (d / "main.c").write_text(text)
        (d / "submission.json").write_text(json.dumps({**meta, "agent": agent, "attempt": "1"}))
    out = tmp_path / "c"
    hpcbench("submit", "--site", "local", "--agent", "reference", "--submissions", str(tmp_path / "tree"),
             "--problems", "rosenbrock", "--out", str(out))
    perf = json.loads((ROOT / "problems" / "rosenbrock" / "problem.json").read_text())["performance"]
    rounds = range(perf["repeats"], perf.get("max_repeats", 9) + 1)  # more rounds while par's are noisy
    kinds = {}
    for agent in ("reference", "copy", "edited"):
        rec = json.loads((out / "records" / f"{agent}__rosenbrock__1.json").read_text())
        kinds[agent] = [r["kind"] for r in rec["runs"] if r["case"] == "perf" and r["kind"] != "null"]
        assert ("perf_same_program" in rec["extra"]) == (agent != "edited"), (agent, rec["extra"])
    # rosenbrock's par (problems/rosenbrock/par/) is timed in every job's rounds
    for agent in ("reference", "copy"):
        assert kinds[agent].count("perf") == kinds[agent].count("perf_par") in rounds, kinds[agent]
        assert "perf_ref" not in kinds[agent]
    got = kinds["edited"]
    assert got.count("perf") == got.count("perf_ref") == got.count("perf_par") in rounds, got
    hpcbench("collect", str(out))
    hpcbench("score", str(out))
    rows = {r["agent"]: r for r in json.loads(hpcbench("report", str(out), "--format", "json").stdout)["submissions"]}
    for agent in ("reference", "copy"):
        et = rows[agent]["evaluators"]["execution_time"]
        assert "x par's time" in et["rationale"] and "1.00 x the reference's time" in et["rationale"], et
    et = rows["edited"]["evaluators"]["execution_time"]
    assert et["status"] == "scored" and "interleaved rounds" in et["rationale"], et
