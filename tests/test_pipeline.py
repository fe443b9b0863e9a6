"""The verbs' pipelines called as functions (hpcbench/pipeline/), as a script or notebook
would: no CLI, nothing printed, messages through `say`, progress through the callbacks."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

import pytest

from hpcbench import pipeline
from hpcbench.plan.options import RunOptions
from hpcbench.site import load_site


class Watched(pipeline.Reporter):
    """A reporter that keeps what it is told and every progress count it is shown."""

    def __init__(self) -> None:
        self.said: list[str] = []
        self.seen: list[Counter] = []

    def say(self, msg: str) -> None:
        self.said.append(msg)

    @contextlib.contextmanager
    def running(self) -> Iterator:
        yield self.seen.append


@pytest.mark.petsc
def test_execute_as_a_function_prints_nothing_and_resumes(tmp_path, capfd):
    """pipeline.execute, the one way every driver runs a campaign, called from a script: nothing
    printed, its messages and progress to the reporter, the profile recorded in campaign.json,
    and a second call runs nothing again."""
    from hpcbench.plan import PlanRequest
    from hpcbench.problem import load_problems
    from hpcbench.profile import QUICK
    from hpcbench.submission import reference_submission

    site = load_site("local")
    b = load_problems(None, ["vec-scatter"])
    request = PlanRequest(b, [reference_submission(b["vec-scatter"].folder, "vec-scatter")])
    heard = Watched()
    got = pipeline.execute(QUICK, tmp_path / "c", site, request, pipeline.Stages(report=True), heard)
    out, err = capfd.readouterr()
    assert out == "" and err == "", (out, err)
    assert heard.said[0].startswith(f"campaign {got.campaign.root}: 1 jobs, 0 already done")
    assert heard.seen and heard.seen[-1].get("done") == 1
    assert [(s.agent, s.problem, s.gates_passed) for s in got.scores] == [("reference", "vec-scatter", True)]
    assert (got.campaign.report_dir / "report.md").read_text() == got.report_md
    assert got.campaign.profile() == QUICK
    # and `hpcbench explain C /profile` says what it measured, from the store
    from hpcbench.report.explain import explain

    shown = explain(got.campaign.h5_path, "/profile")
    assert "profile quick: valgrind off, -malloc_debug off, 1 timing run(s), no performance case" in shown, shown
    assert explain(got.campaign.h5_path, "/profile/timing_repeats").strip().endswith("1")
    again = Watched()
    pipeline.execute(QUICK, tmp_path / "c", site, request, pipeline.Stages(score=False), again)
    assert again.said == [f"campaign {got.campaign.root}: 1 jobs, 1 already done"]


@pytest.mark.petsc
def test_run_campaign_returns_its_outcome_and_prints_nothing(tmp_path, capfd):
    """The composition of run (lock, run.json, plan, jobs, collect, score, report) as a plain
    function: its outcome says what ran and that no infrastructure error is left."""
    from hpcbench.plan.options import load_options

    site = load_site("local")
    # the quick profile: what is asserted is the composition, not what the full profile measures
    opts = RunOptions(verb="run", agents=["reference"], problems="vec-scatter", site="local", profile="quick")
    out = tmp_path / "c"
    got = pipeline.run_campaign(out, site, opts)
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == "", printed
    assert got.scored and got.campaign.root == out and load_options(str(out)).problems == "vec-scatter"
    assert [(s.agent, s.problem, s.gates_passed) for s in got.scores] == [("reference", "vec-scatter", True)]
    assert not got.infrastructure_failed and got.generation_errors == [] and got.judge_errors == []
    assert got.failed_programs == [] and got.not_scored == {}
    assert (out / "report" / "report.md").read_text() == got.report_md
    # submit stops after the jobs: nothing scored, the finished job not run again
    reporter = Heard()
    again = pipeline.run_campaign(out, site, opts.model_copy(update={"verb": "submit"}), reporter=reporter)
    assert not again.scored and again.scores == [] and not again.infrastructure_failed
    assert reporter.said == [f"campaign {out}: 1 jobs, 1 already done"] and reporter.stages == ["planned"]


@pytest.mark.petsc
def test_run_campaign_keeps_an_outage_apart_as_infrastructure(openai_server, tmp_path, monkeypatch):
    """A generation an outage kept from being made is an infrastructure error in the outcome
    (retry redoes it), not a program's failure: the reference still runs and is scored. The
    provider is tests/openai_server.py, a stand-in (none is reachable from here)."""
    from tests.openai_server import Reply

    model = "openai/gpt-4o-mini"
    openai_server.default = lambda body: Reply.text("ok") if body.get("max_tokens") == 8 else Reply.server_error(503)
    monkeypatch.setenv("HPCBENCH_API_KEY", "sk-test")
    site = load_site("local")
    opts = RunOptions(verb="run", agents=[f"litellm:{model}"], problems="vec-scatter", site="local",
                      base_url=openai_server.base_url, profile="quick")
    got = pipeline.run_campaign(tmp_path / "c", site, opts)
    assert got.infrastructure_failed and [e.kind for e in got.generation_errors] == ["provider_error"]
    assert "upstream unavailable (test server)" in got.generation_errors[0].cause
    assert [(s.agent, s.gates_passed) for s in got.scores] == [("reference", True)]  # the model: no score, no 0
    assert got.failed_programs == [] and got.judge_errors == []


class Heard(pipeline.Reporter):
    """A reporter that keeps what it is told."""

    def __init__(self) -> None:
        self.said: list[str] = []
        self.stages: list[str] = []

    def say(self, msg: str) -> None:
        self.said.append(msg)

    def planned(self, planned) -> None:
        self.stages.append("planned")


@pytest.mark.petsc
def test_gate_campaign_scores_the_programs_a_sweep_takes(tmp_path):
    """A sweep's gating step as a plain function: an ordinary campaign of the given tree and the
    reference, scored; its outcome tells the programs that failed a gate (their own failure,
    not infrastructure), and the sweep takes exactly those that passed."""
    import shutil

    from hpcbench.problem import load_problems
    from hpcbench.resources import data_path
    from hpcbench.sweep.run import gated_submissions

    tree = tmp_path / "tree"
    for agent in ("sloppy-coder", "leaky-coder"):  # renamed: the samples' own names are reserved
        mine = tree / f"my-{agent}" / "vec-scatter"
        shutil.copytree(data_path("examples") / "submissions" / agent / "vec-scatter", mine)
        for meta in mine.glob("*/submission.json"):
            meta.write_text(meta.read_text().replace(f'"agent": "{agent}"', f'"agent": "my-{agent}"'))
    reporter = Heard()
    got = pipeline.gate_campaign(tmp_path / "gates", load_site("local"), [], str(tree), "vec-scatter", False, reporter)
    assert got.scored and not got.infrastructure_failed and reporter.stages == ["planned"]
    from hpcbench.plan.campaign import Campaign

    prof = Campaign(tmp_path / "gates").profile()
    assert prof.name == "gates" and prof.valgrind == "every" and prof.malloc_debug  # every gate's instrument
    assert prof.timing_repeats == 0 and prof.performance == "off"  # nothing timed: the sweep times
    agents = sorted({s.agent for s in got.scores})
    assert agents == ["my-leaky-coder", "my-sloppy-coder", "reference"], agents
    failed = {(s.agent, s.attempt) for s in got.failed_programs}
    assert failed == {(s.agent, s.attempt) for s in got.scores if not s.gates_passed}
    subs, left = gated_submissions(tmp_path / "gates", load_problems(None, ["vec-scatter"]))
    assert {(s.meta.agent, s.meta.attempt) for s in subs} == {(s.agent, s.attempt) for s in got.scores
                                                              if s.gates_passed and s.agent != "reference"}
    assert len(left) == len(failed)
