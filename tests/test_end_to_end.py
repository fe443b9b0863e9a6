"""The deterministic pipeline end to end through the CLI on real PETSc and MPI."""

import json
import re

import h5py
import pytest

from hpcbench.plan.held_out import read_draw
from hpcbench.problem import load_problems
from hpcbench.store import tables
from hpcbench.store.scorings import list_scorings, read_scoring
from tests.conftest import QUICK, copy_campaign, hpcbench

pytestmark = pytest.mark.slow


def _runnable(campaign):
    skipped = {s["problem"] for s in json.loads((campaign / "campaign.json").read_text())["skipped"]}
    # refusal-set problems have nothing to build or run: tests/ of the refusal evaluator cover them
    return {pid: b for pid, b in load_problems().items() if pid not in skipped and b.checks.expect == "solve"}


def test_gpu_problems_are_skipped_with_their_reason_not_failed(sample_campaign, sample_rows):
    skipped = {s["problem"]: s["reason"] for s in
               json.loads((sample_campaign / "campaign.json").read_text())["skipped"]}
    for pid, b in load_problems().items():
        needs = {"cuda", "kokkos"} & set(b.problem.requires)
        if needs:
            assert pid in skipped and needs.pop() in skipped[pid]
            assert not any(k[1] == pid for k in sample_rows)
    assert {"vec-scatter", "rosenbrock", "robertson", "advection1d"}.isdisjoint(skipped)


def test_every_reference_passes_every_gate_and_check(sample_campaign, sample_rows):
    problems = _runnable(sample_campaign)
    for pid in problems:
        row = sample_rows.get(("reference", pid, "1"))
        assert row is not None, f"reference of {pid} missing from the report"
        assert row["gates_passed"], f"{pid}: {row['failed_gate']}: {row['why']}"
        acc = row["evaluators"]["numerical_accuracy"]
        assert acc["status"] == "scored" and acc["score"] == 1.0, f"{pid}: {acc['rationale']}"


def test_reference_ran_every_case_at_every_rank_count(sample_campaign):
    problems = _runnable(sample_campaign)
    t = tables(sample_campaign / "campaign.h5")
    subs, runs, lv = t["submissions"], t["runs"], t["log_view"]
    for pid, b in problems.items():
        sid = int(subs[(subs.agent == "reference") & (subs.problem == pid)].sub_id.iloc[0])
        mine = runs[(runs.sub_id == sid) & (runs.kind == "instrumented") & (runs.exit_code == 0)]
        seen = set(zip(mine["case"], mine["ranks"].astype(int), strict=True))
        drawn = read_draw(sample_campaign)[1].get(pid, [])  # the held-out cases, drawn at planning
        assert drawn, pid
        want = {(c.name, r) for c in [*b.problem.cases, *drawn] for r in c.ranks}
        assert seen == want, pid
        assert len(lv[(lv.sub_id == sid) & (lv.run == 0)]) > 0


@pytest.mark.parametrize("key,gate,words", [
    (("sloppy-coder", "vec-scatter", "1"), "compilation", "VecScatterCreateToZero"),
    (("sloppy-coder", "cavity-dmstag", "1"), "compilation", "DMStagCreate2d"),
    (("leaky-coder", "vec-scatter", "1"), "memory_safety", "never freed"),
    (("leaky-coder", "vec-scatter", "2"), "execution", "segmentation fault"),
    (("leaky-coder", "robertson", "1"), "execution", "missing diagonal"),
])
def test_each_sample_flaw_is_caught_by_its_gate(sample_rows, key, gate, words):
    row = sample_rows[key]
    assert row["failed_gate"] == gate
    assert words in row["why"]
    assert row["composite"] == 0.0
    # and not by an earlier gate that should have passed
    for earlier in ("compilation", "execution", "memory_safety", "api_usage"):
        if earlier == gate:
            break
        assert row["evaluators"][earlier]["score"] == 1.0, earlier


def test_legacy_style_passes_gates(sample_rows):
    row = sample_rows[("legacy-coder", "rosenbrock", "1")]
    assert row["gates_passed"], row["why"]


def test_loose_tolerances_lose_accuracy_not_gates(sample_rows):
    row = sample_rows[("legacy-coder", "robertson", "1")]
    assert row["gates_passed"]
    acc = row["evaluators"]["numerical_accuracy"]
    assert acc["score"] < 0.9 and "y_final" in acc["rationale"]
    assert row["composite"] < sample_rows[("reference", "robertson", "1")]["composite"]


def test_a_misplaced_inclusion_keeps_the_energy_but_fails_the_mean_pressure(sample_campaign, sample_rows):
    """The mirrored inclusion has the reference's energy by symmetry: only the
    pressure checks can tell, and they must."""
    row = sample_rows[("sloppy-coder", "darcy-dmplex", "1")]
    assert row["gates_passed"], row["why"]
    acc = row["evaluators"]["numerical_accuracy"]
    first = min(list_scorings(sample_campaign).items(), key=lambda kv: kv[1])[0]
    row = read_scoring(sample_campaign, first, evidence=True).row("sloppy-coder", "darcy-dmplex", "1")
    details = row["evaluators"]["numerical_accuracy"]["evidence"]["details"]
    by_check = {}
    for d in details:
        by_check.setdefault(d["check"], []).append(d["score"])
    assert min(by_check["compare:energy"]) == 1.0
    assert max(by_check["compare:inclusion_mean"]) == 0.0
    assert acc["score"] < 0.8
    assert row["composite"] < sample_rows[("reference", "darcy-dmplex", "1")]["composite"] - 15


def test_campaign_provenance_and_reports(sample_campaign):
    with h5py.File(sample_campaign / "campaign.h5") as f:
        assert f.attrs["petsc_version"].startswith("3.")
        assert f.attrs["mpi"]
        assert "scores" not in f  # scorings live beside the campaign, never in it
    assert len(list_scorings(sample_campaign)) == 1
    csv = hpcbench("report", str(sample_campaign), "--format", "csv").stdout
    assert csv.splitlines()[0].startswith("agent,problem,attempt")
    rows = json.loads(hpcbench("report", str(sample_campaign), "--format", "json").stdout)["submissions"]
    for key in ("agent", "problem", "attempt", "gates_passed", "failed_gate", "composite", "tier",
                "categories", "build_s", "run_s"):
        assert key in rows[0]


def test_rerun_is_resumable_and_rescoring_keeps_old_scores(sample_campaign, tmp_path):
    """A copy of the campaign (a campaign folder moved or copied keeps its records: its specs'
    own paths are compared relative to it) resumed: nothing runs again."""
    sample_campaign = copy_campaign(sample_campaign, tmp_path / "c")
    out = hpcbench("submit", "--profile", str(QUICK), "--agent", "reference", "--agent", "samples", "--out",
                   str(sample_campaign))
    m = re.search(r"(\d+) jobs, (\d+) already done", out.stderr)
    assert m and int(m.group(1)) > 0 and m.group(1) == m.group(2), out.stderr
    hpcbench("collect", str(sample_campaign))
    hpcbench("score", str(sample_campaign), "--scoring-id", "second")
    assert len(list_scorings(sample_campaign)) == 2 and "second" in list_scorings(sample_campaign)
    again = hpcbench("score", str(sample_campaign), "--scoring-id", "second", check=False)
    assert again.returncode != 0 and "never overwritten" in again.stderr


def test_gamg_without_the_rigid_body_modes_is_right_but_not_scalable(sample_campaign, sample_rows):
    """textbook-coder's beam: CG + GAMG that was never told the near-null space. Its answers
    are right; only the iteration checks (37-47 at nu = 0.3, 90 at 0.45 against the task's 30
    and 60) catch it, which costs it accuracy, not its gates."""
    row = sample_rows[("textbook-coder", "elasticity-gamg", "1")]
    assert row["gates_passed"], row["why"]
    first = min(list_scorings(sample_campaign).items(), key=lambda kv: kv[1])[0]
    full = read_scoring(sample_campaign, first, evidence=True).row("textbook-coder", "elasticity-gamg", "1")
    by_check: dict[str, list[float]] = {}
    for d in full["evaluators"]["numerical_accuracy"]["evidence"]["details"]:
        by_check.setdefault(d["check"], []).append(d["score"])
    assert min(by_check["compare:tip_uz"]) == 1.0 and min(by_check["compare:compliance"]) == 1.0
    assert any(min(v) < 1.0 for k, v in by_check.items() if "Krylov iterations" in k), by_check
    assert row["composite"] < sample_rows[("reference", "elasticity-gamg", "1")]["composite"] - 5


def test_clipping_the_free_membrane_fails_the_obstacle_problem(sample_rows):
    """textbook-coder's membrane: solved without the constraint, then clipped to the dome."""
    row = sample_rows[("textbook-coder", "obstacle-vi", "1")]
    assert row["gates_passed"], row["why"]
    acc = row["evaluators"]["numerical_accuracy"]
    assert acc["score"] < 0.3 and "u_line" in acc["rationale"]
    assert row["composite"] < sample_rows[("reference", "obstacle-vi", "1")]["composite"] - 15


def test_the_petsc4py_sample_leaves_a_vec_to_the_collector_and_the_python_reference_is_scored_alike(sample_rows):
    """petsc4py-coder's vec-scatter (docs/python.md): right answers, one Vec never destroyed, which
    petsc4py collects before -malloc_dump looks: the memory gate names it from the source. The
    Python reference beside it is scored on the same library evaluators as the C reference, so
    neither composite leaves them out."""
    row = sample_rows[("petsc4py-coder", "vec-scatter", "1")]
    assert row["failed_gate"] == "memory_safety" and "x0" in row["why"] and "garbage collector" in row["why"], row
    py = sample_rows[("reference-python", "vec-scatter", "1")]
    ref = sample_rows[("reference", "vec-scatter", "1")]
    assert py["gates_passed"], py["why"]
    assert "petsc4py.init(sys.argv)" in py["evaluators"]["api_usage"]["rationale"]
    for name in ("error_handling", "parallel_awareness", "public_api"):
        assert py["evaluators"][name]["status"] == "scored", (name, py["evaluators"][name])
        assert ref["evaluators"][name]["status"] == "scored", (name, ref["evaluators"][name])
    assert py["categories"]["library"] is not None and ref["categories"]["library"] is not None
