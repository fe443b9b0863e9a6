"""The bundled petsc4py references (problems/<id>/reference-python, agent `reference-python`):
loaded as any submission and never as the C reference; through the real pipeline (the shared
sample campaign, quick profile) each passes every gate and every hidden check at every case,
published and held out, at every rank count its problem runs (1 and 2 for poisson3d-mg), and
the report sets its times beside the C reference's."""

from __future__ import annotations

import json
import shutil

import pytest

from hpcbench.agents.dir_agent import PythonReferenceAgent, reserved_agent_names
from hpcbench.plan.held_out import read_draw
from hpcbench.problem import load_problems
from hpcbench.store import tables
from hpcbench.submission import PYTHON_REFERENCE_AGENT, Rejected, load_tree
from tests.conftest import hpcbench

WITH_PYTHON = ("poisson3d-mg", "robertson", "rosenbrock", "vec-scatter")


def test_the_python_references_load_for_the_problems_that_accept_python():
    bundles = load_problems()
    ok, bad = PythonReferenceAgent(bundles).load()
    assert not bad, bad
    assert sorted(s.meta.problem for s in ok) == list(WITH_PYTHON)
    for s in ok:
        assert s.meta.agent == PYTHON_REFERENCE_AGENT and s.meta.entry == "main.py", s.meta
        assert "python" in bundles[s.meta.problem].problem.languages
    # every problem with a Python reference is one that accepts Python, and the reverse for these four
    assert {p for p, b in bundles.items() if (b.folder / PYTHON_REFERENCE_AGENT).is_dir()} == set(WITH_PYTHON)


def test_a_user_tree_cannot_pose_as_the_python_reference(tmp_path):
    assert PYTHON_REFERENCE_AGENT in reserved_agent_names()
    bundles = load_problems()
    src = bundles["rosenbrock"].folder / PYTHON_REFERENCE_AGENT
    dest = tmp_path / PYTHON_REFERENCE_AGENT / "rosenbrock" / "1"
    shutil.copytree(src, dest)
    ok, bad = load_tree(tmp_path, set(bundles), reserved_agent_names(), {p: b.problem for p, b in bundles.items()})
    assert not ok and len(bad) == 1 and isinstance(bad[0], Rejected), (ok, bad)
    assert PYTHON_REFERENCE_AGENT in str(bad[0]), bad[0]


@pytest.mark.slow
@pytest.mark.parametrize("pid", WITH_PYTHON)
def test_each_python_reference_passes_every_gate_and_check_at_every_case(sample_campaign, sample_rows, pid):
    row = sample_rows[(PYTHON_REFERENCE_AGENT, pid, "1")]
    assert row["gates_passed"], f"{pid}: {row['failed_gate']}: {row['why']}"
    assert row["stage"] == "passed checks", (pid, row["stage"], row["stop_reason"])
    acc = row["evaluators"]["numerical_accuracy"]
    assert acc["status"] == "scored" and acc["score"] == 1.0, f"{pid}: {acc['rationale']}"
    # every published and held-out case at every rank count, as the C reference ran them
    b = load_problems()[pid]
    t = tables(sample_campaign / "campaign.h5")
    subs, runs = t["submissions"], t["runs"]
    sid = int(subs[(subs.agent == PYTHON_REFERENCE_AGENT) & (subs.problem == pid)].sub_id.iloc[0])
    mine = runs[(runs.sub_id == sid) & (runs.kind == "instrumented") & (runs.exit_code == 0)]
    seen = set(zip(mine["case"], mine["ranks"].astype(int), strict=True))
    drawn = read_draw(sample_campaign)[1].get(pid, [])
    want = {(c.name, r) for c in [*b.problem.cases, *drawn] for r in c.ranks}
    assert drawn and seen == want, (pid, seen, want)
    if pid == "poisson3d-mg":
        assert {1, 2} <= {r for _, r in seen}


@pytest.mark.slow
def test_the_report_sets_the_python_references_beside_the_c_ones(sample_campaign, sample_rows):
    md = hpcbench("report", str(sample_campaign), "--format", "md").stdout
    part = md.split("## C and Python references", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in part.splitlines() if ln.startswith("| ")]
    assert [ln.split(" | ")[0].removeprefix("| ") for ln in lines[1:]] == list(WITH_PYTHON), part
    for ln in lines[1:]:
        assert ln.rstrip(" |").endswith("passed checks"), ln
    # the quick profile runs no performance case: the table says why there is no ratio
    assert "No performance ratio" in part, part
    html = hpcbench("report", str(sample_campaign), "--format", "html").stdout
    assert "C and Python references" in html and "id='languages'" in html
    data = json.loads(hpcbench("report", str(sample_campaign), "--format", "json").stdout)
    assert {r["problem"] for r in data["submissions"] if r["agent"] == PYTHON_REFERENCE_AGENT} == set(WITH_PYTHON)
