"""The verbs' pipelines called as functions (hpcbench/pipeline.py), as a script or notebook
would: no CLI, nothing printed, messages through `say`, progress through the callbacks."""

from __future__ import annotations

from collections import Counter

import pytest

from hpcbench import pipeline
from hpcbench.plan.options import RunOptions
from hpcbench.site import load_site


@pytest.mark.petsc
def test_run_pipeline_as_functions_prints_nothing(tmp_path, capfd):
    site = load_site("local")
    opts = RunOptions(agents=["reference"], problems="vec-scatter", site="local")
    said: list[str] = []
    seen: list[Counter] = []
    planned = pipeline.plan_run(tmp_path / "c", site, opts)
    pipeline.run_jobs(site, planned.campaign, planned.plan, say=said.append, progress=seen.append)
    md, scores = pipeline.collect_score_report(planned.campaign, say=said.append)
    out, err = capfd.readouterr()
    assert out == "" and err == "", (out, err)
    assert said[0].startswith(f"campaign {planned.campaign.root}: 1 jobs, 0 already done")
    assert seen and seen[-1].get("done") == 1
    assert [(s.agent, s.problem, s.gates_passed) for s in scores] == [("reference", "vec-scatter", True)]
    assert (planned.campaign.report_dir / "report.md").read_text() == md
    # a second call resumes: nothing runs again
    said.clear()
    pipeline.run_jobs(site, planned.campaign, planned.plan, say=said.append)
    assert said == [f"campaign {planned.campaign.root}: 1 jobs, 1 already done"]
